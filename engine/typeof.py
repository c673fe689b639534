"""The numba type of a bundle passed from Python, computed once per structure.

A kernel called from Python types each argument. numba does it in C for arrays, numbers and tuples
of them, and caches the type under a fingerprint of the value. A tuple holding a `Static` (the
rules' tokens, an evaluator's `Kind`) has no fingerprint, and numba then types it in Python at
every call, field by field, building each field's type anew: 140 us for the rules and 40 us for an
evaluator's spec, more than many kernels take to run. Here a named tuple (a kernel's bundle) is
typed by looking up its structure instead: its class and, for each field, the field's key (a
`Static` itself, a nested tuple's key, an int's numba type, else numba's fingerprint with the
value's class), which together determine numba's type. A plain tuple, and a named tuple with a
field that has no key (a string, say), are typed by numba's own rule, as before. `engine/__init__.py`
installs it; no kernel depends on this module, so editing it recompiles nothing.
"""

from __future__ import annotations

from numba._dispatcher import compute_fingerprint
from numba.extending import typeof_impl

from .dispatch import Static

_numba_tuple_typeof = typeof_impl.dispatch(tuple)
_types: dict = {}


def _key(v, c):
    """What determines numba's type of ``v``; NotImplementedError when there is no such key here."""
    if isinstance(v, tuple):
        return (type(v), *(_key(x, c) for x in v))
    if isinstance(v, Static):
        return v
    if type(v) is int:  # its type depends on its size: numba's own (cheap) rule gives it
        return typeof_impl(v, c)
    return type(v), compute_fingerprint(v)  # NotImplementedError for a value without one


@typeof_impl.register(tuple)
def typeof_tuple(val, c):
    """numba's type of the tuple ``val``; a named tuple's from the lookup (module docstring)."""
    if type(val) is tuple:
        return _numba_tuple_typeof(val, c)
    try:
        key = (c.purpose, _key(val, c))
    except NotImplementedError:
        return _numba_tuple_typeof(val, c)
    ty = _types.get(key)
    if ty is None:
        ty = _numba_tuple_typeof(val, c)
        if ty is not None:
            _types[key] = ty
    return ty
