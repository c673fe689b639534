"""A run's state between generations, as typed records.

checkpoint.npz holds it as data (`RunState.state_dict`, an `engine.statefile` file): ``generation``
(the next one), ``optimizer`` (the tuner's `state_dict`, its random states included),
``early_abort`` and ``noise`` (theirs; ``noise`` None unless the run's ``noise`` or ``restart``
section is on), ``history`` (a mapping per finished generation, the columns of generations.csv),
``best`` and ``rescored`` (a mapping each, or None) and ``done``. `RunState.from_state` makes the
tuner, the pruner and the noise state again from the run's config and gives them their state back,
checking every value it takes in.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.statefile import Fields, StateError
from engine.validation import show

from ._base import Tuner
from .config import RunConfig
from .early_abort import EarlyAbort
from .instances import training_count
from .noise import Noise
from .racing import Entrant
from .records import Best, GenerationStats, Rescored
from .store import RunDamaged
from .validation import Validated


@dataclass
class RunState:
    """What a run carries from one generation to the next (see the module docstring)."""

    generation: int
    optimizer: Tuner
    early_abort: EarlyAbort
    history: list[GenerationStats] = field(default_factory=list)
    best: Best | None = None
    rescored: Rescored | None = None
    done: bool = False
    noise: Noise | None = None
    #: a racing run's elites, carried into the next race (`optimizers.racing`)
    elites: list[Entrant] = field(default_factory=list)
    #: the validation on held-out instances, once played (`optimizers.validation`)
    validated: Validated | None = None
    #: a racing run's training instances played so far (`optimizers.racing.race_order`)
    instances_seen: int = 0

    @classmethod
    def from_state(cls, f: Fields, config, space) -> "RunState":
        """The state `state_dict` saved (``f``), its tuner, pruner and noise state made from the run's
        ``config`` and ``space``; `engine.statefile.StateError` naming the key of a value that is
        not what it should be."""
        from .early_abort import EarlyAbort

        optimizer = Tuner.restore(space, f.sub("optimizer"))
        early_abort = EarlyAbort.for_run(config)
        early_abort.load_state(f.sub("early_abort"))
        noise = Noise.for_run(config, space)
        if (noise is None) != (f.get("noise") is None):
            f.fail("noise", "saved by a run whose noise and restart sections differ from this config's")
        if noise is not None:
            noise.load_state(f.sub("noise"))
        history = [_typed(h, GenerationStats, finite=False) for h in f.subs("history")]
        elites = [_typed(e, Entrant) for e in f.subs("elites")] if f.get("elites") is not None else []
        if len(elites) > (config.race.survivors if config.race is not None else 0):
            f.fail("elites", f"{len(elites)} elites, more than this config's race keeps")
        for k, e in enumerate(elites):
            if len(e.values) != len(space.params):
                f.fail(f"elites.{k}.values", f"{len(e.values)} values for a space of {len(space.params)} parameters")
        validated = None if f.get("validated") is None else _typed(f.sub("validated"), Validated)
        limit = training_count(config)
        seen = f.int("instances_seen", 0, limit) if f.get("instances_seen") is not None else 0
        if validated is not None:
            for key in ("pick", "start"):
                values = getattr(validated, key)
                if len(values) != validated.instances or not all(
                        isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                    f.fail(f"validated.{key}", f"not {validated.instances} finite numbers")
        return cls(generation=f.int("generation", 0, optimizer.generations), optimizer=optimizer,
                   early_abort=early_abort, history=history, best=_record(f, "best", Best),
                   rescored=_record(f, "rescored", Rescored), done=f.bool("done"), noise=noise, elites=elites,
                   validated=validated, instances_seen=seen)

    @classmethod
    def from_checkpoint(cls, tree: dict, store, config, space) -> "RunState":
        """The state of the checkpoint ``tree`` that ``store`` (`optimizers.store.RunStore`) read:
        its copy of the run's config checked against ``config`` (`check_against_checkpoint`), then
        `from_state`; `RunDamaged` in one line, saying how to go on, otherwise."""
        check_against_checkpoint(config, tree, store.dir / "config.yaml")
        try:
            return cls.from_state(Fields(tree, store.checkpoint), config, space)
        except StateError as e:
            raise RunDamaged(f"{e}; {store.checkpoint_advice}") from None

    def state_dict(self) -> dict:
        """The state as checkpoint.npz holds it (the module docstring): the only form of it as data."""
        return {"generation": self.generation, "optimizer": self.optimizer.state_dict(),
                "early_abort": self.early_abort.state_dict(), "history": [h.as_dict() for h in self.history],
                "best": None if self.best is None else asdict(self.best),
                "rescored": None if self.rescored is None else asdict(self.rescored), "done": self.done,
                "noise": None if self.noise is None else self.noise.state_dict(),
                "elites": [asdict(e) for e in self.elites],
                "validated": None if self.validated is None else asdict(self.validated),
                "instances_seen": self.instances_seen}


def _record(f: Fields, key: str, cls):
    """The `Best` or `Rescored` under ``key`` (None when there is none), its fields checked (a
    re-scored recommendation has no tuned fitness: NaN)."""
    return None if f.get(key) is None else _typed(f.sub(key), cls, nan={"tuned_fitness"})


def _typed(r: Fields, cls, finite: bool = True, nan: set = frozenset()):
    """The dataclass ``cls`` made from ``r``, each field of the type it declares (``int``,
    ``float``, ``str``, ``list``, or one of them ``| None``); floats finite with ``finite``, or
    finite or NaN for the fields named in ``nan``."""
    values = {}
    for name, kind in cls.__annotations__.items():
        kind, optional = (kind[:-len(" | None")], True) if kind.endswith(" | None") else (kind, False)
        if optional and r.get(name) is None:
            values[name] = None
        elif kind == "float":
            values[name] = r.float(name, finite=finite and name not in nan)
            if name in nan and math.isinf(values[name]):
                r.fail(r.name(name), f"{values[name]} is neither a finite number nor NaN")
        elif kind == "int":
            values[name] = r.int(name)
        elif kind == "str":
            values[name] = r.str(name)
        elif kind == "list":
            values[name] = r.list(name)
        else:
            raise TypeError(f"{cls.__name__}.{name}: a field of type {kind} is not read from a state")
    return cls(**values)


#: what may differ between config.yaml and the checkpoint's copy (a resume may change it): the
#: workers, and where new runs are made (a run moved to another folder, into results/, says so)
RESUME_MAY_CHANGE = ("parallel", "runs_dir")


def check_against_checkpoint(config: RunConfig, checkpoint: dict, path: Path) -> None:
    """`RunDamaged` naming the first key where ``config`` (the run's config.yaml, ``path``, as it
    is now) differs from the copy of the run's config its ``checkpoint`` keeps
    (`RunStore.save_checkpoint`): an edit after the run began would score its later candidates at
    another fidelity. The run loop checks it once it holds the run's lock, before it takes any of
    the checkpoint's state in."""
    saved = checkpoint.get("config")
    if isinstance(saved, dict):
        saved = dict(saved)
    else:
        raise RunDamaged(f"{path.parent / 'checkpoint.npz'}: config: missing (the copy of the run's config every "
                          "checkpoint keeps)")
    now = config.model_dump(mode="json")
    for key in RESUME_MAY_CHANGE:
        saved.pop(key, None)
        now.pop(key, None)
    found = _first_difference(saved, now)
    if found is not None:
        key, before, after = found
        raise RunDamaged(f"{path}: {key}: {show(after) if after is not _MISSING else 'missing'} here, "
                          f"{show(before)} in the run's checkpoint: config.yaml was edited after the run began; "
                          "only parallel.* and runs_dir may change when resuming (the run must end as it would have), so put "
                          "it back")


_MISSING = object()


def _first_difference(saved: Any, now: Any, prefix: str = "") -> tuple[str, Any, Any] | None:
    """(dotted key, value saved, value now) of the first value of ``saved`` that ``now`` holds
    otherwise or lacks (``_MISSING``); keys only ``now`` has (a newer schema's defaults) are not
    compared. None when they agree."""
    if isinstance(saved, dict) and isinstance(now, dict):
        for k, v in saved.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if k not in now:
                return key, v, _MISSING
            found = _first_difference(v, now[k], key)
            if found is not None:
                return found
        return None
    if isinstance(saved, list) and isinstance(now, list) and len(saved) == len(now):
        for i, (a, b) in enumerate(zip(saved, now)):
            found = _first_difference(a, b, f"{prefix}.{i}" if prefix else str(i))
            if found is not None:
                return found
        return None
    return None if saved == now else (prefix or "(top level)", saved, now)
