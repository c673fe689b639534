"""``bench_standard.py --versus``: MdpTetris's ``mdptetris_play_games`` beside our games, whole
processes, rows per CPU second (`VERSUS`, `VERSUS_RULES`, `MDPTETRIS_FEATURES`: what is checked
to be the same game first; `run_timed` times a whole process).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from engine import get_rules
from engine.files import MAX_CONFIG_BYTES, ReadError, read_text
from evaluators import EvaluatorError, load_evaluator
from evaluators.registry import canonical

from .players import UserError, at_least, commit

#: the benchmark's script, whose ``games`` our side of a pair runs
SCRIPT = Path(__file__).resolve().parents[1] / "bench_standard.py"

#: what --versus compares (``--only`` names one): our evaluator, MdpTetris's feature file for the
#: same player (in its data/features), the board's height (10 columns) and the games each process
#: plays (``--height``, ``--games`` replace the last two)
VERSUS = {"dellacherie": ("dellacherie", "dellacherie_initial.dat", 14, 200),
          "bcts": ("bcts", "record_du.dat", 10, 1000)}

#: MdpTetris's feature ids (its ``FeatureID``, include/feature_policy.h) for the features our
#: players weigh (docs/benchmark-standard.md, "Features and players")
MDPTETRIS_FEATURES = {1: "landing_height_zero_based", 2: "eroded_cells", 3: "row_transitions",
                      4: "column_transitions", 5: "holes", 6: "wells_empty_below", -1: "hole_depth",
                      -2: "rows_with_holes"}

#: the rules our side plays: MdpTetris's simplified game as ``mdptetris_play_games`` builds it
#: (``new_game(0, width, height, 0, "pieces4.dat", NULL)`` in its src/play_games.c: drops only, no
#: preview, a point per row, ``allow_lines_after_overflow`` 0, our overflow rule "end")
VERSUS_RULES = "standard"


#: the first seed of our side's games (run i plays seeds VERSUS_SEED + i * games onwards)
VERSUS_SEED = 1000


def our_command(evaluator: str, height: int, n: int, seed: int, series: Path) -> list[str]:
    """Our side of a ``--versus`` pair: `SCRIPT`'s ``games``, one thread, in a new process."""
    return [sys.executable, str(SCRIPT), "games", "--rules", VERSUS_RULES, "--evaluator", evaluator,
            "--height", str(height), "--games", str(n), "--seed", str(seed), "--json", str(series), "--force"]


def peer(path: Path, features: list[str]) -> tuple[Path, Path]:
    """MdpTetris's ``mdptetris_play_games`` and its data folder from ``--versus PATH``: its checkout
    built in place (PATH/src/mdptetris_play_games, PATH/data), or the program itself (its data
    folder then beside its folder); `UserError` when either, its pieces or one of ``features``
    (files of data/features) is missing."""
    if path.is_dir():
        program, data = path / "src" / "mdptetris_play_games", path / "data"
    else:
        program, data = path, path.resolve().parent.parent / "data"
    if not program.is_file() or not os.access(program, os.X_OK):
        raise UserError(f"--versus {path}: no program {program} (build MdpTetris first: docs/benchmark-standard.md)")
    for need in ["pieces4.dat", *(f"features/{name}" for name in features)]:
        if not (data / need).is_file():
            raise UserError(f"--versus {path}: {data / need} is missing (MdpTetris's data folder)")
    return program.resolve(), data


