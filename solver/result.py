"""What a solve returns, typed: `Outcome`, the fields every result has, and its kinds: `SolveResult`,
the path a policy found along the known sequence (with a policy's own `Report`, if it keeps one);
for a policy of unknown pieces, a series of seeded games (`solver.online.games.GamesSeries`) or of
splitting estimates (`solver.online.splitting.SplittingSeries`). Each kind's ``summary()`` is its
``summary.json``.

summary.json has one schema, used to write it and to read it back: `OutcomeSummary` (the fields
every result writes, `Outcome.summary`) and `SolveSummary` (the file as `experiments.solve` writes
it, `solve_summary`: those fields, the curves, the configuration and the provenance). `read_summary`
validates a file by it, so a reader (`experiments.view`, `experiments.results`) meets a wrong type
as one line naming the file and the field, never as an exception of its own arithmetic."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import (ConfigDict, Field, ValidationError, ValidationInfo, create_model, field_validator,
                      model_validator)

from engine.files import MAX_JSON_BYTES, ReadError, read_json
from engine.outcome import Stop
from engine.validation import WRITTEN_ELSEWHERE, Strict, problem, show


@dataclass(kw_only=True)
class Outcome:
    """What every solve returns.

    - ``score``: the result's score (a path's points; a series' mean, rounded); ``pieces``: pieces
      placed (a series: over all its games or estimates);
    - ``best_by_step``: the curve early abort compares with its threshold, one value a step: the
      best score in the search after each piece of the known sequence, or a series' running mean
      after each game or estimate;
    - ``clear_kinds``: clear events by rows cleared, index 1..4 (index 0 unused);
    - ``stop``: why it stopped: ``done``, ``stuck`` (no placement survives), ``spawn_blocked``,
      ``aborted`` (below the threshold curve, see ``abort_piece`` and ``abort_threshold``: the
      step, 1-based, and the value it fell below) or ``interrupted`` (Ctrl-C: the best found so far);
    - ``nodes``: positions the search valued (0 for a series);
    - ``seconds``: wall time of the search, kernels already compiled or loaded;
    - ``record``, ``end``: the contest record and the project replayer's verdict on it (a path's,
      filled in by `solver.record.attach_record`; a series has none).
    """

    score: int
    pieces: int
    best_by_step: np.ndarray
    clear_kinds: tuple
    stop: str = Stop.DONE.label
    abort_piece: int | None = None
    abort_threshold: float | None = None
    nodes: int = 0
    seconds: float = 0.0
    record: str | None = None
    end: str | None = None

    @property
    def aborted(self) -> bool:
        return self.stop == Stop.ABORTED.label

    def summary(self) -> dict:
        """A JSON-ready dict (curves as lists): summary.json's fields (`OutcomeSummary`)."""
        return OutcomeSummary(
            score=int(self.score),
            pieces=int(self.pieces),
            end=self.end,
            stop=self.stop,
            abort_piece=None if self.abort_piece is None else int(self.abort_piece),
            abort_threshold=None if self.abort_threshold is None else float(self.abort_threshold),
            clears={str(k): int(self.clear_kinds[k]) for k in range(1, 5)},
            nodes=int(self.nodes),
            seconds=round(float(self.seconds), 3),
        ).model_dump()


class Report:
    """A policy's own account of its search, beside its path (`SolveResult.report`): a typed
    dataclass of its kind, whose ``summary()`` is summary.json's section ``key`` (the policy's name)."""

    key: ClassVar[str]
    #: the sittings a saved search ran in, oldest first (each with its ``seconds``): a resumable
    #: policy's report overrides it; a search made in one go has none
    sittings: tuple = ()

    def summary(self) -> dict:
        raise NotImplementedError


@dataclass(kw_only=True)
class SolveResult(Outcome):
    """What a policy found along the known sequence (every field of `Outcome`, and):

    - ``score_by_step[t]``: the path's score after its piece t + 1 (length ``pieces``);
      ``best_by_step[t]`` the best score present in the search after piece t + 1 (a beam layer's
      maximum; the path's own score for greedy and lookahead);
    - ``placements``: (pieces, 3) array of (x, y, state), one per piece;
    - ``report``: the policy's own `Report` (`backsearch`, `profile_dp`, `segment`), else None;
    - ``seconds``: wall time of the search (`Policy.run` warms the kernels up first).
    """

    score_by_step: np.ndarray
    placements: np.ndarray
    report: Report | None = None

    def summary(self) -> dict:
        out = {**super().summary(),
               "score_by_step": [int(v) for v in self.score_by_step],
               "best_by_step": [int(v) for v in self.best_by_step]}
        if self.report is not None:
            out[self.report.key] = self.report.summary()
        return out


# ------------------------------------------------------------------------------------------------
# summary.json's schema

#: the keys of ``clears``: clear events by rows cleared
CLEAR_KEYS = ("1", "2", "3", "4")


class OutcomeSummary(Strict):
    """summary.json's fields of every result (`Outcome` says what each means), as `Outcome.summary`
    writes them: strict (a number is not a string, NaN or an infinity; an integer not a float, nor
    one beyond 64 bits: `engine.validation.Strict`)."""

    model_config = ConfigDict(strict=True)

    score: int
    pieces: int = Field(ge=0)
    end: str | None
    stop: str
    abort_piece: int | None = Field(ge=0)
    abort_threshold: float | None
    clears: dict[str, int]
    nodes: int = Field(ge=0)
    seconds: float = Field(ge=0)

    @field_validator("clears")
    @classmethod
    def _clear_kinds(cls, v: dict[str, int]) -> dict[str, int]:
        if sorted(v) != list(CLEAR_KEYS):
            raise ValueError(f"expected the keys {', '.join(CLEAR_KEYS)} (clears by rows), got {show(sorted(v))}")
        for k in CLEAR_KEYS:
            if v[k] < 0:
                raise ValueError(f"{k}: a count of clears, got {v[k]}")
        return v


