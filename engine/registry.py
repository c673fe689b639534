"""Things found by name, one idiom for every kind: the rules presets (`engine.rules.PRESETS`), the
entries of a function table (`engine._jit.dispatch.FunctionTable`), the board features and tie-breaks
(`evaluators.registry`), the policies (`solver.registry`) and the tuners (`optimizers.tuners`).
A kind is one `Registry`; a thing joins it where it is defined, with the registry's decorator:

    TUNERS = Registry("tuner", error=TunerError)

    @TUNERS.register          # named by its ``name`` (or ``@TUNERS.register("cem")``)
    class CEM(Tuner):         # a value registers by the same call: ``PRESETS.register(Rules(...))``
        name = "cem"

A kind checks (and may wrap) what it is given (``entry``); a name is an identifier, registered once.
Reading is the same for every kind: `Registry.names`, `Registry.get` and a read-only mapping;
`Registry.discover` imports a package's public modules, so a kind's modules are never listed.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
_MISSING = object()


class Registry(Mapping[str, T]):
    """The things of one ``kind`` (a word for messages: ``"tuner"``, ``"rules preset"``) by name.

    ``error``: the exception its refusals raise (a `ValueError` subclass: the kind's own, such as
    `optimizers.tuners.TunerError`); ``entry(name, thing)``: checks a thing being registered and
    returns what is kept for it (the thing itself by default), raising ``error`` with the reason;
    ``changed()``: called after each registration or removal (what is derived from the registry is
    rebuilt); ``order(name, entry)``: the sort key of `names` (default: registration order)."""

    def __init__(self, kind: str, *, error: type[Exception] = ValueError,
                 entry: Callable[[str, Any], T] | None = None, changed: Callable[[], None] | None = None,
                 order: Callable[[str, T], Any] | None = None):
        self.kind = kind
        self.error = error
        self._entry = entry
        self._changed = changed
        self._order = order
        self._entries: dict[str, T] = {}

    # --------------------------------------------------------------------------------------------
    # Declaring

    def register(self, thing: Any = None, /, name: str | None = None):
        """Register ``thing`` under ``name`` (default: `name_of` the thing) and return it unchanged:
        ``@R.register`` and ``@R.register("name")`` (or ``name="name"``) decorate a class or a
        function, ``R.register(value)`` registers a value. ``error`` when it cannot be registered."""
        if isinstance(thing, str):
            thing, name = None, thing
        if thing is None:
            return lambda t: self.register(t, name=name)
        self.add(self.name_of(thing) if name is None else name, thing)
        return thing

    def name_of(self, thing: Any) -> str:
        """The name a thing registers under when none is given: its ``name`` attribute when that is a
        string (a class's declaration, a value's field), else its ``__name__``."""
        name = getattr(thing, "name", None)
        return name if isinstance(name, str) else getattr(thing, "__name__", "")

    def add(self, name: str, thing: Any) -> T:
        """Register ``thing`` as ``name`` (what `register` does); returns the entry kept."""
        kept = self._entry(name, thing) if self._entry is not None else thing
        if not isinstance(name, str) or not name.isidentifier():
            raise self.error(f"{self.kind} {name!r}: a name must be an identifier")
        if name in self._entries:
            raise self.error(f"{self.kind} {name!r} is registered already ({_where(self._entries[name])})")
        self._entries[name] = kept
        if self._changed is not None:
            self._changed()
        return kept

    def remove(self, name: str) -> T:
        """Unregister ``name`` (a test's entry, say); returns its entry."""
        try:
            kept = self._entries.pop(name)
        except KeyError:
            raise self.error(f"no {self.kind} {name!r} is registered") from None
        if self._changed is not None:
            self._changed()
        return kept

    def discover(self, package: str) -> None:
        """Import every public module of ``package`` (names not starting with ``_``; subpackages
        included, each discovering its own), so that what they define registers itself."""
        for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{package}.{info.name}")

    # --------------------------------------------------------------------------------------------
    # Reading

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order or by ``order``."""
        if self._order is None:
            return tuple(self._entries)
        return tuple(sorted(self._entries, key=lambda name: self._order(name, self._entries[name])))

    def get(self, name: str, default: Any = _MISSING) -> T:
        """The entry of ``name``; when there is none, ``default`` if given, else ``error`` in one
        line naming the known entries (`unknown`)."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            if default is not _MISSING:
                return default
            raise self.error(self.unknown(name)) from None

    def unknown(self, name: Any) -> str:
        """The message for a name that is not registered."""
        from .validation import did_you_mean

        return f"unknown {self.kind} {name!r}{did_you_mean(name, self.names())} (known: {', '.join(self.names())})"

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.kind}s: {', '.join(self.names())}>"


def _where(entry: Any) -> str:
    """What an entry is, for a refusal: a class or function by its qualified name."""
    thing = getattr(entry, "py_func", entry)
    if hasattr(thing, "__qualname__") and hasattr(thing, "__module__"):
        return f"{thing.__module__}.{thing.__qualname__}"
    return repr(entry)[:80]
