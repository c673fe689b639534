"""The numba plumbing: how the project's kernels are declared, compiled, typed and cached.

- `decorators`: `inner` (a kernel only kernels call, compiled without numba's CPython wrapper),
  `inlined` (an inner kernel LLVM inlines into its callers) and `KernelCall`;
- `dispatch`: `FunctionTable`, a rule's variants as a table of functions chosen in a kernel by a
  token (`Static`, `Token`, `fixed`) at compile time;
- `typeof`: the numba type of a bundle passed from Python, looked up by its structure;
- `codegen`: `DeferredLibrary`, machine code emitted once per kernel Python calls;
- `stamps`: each cached kernel's stamp, the digest of the sources it can inline (`Sources`);
- `cache`: numba's on-disk cache folder, its locator and its pruning;
- `locks`: `CompileLocks`, one compile per kernel and signature across processes.

`engine/__init__.py` imports this package first: the cache is set before any kernel is defined.
"""

from . import cache  # noqa: F401  (first: numba's cache directory is set before any kernel)
from . import typeof  # noqa: F401  (bundles passed from Python typed by a lookup of their structure)
