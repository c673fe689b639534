"""Kernels that other kernels call: compiled without numba's CPython wrapper.

numba compiles, beside every kernel, a wrapper that lets Python call it: for a kernel taking the
project's bundles (a beam's state of 28 arrays, its settings, the rules) it costs about as much to
compile as the kernel, and a kernel called only from kernels never uses it. `inner` (written as
``njit`` is: ``@inner``, ``@inner(parallel=True)``) compiles a kernel without it.

A call from Python still works, through a twin compiled with the wrapper (`InnerDispatcher`), and
an integer constant argument compiles an inner kernel for its plain type, not once per value
(`InnerDispatcher.get_call_template`). `inlined` is an inner kernel that LLVM inlines into every
kernel calling it, for the small kernels on a search's inner path; `KernelCall` is a kernel at the
argument types a search calls it with. The figures: docs/performance.md, 'The numba cache' and
'Small kernels inlined by LLVM'.
"""

from __future__ import annotations

import contextlib
import functools
import types
from typing import NamedTuple

from numba import njit, typeof
from numba.core import caching
from numba.core.cpu import CPUTargetOptions
from numba.core.registry import CPUDispatcher
from numba.core.types import IntegerLiteral

#: the suffix of the qualified name of a kernel's Python-callable twin (its cache entries' name)
TWIN_SUFFIX = "_from_python"


class InnerDispatcher(CPUDispatcher):
    """A kernel compiled without the CPython wrapper (`inner`); calls from Python go to its twin."""

    def __call__(self, *args, **kwargs):
        twin = self.__dict__.get("_python_twin")
        if twin is None:
            twin = self._python_twin = _twin(self)
        return twin(*args, **kwargs)

    def get_call_template(self, args, kws):
        """numba's, with integer constants taken as their plain type. An integer constant in a
        calling kernel reaches numba typed as its value (``Literal[int](0)``), and numba would
        compile the callee afresh for each such value: ``place_nodes(0, n, ...)`` and
        ``place_nodes(c * n // chunks, ...)`` two compiles of one kernel, and the evaluators'
        `term`, called with its slot's number, one per slot. A boolean constant stays a
        compile-time value, as kernels use it to choose code (``search(..., store=True)``)."""
        args = tuple(_plain(a) for a in args)
        kws = {k: _plain(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def _plain(t):
    return t.literal_type if isinstance(t, IntegerLiteral) else t


def _twin(kernel: InnerDispatcher):
    f = kernel.py_func
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    functools.update_wrapper(g, f)
    g.__qualname__ = f.__qualname__ + TWIN_SUFFIX
    del g.__wrapped__
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("no_cpython_wrapper", "nopython")}
    twin = njit(cache=True, **options)(g)
    if isinstance(kernel, InlinedDispatcher):
        twin.__class__ = _InlinedTwin
    return twin


class KernelCall(NamedTuple):
    """A kernel and arguments of the types another kernel calls it with, so that a process can
    compile (or load) that one signature on its own, ahead of the caller: another process then
    finds it in the cache (`solver.Policy.kernel_parts`). Python ints stand for any integer (an
    inner kernel takes integer constants as their plain type), Python bools for booleans."""

    kernel: object
    args: tuple

    def signature(self) -> tuple:
        """The argument types the kernel is compiled for."""
        return tuple(_plain(typeof(a)) for a in self.args)

    def compile(self) -> None:
        """Compile the kernel for `signature`, or load it from the cache."""
        self.kernel.compile(self.signature())

    def cached(self) -> bool:
        """Whether this process holds the kernel at `signature` or numba's on-disk cache does (its
        index is read, nothing is loaded)."""
        sig = self.signature()
        if sig in self.kernel.overloads:
            return True
        cache = self.kernel._cache
        if not isinstance(cache, caching.Cache):
            return False
        with contextlib.suppress(OSError):
            return cache._index_key(sig, self.kernel.targetctx.codegen()) in cache._cache_file._load_index()
        return False


class _PlainReturns:
    """A dispatcher refusing a kernel that returns anything reference-counted (`inlined`)."""

    def add_overload(self, cres):
        ret = cres.signature.return_type
        if self.targetctx.data_model_manager[ret].contains_nrt_meminfo():
            name = self.py_func.__qualname__.removesuffix(TWIN_SUFFIX)
            raise TypeError(f"{name} returns {ret}: an inlined kernel returns plain values only (its callers may "
                            "count references, it does not)")
        return super().add_overload(cres)


class InlinedDispatcher(_PlainReturns, InnerDispatcher):
    """An `inner` kernel with LLVM's ``alwaysinline``, compiled without numba's reference counting
    (`inlined`); its twin, called from Python, is held to the same return types."""


class _InlinedTwin(_PlainReturns, CPUDispatcher):
    """An inlined kernel's twin (`_twin`)."""


def inlined(fn=None, /, **options):
    """`inner` with LLVM's ``alwaysinline`` (numba's ``forceinline``), for small kernels on a
    search's inner path (the lock, the board's row operations, the move generator's steps, an
    evaluator's value): compiled once per signature and cached like any other, and LLVM puts its
    code into every kernel calling it when that kernel's module is optimised. numba's own inlining
    (``inline="always"``) also puts the callee's code into the caller, but types and lowers the
    callee's whole tree again in every caller it compiles; a plain call is not inlined by LLVM
    across numba's calling convention (each array argument passes as its seven fields). The
    figures: docs/performance.md, 'Small kernels inlined by LLVM'.

    Compiled once for every caller, so without numba's reference counting
    (``_nrt=False``), which its callers may or may not do: it allocates nothing (numba refuses to
    compile one that does) and returns plain values only, no array (`InlinedDispatcher`)."""

    def compile_(f):
        kernel = inner(forceinline=True, _nrt=False, **options)(f)
        kernel.__class__ = InlinedDispatcher
        return kernel

    return compile_ if fn is None else compile_(fn)


def _own_forceinline(finalize):
    def wrapped(self, flags, options):
        """numba's, except that a kernel not asking for ``forceinline`` is compiled without it,
        whichever kernel's compile it is compiled in: numba passes a kernel's ``forceinline`` down
        to the kernels first compiled while it compiles, so whether a kernel is inlined would
        depend on which caller compiled it first."""
        explicit = flags.is_set("forceinline")
        finalize(self, flags, options)
        if not explicit:
            flags.forceinline = False

    wrapped._own = True
    return wrapped


if not getattr(CPUTargetOptions.finalize, "_own", False):
    CPUTargetOptions.finalize = _own_forceinline(CPUTargetOptions.finalize)


def inner(fn=None, /, **options):
    """``njit(cache=True, **options)`` without the CPython wrapper, for a kernel only other kernels
    call (``@inner(parallel=True)`` passes options on). A call from Python (a test, a benchmark)
    goes to a twin of the kernel compiled with the wrapper on first use and cached apart (its own
    entries, named ``<name>_from_python``), so only the code paths Python actually calls pay for a
    wrapper. Without the wrapper, an inner kernel's machine code is never emitted on its own
    either: only inside the kernels Python calls (`engine._jit.codegen`)."""

    def compile_(f):
        kernel = njit(cache=True, no_cpython_wrapper=True, **options)(f)
        kernel.__class__ = InnerDispatcher
        return kernel

    return compile_ if fn is None else compile_(fn)