def feature_file(path: Path) -> dict[str, float]:
    """The player of MdpTetris's feature file ``path`` in our feature names (`MDPTETRIS_FEATURES`):
    its weights; `UserError` naming the file when it is not a fixed-weight player ``--versus``
    can compare: a reward function other than 0 (none), a game-over value other than -1 (a move that
    ends the game valued -1e100, as ours never plays one unless every move does), or a feature we
    do not have."""
    try:
        words = read_text(path, MAX_CONFIG_BYTES, "a feature file").split()
    except ReadError as e:
        raise UserError(str(e)) from None
    try:
        reward, gameover, n = (int(w) for w in words[:3])
        pairs = [(int(words[3 + 2 * i]), float(words[4 + 2 * i])) for i in range(n)]
    except (ValueError, IndexError):
        raise UserError(f"{path}: not a MdpTetris feature file (reward function, game-over value, number of "
                        "features, then a feature id and a weight per feature)") from None
    if reward != 0 or gameover != -1:
        raise UserError(f"{path}: reward function {reward}, game-over value {gameover}: --versus compares "
                        "players with reward function 0 and game-over value -1 only")
    unknown = sorted({i for i, _ in pairs} - set(MDPTETRIS_FEATURES))
    if unknown:
        raise UserError(f"{path}: feature id {unknown[0]}: not one of ours (MDPTETRIS_FEATURES)")
    weights: dict[str, float] = {}
    for i, w in pairs:
        weights[MDPTETRIS_FEATURES[i]] = weights.get(MDPTETRIS_FEATURES[i], 0.0) + w
    return weights


def same_player(name: str, evaluator: str, path: Path, height: int) -> None:
    """`UserError` unless our ``games`` plays ``evaluator`` on 10 x ``height`` as ``mdptetris_play_games``
    plays the feature file ``path``: the same rules (`VERSUS_RULES`), MdpTetris's tie rule (a move
    replaces the best so far only if it is better, so the first best in (orientation, column)
    order wins: our ``state_then_column``), and the same features with the same weights."""
    rules = get_rules(VERSUS_RULES)
    try:
        rules = replace(rules, height=height)
    except ValueError as e:
        raise UserError(f"--height {height}: {str(e).partition(': ')[2] or e}") from None
    if (rules.width, rules.placement, rules.overflow, rules.preview, rules.score_table, rules.score_by_cells) != \
            (10, "drop", "end", False, (0, 1, 2, 3, 4), False):
        raise UserError(f"rules {VERSUS_RULES!r} are no longer MdpTetris's simplified game with "
                        "allow_lines_after_overflow 0 (VERSUS_RULES)")
    try:
        ours = load_evaluator(evaluator)
    except EvaluatorError as e:
        raise UserError(f"--only {name}: {e}") from None
    if ours.tie_break != "state_then_column":
        raise UserError(f"--only {name}: {evaluator} breaks ties by {ours.tie_break}, MdpTetris by the first "
                        "(orientation, column): state_then_column")
    mine = {canonical(k): t.weight for k, t in ours.weights.items() if t.weight != 0}
    if any(t.table is not None or t.delta for t in ours.weights.values()):
        raise UserError(f"--only {name}: {evaluator} has a table or delta term, which MdpTetris's files cannot hold")
    theirs = {k: w for k, w in feature_file(path).items() if w != 0}
    if mine.keys() != theirs.keys() or any(not math.isclose(mine[k], theirs[k], rel_tol=1e-9) for k in mine):
        differ = sorted(k for k in mine.keys() | theirs.keys()
                        if not math.isclose(mine.get(k, 0.0), theirs.get(k, 0.0), rel_tol=1e-9))
        differences = ", ".join(f"{k} {theirs.get(k, 0.0):g} against our {mine.get(k, 0.0):g}" for k in differ)
        raise UserError(f"{path}: not {evaluator}'s player: {differences}")


def run_timed(command: list[str], who: str, cwd: Path | None = None, keep_output: bool = False,
              core: int | None = None) -> tuple[str, float]:
    """Run ``command`` to its end, pinned to CPU ``core`` when one is given: (its standard output if
    ``keep_output``, the CPU seconds, user + system, the system accounts for the finished process and
    the children it waited for: wait4); `UserError` naming ``who`` with its last line of errors when
    it cannot run or fails."""
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    with tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE if keep_output else subprocess.DEVNULL, stderr=err,
                                    text=True, preexec_fn=pin)
        except OSError as e:
            raise UserError(f"{who}: cannot run {command[0]}: {e.strerror or e}") from None
        out = ""
        if keep_output:
            out = proc.stdout.read()
            proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            last = (err.read().strip().splitlines() or ["no message"])[-1].strip()
            end = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            raise UserError(f"{who}: {end}: {last}")
    cpu = usage.ru_utime + usage.ru_stime
    if cpu <= 0:
        raise UserError(f"{who}: no CPU time measured (too short: raise --games)")
    return out, cpu


