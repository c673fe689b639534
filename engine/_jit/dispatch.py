"""Tables of numba functions chosen by name: a rule with several variants (a beam's tie order, ...)
is a table of functions of one signature, and the choice travels into kernels as a token.

    TIE_ORDERS = FunctionTable("beam.tie_order")
    @TIE_ORDERS.register("hash")
    @njit(cache=True)
    def hash_order(boards, idx, out): ...

    tie_keys = TIE_ORDERS.call                # a module global, so kernels can call it
    order = TIE_ORDERS.token("hash")          # validated: an unknown name is a ValueError
    ...inside a kernel:  tie_keys(order, boards, idx, out)

The entry is picked when the calling kernel is compiled, so each choice is compiled and cached
once; tables made with the same ``chosen_by`` name follow one token (`FunctionTable`).
"""

from __future__ import annotations

from numba import types
from numba.core.dispatcher import Dispatcher
from numba.extending import NativeValue, models, overload, register_model, typeof_impl, unbox

from ..registry import Registry

_TABLES: dict[str, "FunctionTable"] = {}


class Static:
    """A value a kernel is compiled for, passed as an argument: its numba type (`StaticType`) holds
    the value, so an overload reads it when the calling kernel is compiled, and numba's cache keys
    the compiled kernel on it. At run time it is an empty argument. A subclass lists its fields in
    ``__slots__``; they are its identity (equality, hashing, pickling, the type's name)."""

    __slots__ = ()

    def __init__(self, *values):
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def label(self) -> str:
        """The fields as the numba type's name shows them (distinct values, distinct labels)."""
        return ", ".join(map(str, self.fields()))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other):
        return type(other) is type(self) and other.fields() == self.fields()

    def __hash__(self):
        return hash((type(self).__name__, self.fields()))

    def __repr__(self):
        return f"{type(self).__name__}{self.fields()!r}"

    def __reduce__(self):
        return type(self), self.fields()


class StaticType(types.Type):
    """numba type of a `Static`: the value is in its name and in ``value``."""

    def __init__(self, value: Static):
        self.value = value
        super().__init__(name=f"{type(value).__name__}({value.label()})")


@typeof_impl.register(Static)
def _typeof_static(val, c):
    return StaticType(val)


register_model(StaticType)(models.OpaqueModel)


@unbox(StaticType)
def _unbox_static(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


class Fixed(Static):
    """A constant a kernel is compiled for (`fixed` reads it): a rule's mode that would otherwise be
    an integer compared at every call, e.g. `KernelRules.overflow`. The comparison then folds away
    when the kernel is compiled, and a kernel for one mode holds none of the others' code."""

    __slots__ = ("value",)


def fixed(constant):
    """The value of a `Fixed` (in a kernel: a compile-time constant)."""
    return constant.value


@overload(fixed, inline="always")
def _fixed(constant):
    if isinstance(constant, StaticType) and isinstance(constant.value, Fixed):
        value = constant.value.value
        return lambda constant: value
    return None


class Token(Static):
    """The choice of entry ``name`` of the table ``table`` (or of every table following the choice
    ``table``: `FunctionTable.chosen_by`), as a kernel argument."""

    __slots__ = ("table", "name")


class FunctionTable(Registry):
    """Named numba functions of one signature (the module docstring shows one in use): a `Registry`
    whose entries are numba functions, with `call` and `token`.

    The token is a `Static`: its numba type holds the table and the entry, and `call` is a numba
    overload that picks the entry when the calling kernel is compiled: no run-time branch, no code
    restating the names, and numba's cache keys the compiled kernel on the token's type, so each
    choice is compiled (and cached on disk) once. Adding a variant is one decorated function.

    Several tables can follow one choice: tables made with the same ``chosen_by`` name accept each
    other's tokens, so one token in a kernel's settings picks an entry in each (a beam's stages, each
    run in this thread or over numba's threads, follow one ``beam.threads`` token)."""

    def __init__(self, name: str, chosen_by: str | None = None):
        if name in _TABLES:
            raise ValueError(f"a function table {name!r} exists already")
        super().__init__(f"{name} entry", entry=self._numba_function)
        self.name = name
        #: the choice this table's tokens belong to (its own name unless shared with other tables)
        self.chosen_by = chosen_by or name
        _TABLES[name] = self
        table = self

        def call(token, *args):
            """Call the entry ``token`` names with ``args`` (numba kernels only)."""
            raise TypeError(f"{table.name}: call() is a numba kernel")

        @overload(call, jit_options={"forceinline": True})  # LLVM inlines the forwarding impl: no call of its own
        def _call(token, *args):
            if not (isinstance(token, StaticType) and isinstance(token.value, Token)
                    and token.value.table == table.chosen_by):
                return None
            fn = table[token.value.name]

            def impl(token, *args):
                return fn(*args)

            return impl

        self.call = call

    def _numba_function(self, name: str, fn) -> Dispatcher:
        if not isinstance(fn, Dispatcher):
            raise TypeError(f"{self.name}: {name!r} must be a numba function (@njit)")
        return fn

    def token(self, name: str) -> Token:
        """The token choosing ``name``; ValueError naming the known entries otherwise."""
        self.get(name)
        return Token(self.chosen_by, name)
