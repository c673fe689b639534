"""The files of a run directory (`RunStore`), written so that a run killed at any moment can be
resumed; their rows are typed records (`optimizers.records`).

``evaluations.csv``, ``curves.jsonl`` (each curve as plain integers; an older run's encoded text
read through `fitness.decode_curve`) and ``rescore.csv`` are appended and flushed as each
evaluation finishes, a curve before its row (evaluations.csv is rewritten whole, sorted by
(generation, index), at the end of a generation); ``generations.csv``, ``best.yaml``,
``recommendation.yaml``, ``fitness.png`` and ``checkpoint.npz`` are rewritten atomically;
``provenance.json`` says where each session ran; `IN_PLAY` holds candidates' saved searches.

A line cut short by a kill is dropped when read back (the files are rewritten clean before a resume
appends); a NaN or infinite fitness, threshold or seconds, or a (generation, index) twice, is
`RunDamaged`; a resume holds evaluations.csv to the checkpoint (`restore.check_against`). In full:
docs/tuning.md, 'Tuning runs'.
"""

from __future__ import annotations

import csv
import io
import json
import math
import zlib
from pathlib import Path

import numpy as np

from engine.files import MAX_JSON_BYTES, MAX_TABLE_BYTES, ReadError, read_bytes, read_json, read_text, write_json, write_text
from engine.statefile import MAX_RUN_STATE_BYTES, StateError, legacy_problem, read_state, write_state

from .fitness import TuningRecord, decode_curve
from .records import GENERATION_COLUMNS, RECORD_COLUMNS, Evaluation, GenerationStats, Rescoring
from .space import Param

#: how far curves.jsonl is read: its integers take about as much as the memo holds in memory (8
#: bytes a piece or game of each simulated evaluation), which the run's memory check counts
MAX_CURVES_BYTES = 4 * MAX_TABLE_BYTES
#: decimals of the seconds and the statistics written (a millisecond; a thousandth of a point)
DECIMALS = 3
#: the run's state file (`engine.statefile`), what it says it holds, and the pickle of older versions
CHECKPOINT, CHECKPOINT_KIND, LEGACY_CHECKPOINT = "checkpoint.npz", "a run's checkpoint", "checkpoint.pkl"
#: the folder of a run directory where the candidates in play whose policy can save its search keep
#: it (``g<generation>-<config key>.npz``, an `engine.statefile` file; `optimizers.run_loop.RunLoop.simulate`)
IN_PLAY = "in-play"


class RunDamaged(ValueError):
    """A run directory whose files disagree or cannot be read; the message is one line saying which
    file, what is wrong and how to go on."""


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _bool(s: str) -> bool:
    if s not in ("True", "False"):
        raise ValueError(s)
    return s == "True"


def _opt(conv, s: str):
    return None if s == "" else conv(s)


def _finite(s: str) -> float:
    """A number a run writes as a finite float (a fitness, a threshold, seconds): NaN or an
    infinity is a damaged value, never one the run wrote."""
    v = float(s)
    if not math.isfinite(v):
        raise ValueError(s)
    return v


def curve_of(value) -> np.ndarray:
    """A curve as curves.jsonl holds it: a list of integers, or an older version's encoded text;
    ValueError otherwise (the line is then a damaged one)."""
    if isinstance(value, str):
        return decode_curve(value)
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise ValueError("a curve is a list of integers")
    return np.asarray(value, dtype=np.int64)