class _SummaryConfigBase(Strict):
    """The solver configuration a summary.json records (`SolveSummary.config`): the keys every
    solve has, typed as `solver.config.SolverKeys` types them, and the played policy's section,
    validated by its settings model (`solver.registry`), without the checks against this machine
    (`engine.validation.WRITTEN_ELSEWHERE`: it may come from a larger one). The other sections are
    kept as they are: a configuration written by an older workbench may name keys since moved
    there, and nothing the solve did depends on them."""

    model_config = ConfigDict(strict=True, extra="allow")

    @model_validator(mode="after")
    def _policy_section(self, info: ValidationInfo):
        from . import registry

        model = registry.sections().get(self.policy)
        extra = self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}
        if model is None:  # a policy not registered here: its section is not read
            return self
        if self.policy not in extra:
            raise ValueError(f"{self.policy}: missing key (the played policy's section)")
        try:  # (as JSON: strict, a list is read as the tuple a field may hold)
            extra[self.policy] = model.model_validate_json(json.dumps(extra[self.policy]), strict=True,
                                                           context={**WRITTEN_ELSEWHERE, **(info.context or {})})
        except ValidationError as e:
            key, msg = problem(e, model)
            raise ValueError(f"{self.policy}: {msg}" if key == "(top level)" else f"{self.policy}.{key}: {msg}") \
                from None
        return self

    def section(self, name: str) -> Any:
        """The section ``name``: the played policy's a validated model, another as it was written."""
        return (self.__pydantic_extra__ or {}).get(name)


@functools.cache
def _summary_config() -> type[_SummaryConfigBase]:
    from .config import SolverKeys

    return create_model("SummaryConfig", __base__=_SummaryConfigBase, __module__=__name__,
                        **{name: (field.annotation, field) for name, field in SolverKeys.model_fields.items()})


class SolveSummary(OutcomeSummary):
    """summary.json as `experiments.solve` writes it (`solve_summary`): `OutcomeSummary`'s fields,
    the curves (``score_by_step`` of a path, ``best_by_step``: `SolveResult`), the ``config``
    (`_SummaryConfigBase`) and the ``provenance`` (`engine.provenance`; older summaries have none).
    The kinds' own sections (a policy's report, a series' ``games`` or ``splitting``) are kept as
    written; a report's ``seconds_total`` (the sum of a saved search's sittings) is read as seconds."""

    model_config = ConfigDict(extra="allow")

    score_by_step: list[int] | None = None
    best_by_step: list[int] | None = None
    config: Any
    provenance: dict[str, Any] | None = None

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, v, info: ValidationInfo):
        if not isinstance(v, dict):
            raise ValueError(f"expected a mapping (the solver configuration), got {_json_kind(v)}")
        model = _summary_config()
        try:
            return model.model_validate(v, context=info.context)
        except ValidationError as e:
            key, msg = problem(e, model)
            raise ValueError(msg if key == "(top level)" else f"{key}: {msg}") from None

    @model_validator(mode="after")
    def _sittings(self):
        for key, section in (self.__pydantic_extra__ or {}).items():
            if isinstance(section, dict) and "seconds_total" in section:
                v = section["seconds_total"]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    raise ValueError(f"{key}.seconds_total: expected seconds (a finite number, at least 0), "
                                     f"got {show(v)}")
        return self

    @property
    def search_seconds(self) -> float:
        """The search's seconds: over all its sittings for a saved search (its report's
        ``seconds_total``), else ``seconds``."""
        for section in (self.__pydantic_extra__ or {}).values():
            if isinstance(section, dict) and "seconds_total" in section:
                return float(section["seconds_total"])
        return self.seconds

    def section(self, name: str) -> Any:
        """A kind's own section (``segment``, ``games``, ...) as written, or None."""
        return (self.__pydantic_extra__ or {}).get(name)


def solve_summary(result: Outcome, config, provenance: dict) -> dict:
    """summary.json's content for ``result`` of a solve of ``config`` (a `solver.SolverConfig`),
    validated by the schema it is read back by (`SolveSummary`)."""
    data = {**result.summary(), "config": config.model_dump(mode="json"), "provenance": provenance}
    SolveSummary.model_validate(data, context=WRITTEN_ELSEWHERE)
    return data


def read_summary(path: str | Path, limit: int = MAX_JSON_BYTES) -> SolveSummary:
    """The summary.json at ``path`` (`engine.files.read_json`), validated by `SolveSummary`;
    `engine.files.ReadError` naming the file, and the field, when it is not one."""
    data = read_json(path, limit, "a summary")
    if not isinstance(data, dict):
        raise ReadError(path, f"not a solve's summary: {_json_kind(data)}, not a JSON object")
    try:
        return SolveSummary.model_validate(data, context=WRITTEN_ELSEWHERE)
    except ValidationError as e:
        key, msg = problem(e, SolveSummary)
        raise ReadError(path, f"{key}: {msg}") from None


def _json_kind(v: Any) -> str:
    return {list: "a list", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(v), "a number")
