"""The solver's policies by name (`POLICIES`, an `engine.registry.Registry`: the idiom of everything
found by name). A policy registers itself with the registry's decorator on its class, in its own
module, and everything that lists policies reads this registry: the `policy` key and the sections
of `SolverConfig`, `solve`'s choice of how to play, the players' check that a policy plays unknown
pieces, the configuration reference.

    @register                      # POLICIES.register
    class Beam(Policy):
        name = "beam"
        Settings = BeamConfig      # its settings: the configuration section named after it

What a policy class declares is checked on registration (`_entry`); a section several policies
read (``online``) is registered with `register_section`. `SolverConfig` stands for the schema of
the policies registered now (`schema`); `discover` imports every public module of a package, so a
policy module is found by being there. How to add one: docs/extending.md, "A policy"."""

from __future__ import annotations

import copyreg
from dataclasses import dataclass

from numba.core.dispatcher import Dispatcher
from pydantic import BaseModel

from engine.registry import Registry
from engine.validation import WRITTEN_ELSEWHERE

from . import config

#: the package whose policies are the project's own (the configuration reference documents them)
HOME = __name__.rsplit(".", 1)[0]


class PolicyError(ValueError):
    """A policy or section that cannot be registered, or a name that is not registered; the message
    says which and why."""


@dataclass(frozen=True)
class Entry:
    """A registered policy: its ``name``, its class (``policy``), its configuration section's model
    (``settings``, None when it has no settings) and whether it plays the known sequence
    (``known_pieces``) or unknown pieces (seeded games)."""

    name: str
    policy: type
    settings: type[BaseModel] | None
    known_pieces: bool

    @property
    def shipped(self) -> bool:
        """Whether the project ships the policy (its module is in the solver package)."""
        return _shipped(self.policy.__module__)


@dataclass(frozen=True)
class Section:
    """A section several policies read: its ``key``, its ``model``, whether those policies play
    the known sequence (``known_pieces``), and the ``module`` that registered it."""

    key: str
    model: type[BaseModel]
    known_pieces: bool
    module: str

    @property
    def shipped(self) -> bool:
        return _shipped(self.module)


def _shipped(module: str) -> bool:
    return module == HOME or module.startswith(HOME + ".")


# ------------------------------------------------------------------------------------------------
# Declaring


def register_section(key: str, model: type[BaseModel], known_pieces: bool, module: str) -> type[BaseModel]:
    """Register the section ``key`` of a configuration that several policies read (those playing
    the known sequence, or unknown pieces, as ``known_pieces``), from ``module``; returns the model."""
    _check_key(key, f"section {key!r}")
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PolicyError(f"section {key!r}: its model must be a pydantic model, not {model!r}")
    SECTIONS.add(key, Section(key, model, known_pieces, module))
    return model


def unregister(name: str) -> None:
    """Remove the policy ``name`` (a test's policy, say); `SolverConfig` loses its name and section."""
    POLICIES.remove(name)


def discover(package: str) -> None:
    """Import every public module of ``package`` (names not starting with ``_``; subpackages
    included, each discovering its own), so that the policies they define register themselves."""
    POLICIES.discover(package)


def _entry(name: str, cls) -> Entry:
    """A policy class as `POLICIES` keeps it (its `Entry`), checked: named by its ``name`` (its name
    in a configuration, ``policy: <name>``, an identifier), its ``Settings`` a pydantic model (its
    configuration section) or None (the base classes' value, when it has none), its
    ``known_pieces`` declared: True for a policy that plays the known sequence
    (`solver._base.Policy`), False for one that sees only the current piece and the preview and is
    scored on seeded games (`solver.online.OnlinePolicy`), which also declares ``Bundle`` (the
    NamedTuple class of its parameters and state as its kernel reads them, its own: the game loop
    finds the policy's kernel by it) and ``choose_kernel`` (that numba kernel)."""
    what = f"policy class {getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', repr(cls))}"
    declared = getattr(cls, "name", "")
    if not isinstance(name, str) or not name.isidentifier() or name != declared:
        raise PolicyError(f"{what}: its name must be an identifier (the class attribute name), got {declared!r}")
    _check_key(name, f"policy {name!r} ({what})")
    settings = getattr(cls, "Settings", None)
    if settings is not None and not (isinstance(settings, type) and issubclass(settings, BaseModel)):
        raise PolicyError(f"policy {name!r}: its settings must be a pydantic model, not {settings!r}")
    known = getattr(cls, "known_pieces", None)
    if not isinstance(known, bool):
        raise PolicyError(f"policy {name!r}: its class must say whether it plays the known sequence "
                            "(known_pieces: True or False; derive from solver.Policy or solver.online.OnlinePolicy)")
    if not known:
        _check_online(name, cls)
    return Entry(name, cls, settings, known)


def _check_key(key: str, what: str) -> None:
    if key in POLICIES:
        existing = POLICIES[key].policy
        raise PolicyError(f"{what}: the name {key!r} is registered already, by "
                            f"{existing.__module__}.{existing.__qualname__}; a policy's name must be unique")
    if key in SECTIONS:
        raise PolicyError(f"{what}: {key!r} is already a shared section of the configuration "
                            f"(registered by {SECTIONS[key].module})")
    if key in config.SolverKeys.model_fields:
        raise PolicyError(f"{what}: {key!r} is a key of every solver configuration; choose another name")


