"""Kernels that other kernels call: compiled without numba's CPython wrapper.

numba compiles, beside every kernel, a wrapper that lets Python call it: it unboxes each argument
from its Python object. For a kernel taking the project's bundles (a beam's state of 28 arrays,
its settings, the rules) that wrapper costs about as much to compile as the kernel itself, and a
kernel called only from other kernels never uses it. `inner` compiles a kernel without it:

    @inner
    def lock_nodes(lo, hi, st, kids, shape, number, rules, cfg, ruled): ...

A call from Python (a test, a benchmark) still works: it goes to a twin of the kernel compiled
with the wrapper on first use and cached apart (its own entries, named ``<name>_from_python``),
so only the code paths Python actually calls pay for a wrapper. Everything else is numba's
``njit(cache=True)``: ``@inner(parallel=True)`` passes options on. Without the wrapper, an inner
kernel's machine code is never emitted on its own either: only inside the kernels Python calls
(`engine._codegen`).

An integer constant in a calling kernel reaches numba typed as its value (``Literal[int](0)``), and
numba compiles the callee afresh for each such value: ``place_nodes(0, n, ...)`` and
``place_nodes(c * n // chunks, ...)`` were two compiles of one kernel, and the evaluators' `term`,
called with its slot's number, one per slot. An inner kernel is compiled for the integer's plain
type instead (`InnerDispatcher.get_call_template`); a boolean constant stays a compile-time value, as
kernels use it to choose code (``search(..., store=True)``).
"""

from __future__ import annotations

import contextlib
import functools
import types
from typing import NamedTuple

from numba import njit, typeof
from numba.core import caching
from numba.core.types import IntegerLiteral
from numba.core.registry import CPUDispatcher

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
        """numba's, with integer constants taken as their plain type (module docstring)."""
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
    return njit(cache=True, **options)(g)


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


def inner(fn=None, /, **options):
    """``njit(cache=True, **options)`` without the CPython wrapper (see the module docstring)."""

    def compile_(f):
        kernel = njit(cache=True, no_cpython_wrapper=True, **options)(f)
        kernel.__class__ = InnerDispatcher
        return kernel

    return compile_ if fn is None else compile_(fn)
