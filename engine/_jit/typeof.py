"""The numba type of a bundle passed from Python, computed once per structure.

A kernel called from Python types each argument. numba does it in C for arrays, numbers and tuples
of them, and caches the type under a fingerprint of the value. A tuple holding a `Static` (the
rules' tokens, an evaluator's `Kind`) has no fingerprint, and numba then types it in Python at
every call, field by field, building each field's type anew: more than many kernels take to run.
`typeof_tuple` types a named tuple (a kernel's bundle) by its identity when the same object is
passed again, else by looking up its structure; a plain tuple, and a named tuple with a field that
has no key, are typed by numba's own rule. Importing `engine._jit` installs it; no kernel depends
on this module, so editing it recompiles nothing. The figures: docs/performance.md, 'Calls from
Python'.
"""

from __future__ import annotations

import numpy as np
from numba._dispatcher import compute_fingerprint
from numba.extending import typeof_impl

from .dispatch import Static

_numba_tuple_typeof = typeof_impl.dispatch(tuple)
_types: dict = {}
#: id(bundle) -> (bundle, purpose, type, ((array, its fingerprint), ...)): bundles typed lately
_by_identity: dict = {}
#: entries `_by_identity` holds before it starts afresh (bundles are few and long-lived)
BY_IDENTITY_LIMIT = 256
_IMMUTABLE = (int, float, bool)


def _key(v, c):
    """What determines numba's type of ``v``; NotImplementedError when there is no such key here."""
    if isinstance(v, tuple):
        return (type(v), *(_key(x, c) for x in v))
    if isinstance(v, Static):
        return v
    if type(v) is int:  # its type depends on its size: numba's own (cheap) rule gives it
        return typeof_impl(v, c)
    return type(v), compute_fingerprint(v)  # NotImplementedError for a value without one


def _arrays(v, out: list) -> bool:
    """Add the arrays among ``v``'s leaves to ``out``; False when a leaf is neither an array nor of
    a kind that cannot change (`Static`, int, float, bool)."""
    if isinstance(v, tuple):
        return all(_arrays(x, out) for x in v)
    if type(v) is np.ndarray:
        out.append(v)
        return True
    return type(v) in _IMMUTABLE or isinstance(v, Static)


@typeof_impl.register(tuple)
def typeof_tuple(val, c):
    """numba's type of the tuple ``val``; a named tuple's by its identity or from the lookup.

    The lookup: a named tuple's class and, for each field, the field's key (a `Static` itself, a
    nested tuple's key, an int's numba type, else numba's fingerprint with the value's class), which
    together determine numba's type. A plain tuple, and a named tuple with a field that has no key
    (a string, say), are typed by numba's own rule.

    A bundle passed again (the same object: the rules' and the evaluator's, at every call of a loop
    driven from Python) is found by its identity, not by its key. The entry holds the bundle (so its
    identity is not reused) and its arrays with their fingerprints, checked at each hit: an array's
    type can change in place (its ``writeable`` flag, an in-place reshape), every other field
    (`Static`, int, float, bool, a nested tuple) cannot. A bundle with a field of any other kind is
    not kept so."""
    if type(val) is tuple:
        return _numba_tuple_typeof(val, c)
    hit = _by_identity.get(id(val))
    if (hit is not None and hit[0] is val and hit[1] is c.purpose
            and all(compute_fingerprint(a) == f for a, f in hit[3])):
        return hit[2]
    try:
        key = (c.purpose, _key(val, c))
    except NotImplementedError:
        return _numba_tuple_typeof(val, c)
    ty = _types.get(key)
    if ty is None:
        ty = _numba_tuple_typeof(val, c)
        if ty is not None:
            _types[key] = ty
    arrays: list = []
    if ty is not None and _arrays(val, arrays):
        if len(_by_identity) >= BY_IDENTITY_LIMIT:
            _by_identity.clear()
        _by_identity[id(val)] = (val, c.purpose, ty, tuple((a, compute_fingerprint(a)) for a in arrays))
    return ty
