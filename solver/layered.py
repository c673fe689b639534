"""The kernels the layered searches share (`solver.beam`, a layer per piece; `solver.segment`, the
layers of a segment): a placement packed in an int16, a board's hashes and equality (equal boards
are merged), ranking keys sorted by radix, and arrays grown as a layer outgrows them.
"""

from __future__ import annotations

import numpy as np

from engine._jit.decorators import inlined, inner
from engine.board import copy_rows

#: a board's 64-bit FNV-1a hash (`board_hash`: the beam's ``hash`` tie order and its best child's
#: last tie, the segment search's last tie)
FNV_OFFSET = np.uint64(14695981039346656037)
FNV_PRIME = np.uint64(1099511628211)
#: odd 64-bit constants of the merge table's hash (`table_hash`)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX = np.uint64(0xBF58476D1CE4E5B9)
#: `radix_argsort` sorts by digits of RADIX values (bytes), the keys' sign bit flipped
RADIX = 256
SIGN_BIT = np.uint64(1 << 63)


# ------------------------------------------------------------------------------------------------
# Placements


@inlined
def pack(x, y, s):
    """A placement as one int16: (x + 4) << 7 | y << 2 | s."""
    return ((x + 4) << 7) | (y << 2) | s


@inlined
def unpack(code):
    """(x, y, state) of a placement `pack` made."""
    return (code >> 7) - 4, (code >> 2) & 31, code & 3


# ------------------------------------------------------------------------------------------------
# Boards: hashes and equality


@inlined
def board_hash(board):
    """The 64-bit FNV-1a mix of a board's rows, shifted right once (a non-negative int64)."""
    h = FNV_OFFSET
    for r in board:
        h = (h ^ np.uint64(r)) * FNV_PRIME
    return np.int64(h >> np.uint64(1))


#: 63 bits (a `board_hash`), and the odd multipliers of `tie_hash`'s mix (splitmix64's)
LOW_63 = np.uint64((1 << 63) - 1)
MIX_1, MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@inlined
def tie_hash(board, seed):
    """The hash that orders boards of equal value under tie seed ``seed``: `board_hash` itself
    for seed 0 (today's order), else a bijection of it on 63 bits drawn by the seed (xor, odd
    multiplications and xor-shifts), so equal boards keep equal hashes and only the order of
    distinct boards of equal value changes."""
    h = board_hash(board)
    if seed == 0:
        return h
    x = (np.uint64(h) ^ (np.uint64(seed) * GOLDEN)) & LOW_63
    x = (x * MIX_1) & LOW_63
    x ^= x >> np.uint64(31)
    x = (x * MIX_2) & LOW_63
    x ^= x >> np.uint64(29)
    return np.int64(x)


@inlined
def table_hash(board):
    """A fast hash of a board for the merge table (rows times distinct odd constants, summed, then
    mixed: the products are independent, unlike `board_hash`'s chain of multiplications)."""
    h = np.uint64(0)
    for y in range(board.shape[0]):
        h += np.uint64(board[y]) * (np.uint64(2 * y + 1) * GOLDEN)
    h ^= h >> np.uint64(29)
    h *= MIX
    return h ^ (h >> np.uint64(32))


@inlined
def same_board(a, b):
    """Whether boards ``a`` and ``b`` hold the same rows."""
    for y in range(a.shape[0]):
        if a[y] != b[y]:
            return False
    return True


# ------------------------------------------------------------------------------------------------
# Ranking keys and arrays


@inner
def descending(values):
    """int64 keys whose ascending order is the descending order of the floats ``values`` (their
    bits, the negative ones' magnitude bits flipped, then all bits flipped; -0.0 counts as 0.0)."""
    bits = (values + 0.0).view(np.int64)
    out = np.empty(values.shape[0], np.int64)
    for m in range(values.shape[0]):
        b = bits[m]
        if b < 0:
            b ^= np.int64(0x7FFFFFFFFFFFFFFF)
        out[m] = ~b
    return out


@inner
def radix_argsort(key):
    """The stable argsort of int64 ``key``: a least-significant-digit radix sort over the bytes that
    vary among the keys (linear in the number of keys)."""
    return radix_sorted(key)[0]


@inner
def radix_sorted(key):
    """`radix_argsort`'s order of ``key``, and the keys in that order as the sort leaves them (each
    with its sign bit flipped, uint64: equal exactly when the keys are), so that a caller walking
    the order compares neighbours in sequence instead of gathering ``key[order[k]]``."""
    n = key.shape[0]
    u = np.empty(n, np.uint64)
    for m in range(n):
        u[m] = np.uint64(key[m]) ^ SIGN_BIT
    order = np.arange(n)
    if n < 2:
        return order, u
    varying = np.uint64(0)
    for m in range(1, n):
        varying |= u[m] ^ u[0]
    u2 = np.empty(n, np.uint64)
    order2 = np.empty(n, np.int64)
    count = np.empty(RADIX + 1, np.int64)
    for byte in range(8):
        shift = np.uint64(8 * byte)
        if (varying >> shift) & np.uint64(RADIX - 1) == 0:
            continue
        count[:] = 0
        for m in range(n):
            count[((u[m] >> shift) & np.uint64(RADIX - 1)) + 1] += 1
        for d in range(RADIX):
            count[d + 1] += count[d]
        for m in range(n):
            d = (u[m] >> shift) & np.uint64(RADIX - 1)
            at = count[d]
            count[d] = at + 1
            u2[at] = u[m]
            order2[at] = order[m]
        u, u2 = u2, u
        order, order2 = order2, order
    return order, u


@inner
def grown(a, n):
    """``a`` with room for at least ``n`` rows along its first axis: ``a`` itself when it has them,
    else a copy of it at least twice as long, the rows beyond its own zero."""
    if a.shape[0] >= n:
        return a
    shape = (max(n, 2 * a.shape[0]),) + a.shape[1:]
    out = np.zeros(shape, a.dtype)
    copy_rows(out.reshape(out.size), a.ravel())  # the rows of ``a``: the first ``a.size`` values of ``out``
    return out
