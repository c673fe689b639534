"""The player of the standard benchmark and its games' pieces: the 1-ply player of an evaluator
(`make`), the one-line error (`UserError`), a series' summary (`summarize`, `settle`) and the
state file of a game in play (`inplay_path`, `read_state`).
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np

from engine import get_rules
from engine.config import ConfigError
from engine.files import MAX_JSON_BYTES, ReadError, YamlError, load_yaml, read_json
from engine.validation import show
from evaluators import EvaluatorError, load_evaluator
from solver import SolverConfig, load_solver_config
from solver.online.games import GameCheckpoint
from solver.online.intervals import mean_ci95, survival_summary
from solver.registry import get as get_policy

ROOT = Path(__file__).resolve().parents[2]


class UserError(ValueError):
    """A problem with the command line or a file: one line naming the option or file."""


def evaluator_of(source: str):
    """What ``--evaluator`` names, as `load_evaluator` takes it: a preset name or an evaluator file as
    given, or the ``evaluator`` of a solver configuration (a file with ``policy`` and ``evaluator``
    keys: a tuning run's best.yaml or recommendation.yaml), read by `load_solver_config` (a relative
    evaluator path is the configuration's folder's)."""
    path = Path(source)
    if not path.is_file():
        return source
    try:
        data = load_yaml(path)
        if isinstance(data, dict) and "policy" in data and "evaluator" in data:
            return load_solver_config(path).evaluator
    except YamlError as e:
        raise UserError(f"--evaluator: {source}: {e.problem}") from None
    except ConfigError as e:
        raise UserError(f"--evaluator: {e}") from None
    return source


def make(evaluator: str, rules_name: str, height: int | None):
    """The 1-ply player of ``evaluator`` (`evaluator_of`) under the preset ``rules_name``, on
    ``height`` rows if given; `UserError` naming the option when it cannot be made."""
    rules = get_rules(rules_name)
    if height is not None and height != rules.height:
        try:
            rules = replace(rules, name=f"{rules.name}-{rules.width}x{height}", height=height)
        except ValueError as e:
            raise UserError(f"--height {height}: {str(e).partition(': ')[2] or e}") from None
    evaluator = evaluator_of(evaluator)
    try:
        player = load_evaluator(evaluator)
        config = SolverConfig(policy="one_ply", rules=rules_name, evaluator=evaluator, pieces=1, threads=1)
        return get_policy("one_ply").policy(config, rules, player), rules
    except (EvaluatorError, ValueError) as e:
        raise UserError(f"--evaluator: {e}") from None


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def at_least(args, **bounds: int) -> None:
    """`UserError` for an option below its bound (``games=1``: ``--games`` at least 1)."""
    for name, low in bounds.items():
        value = getattr(args, name)
        if value < low:
            raise UserError(f"--{name} {value}: must be at least {low}")


def summarize(out: dict) -> None:
    """The series' figures from its games, in place: n, mean, std, ci95, capped, cpu_seconds."""
    rows = np.array([x["rows"] for x in out["games"]])
    ci = mean_ci95(rows)
    out.update(n=len(rows), mean=round(float(rows.mean()), 1), std=round(float(rows.std(ddof=1)), 1) if len(rows) > 1
               else None, ci95=None if ci is None else [round(ci[0], 1), round(ci[1], 1)],
               capped=sum(x["end"] == "capped" for x in out["games"]),
               cpu_seconds=round(sum(x["cpu_seconds"] for x in out["games"]), 1))
    if out["capped"]:  # the mean of uncapped games, the capped ones censored (a survival model)
        out["survival"] = survival_summary(rows, [x["pieces"] for x in out["games"]],
                                           [x["end"] != "capped" for x in out["games"]])
    else:
        out.pop("survival", None)


_players: dict = {}


STATE_KEYS = ("evaluator", "rules", "height", "cap", "seed")


def inplay_path(path: Path) -> Path:
    """The folder of the games in play of the series file ``path``: ``<path>.inplay``."""
    return path.with_name(path.name + ".inplay")


def read_state(path: Path, task: dict) -> tuple[GameCheckpoint, float]:
    """The game state in ``path`` (`play_one`'s ``keep``) and the CPU seconds it had taken, checked
    against ``task``: `UserError` naming the file and the problem."""
    try:
        data = read_json(path, MAX_JSON_BYTES, "a game's state")
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        for k in STATE_KEYS:
            if data.get(k) != task[k]:
                raise ValueError(f"{k}: {show(data.get(k))}, but the series' is {show(task[k])}")
        cpu = data.get("cpu_seconds")
        if type(cpu) not in (int, float) or cpu < 0:
            raise ValueError(f"cpu_seconds: should be a number >= 0, got {show(cpu)}")
        state = GameCheckpoint.from_json(data.get("game"))
        if state.seed != task["seed"]:
            raise ValueError(f"game: seed {state.seed}, but the file is seed {task['seed']}'s")
    except ReadError as e:
        raise UserError(str(e)) from None
    except ValueError as e:
        raise UserError(f"{path}: not a game state of this series ({e}); remove it to play that game from its "
                        "start") from None
    return state, float(cpu)


def settle(out: dict, first: int) -> None:
    """Move the games of ``out["ahead"]`` that now follow the series' games (in seed order) without a
    gap (seeds ``first``, ``first`` + 1, ...) into ``out["games"]``, in seed order (the cost is that
    of ``ahead``, not of the series)."""
    ahead = {x["seed"]: x for x in out.get("ahead", [])}
    nxt = out["games"][-1]["seed"] + 1 if out["games"] else first
    while nxt in ahead:
        out["games"].append(ahead.pop(nxt))
        nxt += 1
    out["ahead"] = sorted(ahead.values(), key=lambda x: x["seed"])