def mdptetris_scores(out: str, n: int, who: str) -> list[int]:
    """The rows of each game ``mdptetris_play_games`` printed (a line starting with ``#``, the
    scores separated by spaces, then ``Mean score: M``); `UserError` naming ``who`` unless it printed
    ``n`` of them and their mean."""
    scores_text, found, rest = out.partition("Mean score:")
    if not found:
        raise UserError(f"{who}: no 'Mean score:' line in its output (is it mdptetris_play_games?)")
    scores = []
    for line in scores_text.splitlines():
        if line.startswith("#"):  # "# Initializing the random number generator with seed ..."
            continue
        for word in line.split():
            if not word.isdigit():
                raise UserError(f"{who}: {word!r} where a game's score was expected")
            scores.append(int(word))
    if len(scores) != n:
        raise UserError(f"{who}: printed {len(scores)} scores for {n} games")
    try:
        mean = float(rest.split()[0])
    except (IndexError, ValueError):
        raise UserError(f"{who}: no number after 'Mean score:'") from None
    if abs(mean - sum(scores) / n) > 1e-6 * max(1.0, mean) + 1e-6:
        raise UserError(f"{who}: its mean score {mean} is not the mean of its {n} scores ({sum(scores) / n})")
    return scores


def versus(args) -> int:
    at_least(args, runs=1)
    if args.versus_games is not None and args.versus_games < 1:
        raise UserError(f"--games {args.versus_games}: must be at least 1")
    names = list(dict.fromkeys(args.only or VERSUS))
    cases = []
    for name in names:
        evaluator, features, height, n = VERSUS[name]
        cases.append((name, evaluator, features, args.versus_height or height, args.versus_games or n))
    program, data = peer(args.versus, [c[2] for c in cases])
    for name, evaluator, features, height, _ in cases:
        same_player(name, evaluator, data / "features" / features, height)
    load = lambda: " ".join(f"{x:.2f}" for x in os.getloadavg())  # noqa: E731
    print(f"MdpTetris ({program}) beside ours, commit {commit()}, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{args.runs} pair(s) a player, load average {load()}\n"
          "  whole processes one after the other (which one first alternates from pair to pair); CPU time = "
          "user + system of each finished process (wait4)\n"
          f"  ours: a new `games --rules {VERSUS_RULES}` process each run, so the interpreter's start, the imports "
          "and loading the kernels from numba's cache are counted, compiling is not (an untimed run of each "
          "side first fills numba's cache and the page cache)\n"
          "  the same game: MdpTetris's simplified game, allow_lines_after_overflow 0 (as mdptetris_play_games "
          f"builds it) = our {VERSUS_RULES!r} rules; ties to the first (orientation, column) = state_then_column; "
          "its feature file's weights = our preset's (checked); MdpTetris seeds its pieces from the clock, so "
          "the games differ", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-versus-") as tmp:
            pit(program, data, cases, args.runs, Path(tmp), load)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def pit(program: Path, data: Path, cases: list, runs: int, tmp: Path, load) -> None:
    """`versus`'s pairs, for each of ``cases`` (name, evaluator, feature file, height, games), with
    their files in ``tmp``: prints each pair, the medians and the ratio."""
    series, stats = tmp / "ours.json", tmp / "stats.txt"

    def ours(evaluator: str, height: int, n: int, seed: int) -> tuple[int, float, float]:
        """(rows, CPU seconds of the process, CPU seconds of its games alone)"""
        command = our_command(evaluator, height, n, seed, series)
        _, cpu = run_timed(command, f"ours (games --evaluator {evaluator} --height {height} --games {n})")
        try:
            played = json.loads(series.read_text(encoding="utf-8"))["games"]
            rows, in_games = sum(g["rows"] for g in played), sum(g["cpu_seconds"] for g in played)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UserError(f"ours: {series}: not the series of its games ({e})") from None
        if len(played) != n:
            raise UserError(f"ours: {series}: {len(played)} games for {n}")
        return rows, cpu, in_games

    def theirs(features: str, height: int, n: int) -> tuple[int, float]:
        command = [str(program), f"features/{features}", str(n), "10", str(height), str(stats)]
        who = f"--versus: {program.name} {' '.join(command[1:5])}"
        out, cpu = run_timed(command, who, cwd=data, keep_output=True)
        return sum(mdptetris_scores(out, n, who)), cpu

    for _, evaluator, features, height, n in cases:
        print(f"{evaluator} on 10 x {height}, {n:,} games a process (MdpTetris: features/{features}):", flush=True)
        (a, acpu, _), (b, bcpu) = ours(evaluator, height, 1, VERSUS_SEED), theirs(features, height, 1)
        print(f"  warm-up, 1 game each, not counted: ours {a:,} rows in {acpu:.2f} s of CPU, MdpTetris {b:,} rows "
              f"in {bcpu:.2f} s", flush=True)
        pairs = []
        for i in range(runs):
            seed = VERSUS_SEED + i * n  # other games each run, as MdpTetris's
            if i % 2 == 0:
                o = ours(evaluator, height, n, seed)
                t = theirs(features, height, n)
            else:
                t = theirs(features, height, n)
                o = ours(evaluator, height, n, seed)
            pairs.append((o, t))
            f = pair_rates(o, t)
            print(f"  pair {i + 1} ({'ours' if i % 2 == 0 else 'MdpTetris'} first): ours {o[0]:,} rows in "
                  f"{o[1]:.2f} s ({f['ours']:,.0f}/s; {o[2]:.2f} s in its games), MdpTetris {t[0]:,} rows in "
                  f"{t[1]:.2f} s ({f['theirs']:,.0f}/s): ratio {f['ratio']:.3f}", flush=True)
        f = versus_figures(pairs)
        spread = lambda k: f"{f[k][0]:>9,.0f} ({f[k][1]:,.0f}-{f[k][2]:,.0f})"  # noqa: E731
        print(f"  rows per CPU second, median (min-max) of {runs}, load average now {load()}:")
        print(f"    MdpTetris {spread('theirs')}; {f['theirs_cpu']:.2f} s of CPU a process")
        print(f"    ours      {spread('ours')}; {f['ours_cpu']:.2f} s of CPU a process, "
              f"{f['ours_outside']:.2f} s of it outside its games")
        print(f"  ratio ours / MdpTetris (above 1: ours clears more rows per CPU second): {f['ratio'][0]:.3f} "
              f"({f['ratio'][1]:.3f}-{f['ratio'][2]:.3f})", flush=True)


def pair_rates(o: tuple, t: tuple) -> dict:
    """One pair's rows per CPU second, ours (``o``: rows, CPU seconds of the process, of its games
    alone) and MdpTetris's (``t``: rows, CPU seconds), and their ``ratio`` ours / MdpTetris."""
    ours, theirs = o[0] / o[1], t[0] / t[1]
    return {"ours": ours, "theirs": theirs, "ratio": ours / theirs}


def versus_figures(pairs: list) -> dict:
    """`pit`'s figures for one player's ``pairs`` (ours, MdpTetris's), as `pair_rates` takes them:
    ``ours``, ``theirs`` (rows per CPU second) and ``ratio``, each the (median, min, max) over the
    pairs of `pair_rates`; ``ours_cpu`` and ``theirs_cpu``, the median CPU seconds of a process, and
    ``ours_outside``, the median CPU seconds of our process outside its games."""
    each = [pair_rates(o, t) for o, t in pairs]
    spread = lambda k: (float(np.median([p[k] for p in each])), min(p[k] for p in each),  # noqa: E731
                        max(p[k] for p in each))
    return {"ours": spread("ours"), "theirs": spread("theirs"), "ratio": spread("ratio"),
            "ours_cpu": float(np.median([o[1] for o, _ in pairs])),
            "ours_outside": float(np.median([o[1] - o[2] for o, _ in pairs])),
            "theirs_cpu": float(np.median([t[1] for _, t in pairs]))}