def _check_online(name: str, cls) -> None:
    """A policy for unknown pieces declares its own bundle class and a numba choose kernel."""
    bundle = getattr(cls, "Bundle", None)
    if not (isinstance(bundle, type) and issubclass(bundle, tuple) and hasattr(bundle, "_fields")):
        raise PolicyError(f"policy {name!r}: Bundle must be its own NamedTuple class (the parameters and "
                            f"state its kernel reads), got {bundle!r}")
    for other in POLICIES.values():
        if getattr(other.policy, "Bundle", None) is bundle:
            raise PolicyError(f"policy {name!r}: its Bundle {bundle.__qualname__} is already the bundle of policy "
                                f"{other.name!r}; the game loop finds a policy's kernel by its bundle's class, so "
                                "each policy needs a class of its own")
    if not isinstance(getattr(cls, "choose_kernel", None), Dispatcher):
        raise PolicyError(f"policy {name!r}: choose_kernel must be a numba kernel (@njit) "
                            "choose(bundle, board, shape, preview, t, rules, spec, ws)")


# ------------------------------------------------------------------------------------------------
# Reading


def entries(shipped_only: bool = False) -> tuple[Entry, ...]:
    """The registered policies: those playing the known sequence first, each group by name."""
    return tuple(e for e in POLICIES.values() if e.shipped or not shipped_only)


def names(known_pieces: bool | None = None) -> tuple[str, ...]:
    """Names of the registered policies (in `entries` order); only those playing the known sequence
    (True) or unknown pieces (False) when ``known_pieces`` is given."""
    return tuple(e.name for e in entries() if known_pieces is None or e.known_pieces == known_pieces)


def get(name: str) -> Entry:
    """The policy ``name``; `PolicyError` naming the registered ones otherwise."""
    return POLICIES.get(name)


def sections(shipped_only: bool = False) -> dict[str, type[BaseModel]]:
    """key -> model of every section of a configuration, in the order `SolverConfig` lists them:
    for the policies of the known sequence, then of unknown pieces, the shared sections first, then
    the policies' own in `entries` order."""
    keyed = [((s.known_pieces is False, 0, s.key), s.key, s.model) for s in SECTIONS.values()
             if s.shipped or not shipped_only]
    keyed += [((not e.known_pieces, 1, e.name), e.name, e.settings) for e in entries(shipped_only)
              if e.settings is not None]
    return {key: model for _, key, model in sorted(keyed, key=lambda k: k[0])}


def config_model(shipped_only: bool = True) -> type[config.SolverKeys]:
    """A solver configuration schema built afresh (pydantic ``create_model``) for the registered
    policies; by default only the project's own (what the configuration reference documents,
    whatever a process has registered besides)."""
    policies = {e.name: e.known_pieces for e in entries(shipped_only)}
    return config.solver_model(config.registered_fields(policies, sections(shipped_only)))


#: the schema of the policies registered now (`schema`), None until it is first needed after a registration
_schema: type[config.SolverKeys] | None = None


def schema() -> type[config.SolverKeys]:
    """The solver configuration's model for every policy and section registered now, made on its
    first use after a registration (`config_model`) and kept until the next one, never changed. So
    the schema is made once when `discover` has imported every policy module of the project, and a
    policy registered later (a test's, a notebook's) is known to the next configuration made,
    through the `SolverConfig` every module imported; a configuration made before keeps the model it
    was made with."""
    global _schema
    made = _schema
    if made is None:
        made = _schema = config_model(shipped_only=False)
        copyreg.pickle(made, _pickled)
    return made


def _pickled(made: config.SolverKeys):
    """A configuration pickled as its data (its model is made at run time, found by no name),
    unpickled by the schema of the process that reads it, not checked against that machine."""
    return _unpickled, (made.model_dump(),)


def _unpickled(data: dict):
    return schema().model_validate(data, context=WRITTEN_ELSEWHERE)


def _changed() -> None:
    """A policy or section came or went: the next configuration is validated by a new schema."""
    global _schema
    _schema = None


class _Current(type):
    """The type of `SolverConfig`: the class stands for `schema()`. Calling it makes a
    configuration of that model; its attributes that are not dunders (``model_validate``,
    ``model_fields``, ...) are that model's; every configuration of a schema is an instance of it."""

    def __call__(cls, /, **data):
        return schema()(**data)

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(schema(), name)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, config.SolverKeys)


class SolverConfig(metaclass=_Current):
    """A solver run: which policy plays which pieces with which evaluator, and the settings of
    each registered policy (its section), validated by the schema of the policies registered now
    (`schema`): ``SolverConfig(policy="greedy", pieces=500)``, ``SolverConfig.model_validate(data)``."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        """As the type of another model's field (`optimizers.config.RunConfig.solver`): validated, when
        that model is, by the schema of the policies registered then (its errors under the field's
        key), dumped as the configuration's own model dumps it."""
        from pydantic_core import core_schema

        def validated(value, info):
            return value if isinstance(value, config.SolverKeys) else \
                schema().model_validate(value, context=info.context)

        def dumped(value, info):
            return value.model_dump(mode=info.mode)

        return core_schema.with_info_plain_validator_function(
            validated, serialization=core_schema.plain_serializer_function_ser_schema(dumped, info_arg=True))


#: the policies by name, each kept as its `Entry`; ``@register`` on a policy class joins it
POLICIES: Registry[Entry] = Registry("policy", error=PolicyError, entry=_entry, changed=_changed,
                                     order=lambda name, entry: (not entry.known_pieces, name))
#: the sections several policies read, by key (`register_section`)
SECTIONS: Registry[Section] = Registry("section", error=PolicyError, changed=_changed)
#: the decorator a policy class registers with
register = POLICIES.register
