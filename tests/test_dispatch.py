"""Compile-time choices: a `Static` value travels into kernels as its numba type; a `FunctionTable`
picks its entry by a token when the calling kernel is compiled; a bundle holding them is typed by a
lookup of its structure, as numba would type it field by field."""

import pickle
from typing import NamedTuple

import numpy as np
import pytest
from numba import njit, typeof

from engine._jit.dispatch import Fixed, FunctionTable, Static, StaticType, Token, fixed

SQUARES = FunctionTable("test.squares")


@SQUARES.register("square")
@njit
def square(x):
    return x * x


@SQUARES.register("cube")
@njit
def cube(x):
    return x * x * x


apply_entry = SQUARES.call


@njit
def apply_twice(token, x):
    return apply_entry(token, apply_entry(token, x))


class Pair(Static):
    __slots__ = ("a", "b")


def test_a_token_picks_its_entry_per_compiled_kernel():
    assert apply_twice(SQUARES.token("square"), 3) == 81
    assert apply_twice(SQUARES.token("cube"), 2) == 512
    assert len(apply_twice.signatures) == 2  # one compiled kernel per choice
    assert SQUARES.names() == ("square", "cube")
    with pytest.raises(ValueError, match=r"unknown test\.squares entry 'quartic' \(known: square, cube\)"):
        SQUARES.token("quartic")


def test_registration_is_checked():
    with pytest.raises(ValueError, match="'square' is registered already"):
        SQUARES.register("square")(cube)
    with pytest.raises(TypeError, match="must be a numba function"):
        SQUARES.register("plain")(lambda x: x)
    with pytest.raises(ValueError, match="exists already"):
        FunctionTable("test.squares")


def test_a_static_value_is_its_fields():
    p = Pair(1, "x")
    assert (p.a, p.b, p.fields()) == (1, "x", (1, "x"))
    assert p == Pair(1, "x") and hash(p) == hash(Pair(1, "x")) and p != Pair(2, "x")
    assert Token("t", "n") != Pair("t", "n")  # another class: another value
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(AttributeError, match="immutable"):
        p.a = 2
    with pytest.raises(ValueError):
        Pair(1)  # every field is given
    t = typeof(p)
    assert isinstance(t, StaticType) and t.value == p and str(t) == "Pair(1, x)"
    assert typeof(Pair(1, "x")) == t and typeof(Pair(2, "x")) != t


@njit
def branch_on(mode, x):
    if fixed(mode) == 1:
        return x + 100
    return x


def test_a_fixed_value_is_a_constant_of_each_compiled_kernel():
    assert branch_on(Fixed(1), 5) == 105
    assert branch_on(Fixed(0), 5) == 5
    assert fixed(Fixed(7)) == 7  # from Python too
    # one specialisation per value, told apart by numba's type (and so by its cache)
    assert typeof(Fixed(0)) != typeof(Fixed(1)) and len(branch_on.signatures) == 2


HALVES = FunctionTable("test.halves", chosen_by="test.mode")
NEGATIONS = FunctionTable("test.negations", chosen_by="test.mode")


@HALVES.register("plain")
@njit
def half(x):
    return x // 2


@HALVES.register("other")
@njit
def third(x):
    return x // 3


@NEGATIONS.register("plain")
@njit
def negate(x):
    return -x


@NEGATIONS.register("other")
@njit
def negate_twice(x):
    return x


halve, negation = HALVES.call, NEGATIONS.call


@njit
def both(mode, x):
    return negation(mode, halve(mode, x))


def test_tables_following_one_choice_take_one_token():
    """Tables made with one ``chosen_by`` accept each other's tokens: one token picks in each, and
    only the entries it names are compiled."""
    plain = HALVES.token("plain")
    assert plain == NEGATIONS.token("plain") == Token("test.mode", "plain")
    assert both(plain, 12) == -6
    assert half.signatures and negate.signatures and not third.signatures and not negate_twice.signatures
    assert both(HALVES.token("other"), 12) == 4
    assert len(both.signatures) == 2 and third.signatures and negate_twice.signatures
    with pytest.raises(ValueError, match=r"unknown test\.negations entry 'missing'"):
        NEGATIONS.token("missing")
    with pytest.raises(Exception):  # a token of another choice is no token of these tables
        both(SQUARES.token("square"), 12)


