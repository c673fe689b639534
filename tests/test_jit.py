"""Kernels compiled without numba's CPython wrapper (`engine.jit.inner`): called from kernels as any
kernel, from Python through a twin compiled with the wrapper, never through the wrapperless entry
(which would crash the interpreter)."""

from typing import NamedTuple

import numpy as np
from numba import float32, int64, njit, prange

from engine.jit import TWIN_SUFFIX, InnerDispatcher, KernelCall, inner


class Bundle(NamedTuple):
    values: np.ndarray
    offset: int


@inner
def shifted_sum(b, k):
    total = 0
    for v in b.values:
        total += v + b.offset
    return total + k


@inner(parallel=True)
def squares_sum(a):
    total = 0
    for i in prange(a.shape[0]):
        total += a[i] * a[i]
    return total


@njit(cache=True)
def both(b, a):
    return shifted_sum(b, 1) + squares_sum(a)


def test_an_inner_kernel_is_called_from_kernels_without_a_python_wrapper():
    b, a = Bundle(np.arange(5), 10), np.arange(4)
    assert both(b, a) == (0 + 1 + 2 + 3 + 4) + 5 * 10 + 1 + (0 + 1 + 4 + 9)
    assert isinstance(shifted_sum, InnerDispatcher) and shifted_sum.targetoptions["no_cpython_wrapper"]
    assert squares_sum.targetoptions["parallel"]


def test_a_call_from_python_goes_to_a_twin_with_the_wrapper():
    b = Bundle(np.arange(3, dtype=np.int64), 2)
    assert shifted_sum(b, 0) == 3 + 3 * 2 == shifted_sum.py_func(b, 0)
    twin = shifted_sum.__dict__["_python_twin"]
    assert twin is not shifted_sum and not twin.targetoptions.get("no_cpython_wrapper")
    assert twin.py_func.__qualname__ == shifted_sum.py_func.__qualname__ + TWIN_SUFFIX  # cached apart
    assert twin.py_func.__code__ is shifted_sum.py_func.__code__
    assert squares_sum(np.arange(5)) == 30
    assert shifted_sum(b, 1) == 10 and len(twin.signatures) == 1  # the twin is made once


@inner
def scaled(k, a):
    return k * a


@njit(cache=True)
def constants(a):
    return scaled(2, a) + scaled(3, a) + scaled(a, a)


def test_an_integer_constant_compiles_an_inner_kernel_for_its_plain_type():
    """numba types a constant argument as its value (``Literal[int](2)``); an inner kernel is
    compiled for int64 instead, so the three calls above are one compile, not three. Asked as a
    calling kernel's compile asks (the kernels may come from the cache, which compiles nothing)."""
    from numba.core import types

    assert constants(5) == 10 + 15 + 25
    _, _, args, _ = scaled.get_call_template((types.IntegerLiteral(2), types.int64), {})
    assert [str(t) for t in args] == ["int64", "int64"]
    assert all(str(t) == "int64" for sig in scaled.signatures for t in sig)


@njit
def doubled(a, k):
    return a * 2 + k


def test_a_kernel_call_compiles_the_signature_a_kernel_would_call_with():
    call = KernelCall(doubled, (np.zeros(3, np.float32), 7))  # a Python int stands for any integer
    assert call.signature() == (float32[::1], int64)
    assert not call.cached()  # not compiled, and an uncached kernel has no on-disk index
    call.compile()
    assert call.cached() and list(doubled.overloads) == [call.signature()]
    assert KernelCall(shifted_sum, (Bundle(np.arange(2), 1), 0)).signature()[1] == int64
