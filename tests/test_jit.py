"""Kernels compiled without numba's CPython wrapper (`engine._jit.decorators.inner`): called from kernels as any
kernel, from Python through a twin compiled with the wrapper, never through the wrapperless entry
(which would crash the interpreter)."""

from typing import NamedTuple

import numpy as np
import pytest
from numba import float32, int64, njit, prange, typeof

from engine._jit.decorators import TWIN_SUFFIX, InlinedDispatcher, InnerDispatcher, KernelCall, inlined, inner


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


# ------------------------------------------------------------------------------------------------
# Inlined kernels: compiled once, put into their callers by LLVM


@inlined
def masked_count(row, mask, out):
    """The bits of ``row & mask`` set, each row's running count added into ``out``: a loop over two
    arrays, which LLVM does not inline across numba's calling convention unless told to."""
    n = 0
    for i in range(row.shape[0]):
        v = row[i] & mask[i % mask.shape[0]]
        while v:
            v &= v - 1
            n += 1
        out[i % out.shape[0]] += n
    return n


@njit  # not cached: numba shows the code of a kernel it compiled, not of one it loaded
def masked_counts(rows, mask, out):
    total = 0
    for row in rows:
        total += masked_count(row, mask, out)
    return total


def test_an_inlined_kernel_is_compiled_once_and_put_into_its_caller_by_llvm():
    rows, mask = np.arange(12, dtype=np.int64).reshape(3, 4), np.array([3, 5], np.int64)
    out, expected = np.zeros(2, np.int64), np.zeros(2, np.int64)
    assert masked_counts(rows, mask, out) == sum(masked_count.py_func(row, mask, expected) for row in rows) == 11
    assert out.tolist() == expected.tolist() == [7, 15]
    assert masked_count(rows[0], mask, np.zeros(2, np.int64)) == 3  # from Python, through the twin
    assert isinstance(masked_count, InlinedDispatcher) and masked_count.targetoptions["forceinline"]
    assert masked_count.targetoptions["_nrt"] is False
    sig = (typeof(rows[0]), typeof(mask), typeof(out))
    masked_count.compile(sig)  # or loaded from the cache
    callee = masked_count.overloads[sig]
    name = callee.fndesc.mangled_name
    ir = callee.library.get_llvm_str()
    defined = next(line for line in ir.splitlines() if line.startswith("define") and name in line)
    group = defined.rsplit("#", 1)[1].split()[0]  # the attribute group of its definition
    assert "alwaysinline" in next(line for line in ir.splitlines() if line.startswith(f"attributes #{group} "))
    # neither called nor defined in the caller's machine code: its code is in the caller's (an inner
    # kernel there is called through its address)
    assert name not in masked_counts.inspect_asm(masked_counts.signatures[0])


@inlined
def first_row(board):
    return board[0]


@inlined
def with_board(board):
    return board[0], board  # numba itself refuses an array not passed in (a view, a new one)


@njit(cache=True)
def board_of(board):
    return with_board(board)[1]


def test_an_inlined_kernel_returns_plain_values_only():
    board = np.arange(4, dtype=np.uint16)
    assert first_row(board) == 0
    with pytest.raises(TypeError, match=r"with_board returns Tuple\(uint16, array\(uint16, 1d, C\)\): an inlined "
                                        r"kernel returns plain values only"):
        with_board(board)  # from Python, through its twin
    with pytest.raises(Exception, match="with_board returns Tuple"):  # from a kernel: in numba's TypingError
        board_of(board)


def test_a_kernel_compiled_inside_a_forceinline_kernel_is_not_inlined_unless_it_says_so():
    # numba hands a kernel's forceinline to the kernels first compiled while it compiles; engine._jit.decorators
    # makes it each kernel's own (not cached here: both are compiled in this test, in this order)
    helper = njit(lambda v: v + 1)
    asked = njit(forceinline=True)(lambda v: v * 2)
    outer = njit(forceinline=True)(lambda v: helper(v) + asked(v))
    assert njit(lambda v: outer(v))(3) == 4 + 6
    assert outer.overloads[(int64,)].fndesc.inline
    assert not helper.overloads[(int64,)].fndesc.inline
    assert asked.overloads[(int64,)].fndesc.inline
