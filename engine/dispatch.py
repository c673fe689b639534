"""Tables of numba functions chosen by name: a rule with several variants (a beam's tie order, ...)
is a table of functions of one signature, and the choice travels into kernels as a token.

    TIE_ORDERS = FunctionTable("beam.tie_order")

    @TIE_ORDERS.register("hash")
    @njit(cache=True)
    def hash_order(boards, idx, out): ...

    tie_keys = TIE_ORDERS.call                # a module global, so kernels can call it
    order = TIE_ORDERS.token("hash")          # validated: an unknown name is a ValueError
    ...inside a kernel:  tie_keys(order, boards, idx, out)

The token's numba type names the table and the entry, and `FunctionTable.call` is a numba overload
that picks the entry when the calling kernel is compiled: no run-time branch, no code restating the
names, and numba's cache keys the compiled kernel on the token's type, so each choice is compiled
(and cached on disk) once. Adding a variant is one decorated function.
"""

from __future__ import annotations

from typing import Callable

from numba import types
from numba.core.dispatcher import Dispatcher
from numba.extending import NativeValue, models, overload, register_model, typeof_impl, unbox

_TABLES: dict[str, "FunctionTable"] = {}


class TokenType(types.Type):
    """numba type of a `Token`: the table and the entry are in its name."""

    def __init__(self, table: str, name: str):
        self.table = table
        self.entry = name
        super().__init__(name=f"Token({table}: {name})")


class Token:
    """The choice of entry ``name`` of the table ``table``, as a kernel argument."""

    __slots__ = ("table", "name")

    def __init__(self, table: str, name: str):
        self.table = table
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Token) and (self.table, self.name) == (other.table, other.name)

    def __hash__(self):
        return hash((self.table, self.name))

    def __repr__(self):
        return f"Token({self.table!r}, {self.name!r})"

    def __reduce__(self):
        return Token, (self.table, self.name)


@typeof_impl.register(Token)
def _typeof_token(val, c):
    return TokenType(val.table, val.name)


register_model(TokenType)(models.OpaqueModel)


@unbox(TokenType)
def _unbox_token(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


class FunctionTable:
    """Named numba functions of one signature (see the module docstring)."""

    def __init__(self, name: str):
        if name in _TABLES:
            raise ValueError(f"a function table {name!r} exists already")
        self.name = name
        self.functions: dict[str, Dispatcher] = {}
        _TABLES[name] = self
        table = self

        def call(token, *args):
            """Call the entry ``token`` names with ``args`` (numba kernels only)."""
            raise TypeError(f"{table.name}: call() is a numba kernel")

        @overload(call)
        def _call(token, *args):
            if not isinstance(token, TokenType) or token.table != table.name:
                return None
            fn = table.functions[token.entry]

            def impl(token, *args):
                return fn(*args)

            return impl

        self.call = call

    def register(self, name: str) -> Callable:
        """Decorator: register a numba function as the entry ``name``."""

        def wrap(fn):
            if name in self.functions:
                raise ValueError(f"{self.name}: {name!r} is registered already")
            if not isinstance(fn, Dispatcher):
                raise TypeError(f"{self.name}: {name!r} must be a numba function (@njit)")
            self.functions[name] = fn
            return fn

        return wrap

    def names(self) -> tuple[str, ...]:
        return tuple(self.functions)

    def token(self, name: str) -> Token:
        """The token choosing ``name``; ValueError naming the known entries otherwise."""
        if name not in self.functions:
            raise ValueError(f"{self.name}: unknown {name!r} (known: {', '.join(self.functions)})")
        return Token(self.name, name)