class RunStore:
    """The files of the run in ``run_dir`` whose space has ``params``. ``config``: the resolved run
    config as plain data, which every checkpoint keeps a copy of (a resume compares config.yaml
    with it); checkpoint.npz also keeps the sessions of provenance.json, to rebuild that file from."""

    def __init__(self, run_dir: str | Path, params: list[Param], config: dict | None = None):
        self.dir = Path(run_dir)
        self.params = params
        self.config = config
        #: provenance.json's sessions as last written or read (saved in the checkpoint too)
        self.sessions: list[dict] | None = None
        self.eval_columns = ["generation", "index", *[p.path for p in params], *RECORD_COLUMNS, "cached", "key"]
        self.rescore_columns = ["rank", "generation", "index", *[p.path for p in params], "tuned_fitness",
                                *RECORD_COLUMNS, "cached", "key", "tuned_key"]
        #: file name -> the line numbers its last read could not use (see `_read`)
        self.damaged: dict[str, list[int]] = {}
        #: file name -> the line number of each row its last read returned, in order (see `_read`)
        self.lines: dict[str, list[int]] = {}
        #: (generation, index) -> its line in evaluations.csv as last read (`read_evaluations`)
        self.slot_lines: dict[tuple[int, int], int] = {}

    # ------------------------------------------------------------------ paths
    @property
    def evaluations(self) -> Path:
        return self.dir / "evaluations.csv"

    @property
    def curves(self) -> Path:
        return self.dir / "curves.jsonl"

    @property
    def rescore(self) -> Path:
        return self.dir / "rescore.csv"

    @property
    def checkpoint(self) -> Path:
        return self.dir / CHECKPOINT

    @property
    def legacy_checkpoint(self) -> Path:
        """Where an older version kept the checkpoint, pickled (never read: `legacy_problem`)."""
        return self.dir / LEGACY_CHECKPOINT

    # ------------------------------------------------------------------ values
    def _value_text(self, p: Param, v) -> str:
        return json.dumps(v) if p.type == "choice" else _fmt(int(v) if p.type == "int" else float(v))

    def _value(self, p: Param, s: str):
        if p.type == "choice":
            return json.loads(s)
        return int(s) if p.type == "int" else float(s)

    def _values_texts(self, values: list) -> list[str]:
        return [self._value_text(p, v) for p, v in zip(self.params, values)]

    def _values(self, row: dict) -> list:
        return [self._value(p, row[p.path]) for p in self.params]

    @staticmethod
    def _record_texts(r: TuningRecord) -> list[str]:
        return [_fmt(float(r.fitness)), _fmt(int(r.score)), _fmt(int(r.pieces)), r.stop, _fmt(bool(r.aborted)),
                _fmt(r.abort_piece), _fmt(None if r.threshold is None else float(r.threshold)),
                f"{float(r.seconds):.{DECIMALS}f}"]

    @staticmethod
    def _record(row: dict) -> TuningRecord:
        return TuningRecord(fitness=_finite(row["fitness"]), score=int(row["score"]), pieces=int(row["pieces"]),
                      stop=row["stop"], aborted=_bool(row["aborted"]), abort_piece=_opt(int, row["abort_piece"]),
                      threshold=_opt(_finite, row["threshold"]), seconds=_finite(row["seconds"]))

    # ------------------------------------------------------------------ CSV plumbing
    @staticmethod
    def _line(fields: list[str]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(fields)
        return buf.getvalue()

    def _append(self, path: Path, columns: list[str], fields: list[str]) -> None:
        new = not path.exists()
        with open(path, "a", encoding="utf-8", newline="") as f:
            if new:
                f.write(self._line(columns))
            f.write(self._line(fields))
            f.flush()

    def _read(self, path: Path, columns: list[str], parse) -> list:
        """The rows of a CSV file this store writes, parsed; a line cut short at the end (a kill while
        appending) is dropped. Lines that cannot be read (a field that does not parse, a fitness,
        threshold or seconds that is NaN or infinite) are skipped and noted in ``damaged[name]``
        (their line numbers; 1 for a header that is not the expected one); ``lines[name]`` holds the
        line number of each row returned. `RunDamaged` when the file is not UTF-8 text or larger
        than `MAX_TABLE_BYTES` (`engine.files.read_text`)."""
        self.damaged[path.name] = []
        self.lines[path.name] = numbers = []
        if not path.exists():
            return []
        try:
            text = read_text(path, MAX_TABLE_BYTES, "a run's table")
        except ReadError as e:  # too large, not UTF-8 text, unreadable
            raise RunDamaged(str(e)) from None
        lines = text.split("\n")[:-1]  # the last piece is empty, or a line cut short
        if lines and lines[0] != ",".join(columns):
            self.damaged[path.name].append(1)
            return []
        out = []
        for number, line in enumerate(lines[1:], start=2):
            fields = next(csv.reader([line]), [])
            try:
                if len(fields) != len(columns):
                    raise ValueError(line)
                out.append(parse(dict(zip(columns, fields))))
                numbers.append(number)
            except (ValueError, KeyError, json.JSONDecodeError):
                self.damaged[path.name].append(number)
        return out

    def _rewrite(self, path: Path, columns: list[str], rows: list[list[str]]) -> None:
        write_text(path, self._line(columns) + "".join(self._line(r) for r in rows))

    # ------------------------------------------------------------------ evaluations
    def eval_fields(self, e: Evaluation) -> list[str]:
        return [str(e.generation), str(e.index), *self._values_texts(e.values), *self._record_texts(e.record),
                _fmt(bool(e.cached)), e.key]

    def append_evaluation(self, e: Evaluation) -> None:
        self._append(self.evaluations, self.eval_columns, self.eval_fields(e))

    def _parse_eval(self, row: dict) -> Evaluation:
        return Evaluation(generation=int(row["generation"]), index=int(row["index"]), values=self._values(row),
                          record=self._record(row), cached=_bool(row["cached"]), key=row["key"])

    def read_evaluations(self) -> list[Evaluation]:
        """The rows of evaluations.csv by (generation, index); `RunDamaged` naming both lines when a
        (generation, index) is there twice (a row is written once: which one is the run's cannot be
        told)."""
        rows = self._read(self.evaluations, self.eval_columns, self._parse_eval)
        self.slot_lines = {}
        for e, number in zip(rows, self.lines[self.evaluations.name]):
            first = self.slot_lines.setdefault(e.slot, number)
            if first != number:
                raise RunDamaged(f"{self.evaluations}: lines {first} and {number} are both generation {e.generation}'s "
                                 f"candidate {e.index}, whose row is written once; remove the one the run did not write, "
                                 "or restore the file")
        return sorted(rows, key=lambda e: e.slot)

    def rewrite_evaluations(self, rows: list[Evaluation] | None = None) -> list[Evaluation]:
        rows = self.read_evaluations() if rows is None else rows
        self._rewrite(self.evaluations, self.eval_columns, [self.eval_fields(e) for e in rows])
        return rows

    # ------------------------------------------------------------------ curves
    def append_curve(self, tag, key: str, curve) -> None:
        """A line of curves.jsonl: the evaluation's tag, config key and curve as plain integers
        (``pandas.read_json(path, lines=True)`` opens the file)."""
        line = json.dumps({"tag": tag, "key": key, "curve": [int(v) for v in curve]}, separators=(",", ":"))
        with open(self.curves, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()

    def _jsonl_text(self) -> str:
        """curves.jsonl's text, read no further than `MAX_TABLE_BYTES` (`RunDamaged` beyond); bytes
        that are not UTF-8 spoil only their line, which is skipped like any damaged line."""
        try:
            return read_bytes(self.curves, MAX_CURVES_BYTES, "a run's curves").decode("utf-8", errors="replace")
        except ReadError as e:
            raise RunDamaged(str(e)) from None

    def read_curves(self) -> dict:
        """{(tag, key): curve}."""
        out = {}
        if not self.curves.exists():
            return out
        text = self._jsonl_text()
        for line in text.split("\n")[:-1]:
            try:
                d = json.loads(line)
                out[(d["tag"], d["key"])] = curve_of(d["curve"])
            except (ValueError, KeyError, TypeError, zlib.error):
                continue
        return out

    def rewrite_curves(self) -> None:
        if not self.curves.exists():
            return
        text = self._jsonl_text()
        lines = text.split("\n")[:-1]
        good = []
        for line in lines:
            try:
                json.loads(line)
                good.append(line + "\n")
            except ValueError:
                continue
        write_text(self.curves, "".join(good))

    # ------------------------------------------------------------------ rescoring
    def rescore_fields(self, r: Rescoring) -> list[str]:
        return [str(r.rank), str(r.generation), str(r.index), *self._values_texts(r.values), _fmt(float(r.tuned_fitness)),
                *self._record_texts(r.record), _fmt(bool(r.cached)), r.key, r.tuned_key]

    def append_rescore(self, r: Rescoring) -> None:
        self._append(self.rescore, self.rescore_columns, self.rescore_fields(r))

    def _parse_rescore(self, row: dict) -> Rescoring:
        return Rescoring(rank=int(row["rank"]), generation=int(row["generation"]), index=int(row["index"]),
                         values=self._values(row), tuned_fitness=float(row["tuned_fitness"]),
                         record=self._record(row), cached=_bool(row["cached"]), key=row["key"],
                         tuned_key=row["tuned_key"])

    def read_rescore(self) -> list[Rescoring]:
        """The rows by rank (the first written of a rank if ever twice)."""
        rows = {r.rank: r for r in reversed(self._read(self.rescore, self.rescore_columns, self._parse_rescore))}
        return [rows[k] for k in sorted(rows)]

    def rewrite_rescore(self, rows: list[Rescoring]) -> None:
        self._rewrite(self.rescore, self.rescore_columns, [self.rescore_fields(r) for r in rows])

    # ------------------------------------------------------------------ generations, checkpoint
    def write_generations(self, history: list[GenerationStats]) -> None:
        def cell(v):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return ""
            return f"{v:.{DECIMALS}f}" if isinstance(v, float) else str(v)
        rows = [[cell(getattr(h, c)) for c in GENERATION_COLUMNS] for h in history]
        self._rewrite(self.dir / "generations.csv", GENERATION_COLUMNS, rows)

    def add_provenance(self, session: dict) -> None:
        """provenance.json: one entry per session of the run (its start, then each resume), each
        `engine.provenance.provenance` plus what the session did (``resumed_at``: None for the start)."""
        path = self.dir / "provenance.json"
        sessions = self.read_provenance()
        if sessions is None:  # damaged: rebuilt from the checkpoint's copy, the new session says so
            problem = f"provenance.json could not be read ({self.provenance_problem})"
            sessions = list(self.sessions or [])
            session = {**session, "rebuilt": f"{problem}: its {len(sessions)} earlier session(s) rebuilt from "
                                             "checkpoint.npz's copy" if self.sessions is not None else
                       f"{problem} and checkpoint.npz holds no copy of it: its earlier sessions are lost"}
        self.sessions = [*sessions, session]
        write_json(path, self.sessions)

    def read_provenance(self) -> list[dict] | None:
        """provenance.json's sessions ([] when there is no file); None when it is damaged (not JSON,
        not a list of sessions, too large, unreadable: `provenance_problem` says which)."""
        path = self.dir / "provenance.json"
        self.provenance_problem = None
        if not path.exists():
            return []
        try:
            sessions = read_json(path, MAX_JSON_BYTES, "a provenance file")
        except ReadError as e:
            self.provenance_problem = e.problem
            return None
        if not isinstance(sessions, list) or not all(isinstance(s, dict) for s in sessions):
            self.provenance_problem = "not a list of sessions"
            return None
        return sessions

    def save_checkpoint(self, state: dict) -> None:
        """checkpoint.npz: the run's state as data (`optimizers.state.RunState.state_dict`), with a
        copy of the run's config and of provenance.json's sessions."""
        extra = {"config": self.config} if self.config is not None else {}
        if self.sessions is not None:
            extra["provenance"] = self.sessions
        write_state(self.checkpoint, {**state, **extra}, CHECKPOINT_KIND)

    def load_checkpoint(self) -> dict | None:
        """The checkpoint's tree (None when there is none; `optimizers.state.RunState.from_state`
        makes the state of it); `RunDamaged`, saying how to go on, when it cannot be read, and for a
        checkpoint an older version pickled (`engine.statefile.legacy_problem`)."""
        if not self.checkpoint.exists() and not self.checkpoint.is_symlink():
            if self.legacy_checkpoint.exists() or self.legacy_checkpoint.is_symlink():
                raise RunDamaged(f"{self.legacy_checkpoint}: {legacy_problem(self.dir)}")
            return None
        try:
            data = read_state(self.checkpoint, CHECKPOINT_KIND, MAX_RUN_STATE_BYTES)
        except StateError as e:
            raise RunDamaged(f"{e}; {self.checkpoint_advice}") from None
        if not isinstance(data, dict) or "generation" not in data:
            raise RunDamaged(f"{self.checkpoint}: not a run's checkpoint; {self.checkpoint_advice}")
        saved = data.get("provenance")
        if self.sessions is None and isinstance(saved, list) and all(isinstance(s, dict) for s in saved):
            self.sessions = list(saved)
        return data

    @property
    def checkpoint_advice(self) -> str:
        """How to go on past a damaged checkpoint (the end of a `RunDamaged` line)."""
        return (f"move it aside (mv {CHECKPOINT} {CHECKPOINT}.bad) and resume again: the run then starts over from "
                "evaluations.csv, simulating none of the evaluations it holds")
