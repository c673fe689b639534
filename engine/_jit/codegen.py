"""Machine code emitted once per kernel Python calls, not once per kernel compiled.

numba builds every compiled function into a code library and *finalises* it at once: it links in
the LLVM modules of the functions it calls, runs LLVM's module optimisation over the whole, and
emits machine code. A kernel calling another therefore optimises and emits that callee's code
again inside its own, so a call tree of depth d has its leaves optimised and emitted about d
times. Most of the project's kernels (the beam's stages, move generation, the features) are only
ever called from other kernels (`engine._jit.decorators.inner`), and their own machine code is
never run. `DeferredLibrary` finalises by linking alone and optimises and emits when code is first
asked for, so such a kernel is optimised once, inside each kernel Python calls.

`install` runs when the engine is imported (before any kernel compiles or loads); it leaves numba
as it is when its code library is not the one this was written against. The figures:
docs/performance.md, 'Machine code once, in the kernels Python calls'.
"""

from __future__ import annotations

import contextvars

import llvmlite.binding as ll
from numba.core import caching
from numba.core import codegen as _cg
from numba.core.compiler_lock import global_compiler_lock, require_global_compiler_lock
from numba.core.environment import lookup_environment

#: the cache entries' kind for a library saved as its linkable module
KIND = "deferred"
#: the prefix of a function's environment global (numba's `get_env_name`)
_ENV = "_ZN08NumbaEnv"
#: the prefix of numba's dynamic globals (a library holding one is never cached)
_DYNAMIC = "numba.dynamic.globals"
#: True while numba saves a kernel of the project to its cache (`_save_overload`)
_PROJECT_SAVE = contextvars.ContextVar("project_save", default=False)


def _dynamic_globals(module) -> list[str]:
    return [gv.name for gv in module.global_variables if gv.name.startswith(_DYNAMIC)]


class DeferredLibrary(_cg.JITCodeLibrary):
    """numba's JIT code library, with its module optimisation and code emission left until code is
    asked for.

    It finalises by linking alone; the module optimisation and the machine code come when code is
    first asked for: the address of a function defined in it (numba asks for a kernel's CPython
    wrapper as it compiles it, so a kernel Python calls is emitted then), its assembly, or its
    object code for the cache. A kernel without the wrapper is never emitted on its own: the
    kernels Python calls link its (function-optimised) module and optimise it once, with theirs.

    Caching: a library never emitted is saved in numba's cache as its linkable module (kind
    ``deferred``), which only a process that installed this class can load. So it is written only
    to the project's cache folders (`engine._jit.cache.ProjectLocator`, whose folder names carry
    `engine._jit.stamps.CODE_FORMAT`, so an older checkout sharing the machine's cache never meets
    one); anything else numba caches is emitted first and saved as numba saves it."""

    #: linked but not yet optimised as a module nor emitted
    _deferred = False

    def finalize(self):
        require_global_compiler_lock()
        self._codegen._check_llvm_bugs()
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:
            if library not in seen:
                self._reload_init.update(library._reload_init)
                seen.add(library)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._dynamic_globals = _dynamic_globals(self._final_module)
        self._finalized = True
        self._deferred = True

    def emit(self) -> None:
        """Optimise the linked module and emit its machine code (what numba's `finalize` does after
        linking); nothing when done already."""
        self._ensure_finalized()
        if not self._deferred:
            return
        with global_compiler_lock:
            if not self._deferred:
                return
            self._deferred = False
            self._optimize_final_module()
            self._final_module.verify()
            self._dynamic_globals = []
            self._finalize_final_module()
            # the environments of the callees linked in (an objmode block reads its function's):
            # numba sets a function's as it emits it, which a callee not emitted never was
            for gv in self._final_module.global_variables:
                if gv.name.startswith(_ENV):
                    env = lookup_environment(gv.name)
                    if env is not None:
                        self._codegen.set_env(gv.name, env)

    def get_pointer_to_function(self, name):
        self._ensure_finalized()
        if self._deferred:
            try:
                defined = not self._final_module.get_function(name).is_declaration
            except NameError:
                defined = False
            if not defined:
                return 0  # as numba answers for a symbol it does not define, without emitting
            self.emit()
        return super().get_pointer_to_function(name)

    def get_asm_str(self):
        self.emit()
        return super().get_asm_str()

    def serialize_using_bitcode(self):
        self.emit()
        return super().serialize_using_bitcode()

    def serialize_using_object_code(self):
        self._ensure_finalized()
        if self._deferred and _PROJECT_SAVE.get():
            return (self.name, KIND, self._get_module_for_linking().as_bitcode())
        self.emit()
        return super().serialize_using_object_code()

    def _get_compiled_object(self):
        self.emit()
        return super()._get_compiled_object()

    @classmethod
    def _unserialize(cls, codegen, state):
        name, kind, data = state
        if kind != KIND:
            return super()._unserialize(codegen, state)
        self = codegen.create_library(name)
        self._final_module = self._shared_module = ll.parse_bitcode(data)
        self._dynamic_globals = _dynamic_globals(self._final_module)
        self._finalized = True
        self._deferred = True
        return self


def _set_env(set_env):
    def wrapped(self, env_name, env):
        """numba's, except for a library not emitted: its environment is not in the engine, and no
        Python call reaches its code."""
        if self._engine.get_global_value_address(env_name) == 0:
            return
        set_env(self, env_name, env)

    wrapped._deferred = True
    return wrapped


def _save_overload(save, is_project):
    def wrapped(cache, sig, data):
        token = _PROJECT_SAVE.set(bool(is_project(cache)))
        try:
            return save(cache, sig, data)
        finally:
            _PROJECT_SAVE.reset(token)

    wrapped._deferred = True
    return wrapped


def install(is_project) -> bool:
    """Make numba's JIT build `DeferredLibrary`; ``is_project(cache)`` tells whether a numba cache
    is one of the project's. False (and numba untouched) when numba's JIT codegen is not built on
    the library this subclasses."""
    codegen = _cg.JITCPUCodegen
    if codegen._library_class is DeferredLibrary:
        return True
    needed = ("_optimize_final_module", "_finalize_final_module", "_get_module_for_linking", "_unserialize")
    if codegen._library_class is not _cg.JITCodeLibrary or not all(hasattr(_cg.JITCodeLibrary, n) for n in needed):
        return False
    codegen._library_class = DeferredLibrary
    if not getattr(codegen.set_env, "_deferred", False):
        codegen.set_env = _set_env(codegen.set_env)
    if not getattr(caching.Cache.save_overload, "_deferred", False):
        caching.Cache.save_overload = _save_overload(caching.Cache.save_overload, is_project)
    return True