# ------------------------------------------------------------------------------------------------
# A bundle's numba type, looked up by its structure


class Inner(NamedTuple):
    a: object
    b: object


class Bundle(NamedTuple):
    x: object
    y: object
    inner: object


def _arrays():
    c = np.zeros((3, 4))
    readonly = np.zeros(5, np.uint16)
    readonly.flags.writeable = False
    return [c, c.T, c[:, ::2], readonly, np.zeros(0, np.int8), np.zeros((), np.float32), np.arange(4)[::2]]


def _values():
    yield from _arrays()
    yield from (0, 1, -1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63), 2**63, True, False, 1.5, np.int32(3),
                np.float64(2.0), np.uint8(1), None, Pair(1, 2), Pair(1, 3), SQUARES.token("cube"), "text")


def test_a_bundle_is_typed_as_numba_types_it_field_by_field():
    from numba.core.typing.typeof import Purpose, _TypeofContext

    from engine import CLASSIC, GEEK, STANDARD
    from engine._jit.typeof import _numba_tuple_typeof
    from evaluators import load_evaluator

    values = list(_values())
    cases = [Bundle(v, w, Inner(w, v)) for v, w in zip(values, values[3:] + values[:3])]
    cases += [Bundle(v, 7, Inner(v, (v, 1))) for v in values]
    cases += [r.kernel for r in (CLASSIC, GEEK, STANDARD)] + [load_evaluator(n).spec for n in ("bcts", "lecture_v2")]
    for value in cases:
        for purpose in (Purpose.argument, Purpose.constant):
            expected = _numba_tuple_typeof(value, _TypeofContext(purpose))
            assert typeof(value, purpose) == expected, value
            assert typeof(value, purpose) == expected, value  # the second time from the lookup
    # what changes a field's type changes the bundle's
    a = np.zeros(3)
    b = np.zeros(3)
    b.flags.writeable = False
    assert typeof(Inner(a, 1)) != typeof(Inner(b, 1))
    assert typeof(Inner(1, 1)) != typeof(Inner(2**63, 1)) != typeof(Inner(1.0, 1))
    assert typeof(Inner(Pair(1, 2), 0)) != typeof(Inner(Pair(1, 3), 0))
    with pytest.raises(ValueError, match="too large"):
        typeof(Inner(2**64, 1))


def test_a_bundle_passed_again_is_typed_by_its_identity_and_its_arrays_checked():
    """The same bundle object is found by its identity; an array of it changed in place (its
    writeable flag, its shape) changes its type all the same; a bundle with a field of another
    kind (a list, a string) is not kept by identity."""
    from numba.core.typing.typeof import Purpose, _TypeofContext

    from engine import GEEK
    from engine._jit import typeof as bundles
    from engine._jit.typeof import _numba_tuple_typeof

    a = np.zeros(6)
    inner = Inner(a, Pair(1, 2))
    for value in (inner, Bundle(inner, 3, (True, 1.5)), GEEK.kernel):
        first = typeof(value)
        assert bundles._by_identity[id(value)][0] is value and typeof(value) == first
    assert typeof(inner).types[0].mutable
    a.flags.writeable = False
    assert typeof(inner) == _numba_tuple_typeof(inner, _TypeofContext(Purpose.argument))
    assert not typeof(inner).types[0].mutable
    a.flags.writeable = True
    a.shape = (2, 3)  # in place
    assert typeof(inner).types[0].ndim == 2
    for value in (Inner([1], 2), Inner("text", 2)):
        typeof(value)
        assert id(value) not in bundles._by_identity
    assert typeof(inner, Purpose.constant) == _numba_tuple_typeof(inner, _TypeofContext(Purpose.constant))
