"""benchmarks/bench_standard.py --versus: MdpTetris's mdptetris_play_games beside our games, as whole
processes (issue 32, item 1). A fake MdpTetris checkout (src/mdptetris_play_games, a script that
prints the real program's output, and data/ with the pieces and the feature files written from our
presets) and a fake ``games`` process stand in for both sides, so the parsing, the checks, the
pairs and the ratio are tested in seconds; one slow test plays our real side."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.standard import versus
from evaluators import load_evaluator
from evaluators.registry import canonical

ROOT = Path(__file__).resolve().parents[1]

#: the fake mdptetris_play_games: MdpTetris's output (src/play_games.c, src/random.c), its behaviour
#: set by FAKE_MDP (ok, short, nomean, badmean, garbage, fail); each call logged to FAKE_MDP_LOG
FAKE_MDP = r'''
import os, sys, time
log = os.environ.get("FAKE_MDP_LOG")
if log:
    with open(log, "a") as f:
        f.write(" ".join(sys.argv[1:]) + " @ " + os.getcwd() + "\n")
mode = os.environ.get("FAKE_MDP", "ok")
if len(sys.argv) not in (6, 7):
    sys.stderr.write("Usage: %s feature_file nb_games board_width board_height statistics_file [comments]\n" % sys.argv[0])
    sys.exit(1)
try:
    open(sys.argv[1]).close()  # relative to the data folder, as MdpTetris opens it
except OSError:
    sys.stderr.write("ERROR [file file_tools.c] [line 40] Cannot open data file '%s'\n" % sys.argv[1])
    sys.exit(1)
if mode == "fail":
    sys.stderr.write("ERROR [file game.c] [line 305] Trying to make a move but the game is over\n")
    sys.exit(1)
n = int(sys.argv[2])
scores = [1000 + 10 * i for i in range(n - (mode == "short"))]
start = time.process_time()
while time.process_time() - start < 0.02:
    pass
print("# Initializing the random number generator with seed 1764170000")
for s in scores:
    sys.stdout.write("%d " % s)
if mode == "garbage":
    sys.stdout.write("oops ")
mean = sum(scores) / max(1, len(scores)) + (5 if mode == "badmean" else 0)
if mode != "nomean":
    sys.stdout.write("\nMean score: %f\n" % mean)
open(sys.argv[5], "w").write("# Episode\tMean score\n")
print("Statistics saved in file '%s'." % sys.argv[5])
'''

#: the fake games process: writes a series of N games of 500 rows each (FAKE_OURS=fail: exits 1)
FAKE_OURS = r'''
import json, os, sys, time
series, n = sys.argv[1], int(sys.argv[2])
if os.environ.get("FAKE_OURS") == "fail":
    sys.stderr.write("Traceback (most recent call last):\nerror: --json x: cannot write there\n")
    sys.exit(2)
start = time.process_time()
while time.process_time() - start < 0.02:
    pass
games = [{"seed": i, "rows": 500, "pieces": 1300, "end": "stuck", "cpu_seconds": 0.01} for i in range(n)]
open(series, "w").write(json.dumps({"games": games}))
'''

#: MdpTetris's feature ids for our feature names (bench_standard.MDPTETRIS_FEATURES inverted)
IDS = {"landing_height_zero_based": 1, "eroded_cells": 2, "row_transitions": 3, "column_transitions": 4, "holes": 5,
       "wells_empty_below": 6, "hole_depth": -1, "rows_with_holes": -2}


def feature_file(preset: str, reward: int = 0, gameover: int = -1) -> str:
    """MdpTetris's feature file for our preset (its format: load_feature_policy in src/feature_policy.c)."""
    weights = {canonical(k): t.weight for k, t in load_evaluator(preset).weights.items()}
    lines = [str(reward), str(gameover), str(len(weights))] + [f"{IDS[k]} {w:e}" for k, w in weights.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A fake MdpTetris checkout, built: src/mdptetris_play_games and data/ (pieces, feature files)."""
    root = tmp_path / "mdptetris"
    (root / "src").mkdir(parents=True)
    (root / "data" / "features").mkdir(parents=True)
    program = root / "src" / "mdptetris_play_games"
    program.write_text(f"#!{sys.executable}\n{FAKE_MDP}")
    program.chmod(0o755)
    (root / "data" / "pieces4.dat").write_text("7\n")
    (root / "data" / "features" / "dellacherie_initial.dat").write_text(feature_file("dellacherie"))
    (root / "data" / "features" / "record_du.dat").write_text(feature_file("bcts"))
    return root


@pytest.fixture
def ours(monkeypatch, tmp_path) -> list:
    """Our side replaced by FAKE_OURS; the list of its calls (evaluator, height, games, seed)."""
    script = tmp_path / "fake_ours.py"
    script.write_text(FAKE_OURS)
    calls = []

    def command(evaluator, height, n, seed, series):
        calls.append((evaluator, height, n, seed))
        return [sys.executable, str(script), str(series), str(n)]

    monkeypatch.setattr(versus, "our_command", command)
    return calls


def run_versus(bench, capsys, *args: str) -> tuple[int, str, str]:
    status = bench.main(["--versus", *args])
    out, err = capsys.readouterr()
    return status, out, err.strip()


#: a pair's line as `pit` prints it: (pair, first, our rows, our seconds, our rate, seconds in our games,
#: their rows, their seconds, their rate, ratio)
PAIR = re.compile(r"pair (\d) \((ours|MdpTetris) first\): ours ([\d,]+) rows in ([\d.]+) s \(([\d,]+)/s; ([\d.]+) s in "
                  r"its games\), MdpTetris ([\d,]+) rows in ([\d.]+) s \(([\d,]+)/s\): ratio ([\d.]+)")
#: the lines after a player's pairs: each side's rows per CPU second, median (min-max), and CPU seconds a
#: process (ours: and outside its games), then the ratio, median (min-max)
SUMMARY = re.compile(r"    MdpTetris +([\d,]+) \(([\d,]+)-([\d,]+)\); ([\d.]+) s of CPU a process\n"
                     r"    ours +([\d,]+) \(([\d,]+)-([\d,]+)\); ([\d.]+) s of CPU a process, ([\d.]+) s of it outside "
                     r"its games\n  ratio ours / MdpTetris \(above 1: ours clears more rows per CPU second\): ([\d.]+) "
                     r"\(([\d.]+)-([\d.]+)\)")


def printed(text: str) -> tuple[float, float]:
    """The values a figure printed as ``text`` stands for: its number, give or take half its last digit."""
    digits = text.replace(",", "")
    half = 0.5 * 10.0 ** -len(digits.partition(".")[2])
    return float(digits) - half, float(digits) + half


def over(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """The quotients of the positive values in ``a`` by those in ``b``."""
    return a[0] / b[1], (a[1] / b[0] if b[0] > 0 else float("inf"))


def shows(text: str, values: tuple[float, float]) -> bool:
    """Whether ``text``, printed at its precision, can be one of ``values``."""
    low, high = printed(text)
    return low <= values[1] * (1 + 1e-12) and values[0] * (1 - 1e-12) <= high


def test_the_figures_are_the_arithmetic_of_the_timings():
    """`pair_rates` and `versus_figures` on given rows and CPU seconds (exact in binary): each pair's
    rates and ratio, then the medians (min-max); the ratio is the median of the pairs' ratios, not the
    ratio of the medians (2.0 here, against 2,000 / 2,000)."""
    a = ((1000, 1.0, 0.5), (2000, 0.5))
    b = ((1000, 0.5, 0.25), (500, 0.5))
    c = ((3000, 0.75, 0.125), (1500, 0.75))
    assert versus.pair_rates(*a) == {"ours": 1000.0, "theirs": 4000.0, "ratio": 0.25}
    assert versus.pair_rates(*b) == {"ours": 2000.0, "theirs": 1000.0, "ratio": 2.0}
    assert versus.pair_rates(*c) == {"ours": 4000.0, "theirs": 2000.0, "ratio": 2.0}
    assert versus.versus_figures([a, b, c]) == {
        "ours": (2000.0, 1000.0, 4000.0), "theirs": (2000.0, 1000.0, 4000.0), "ratio": (2.0, 0.25, 2.0),
        "ours_cpu": 0.75, "ours_outside": 0.5, "theirs_cpu": 0.5}
    # two pairs: the medians are the means
    assert versus.versus_figures([a, b]) == {
        "ours": (1500.0, 1000.0, 2000.0), "theirs": (2500.0, 1000.0, 4000.0), "ratio": (1.125, 0.25, 2.0),
        "ours_cpu": 0.75, "ours_outside": 0.375, "theirs_cpu": 0.5}
    assert versus.versus_figures([c]) == {
        "ours": (4000.0, 4000.0, 4000.0), "theirs": (2000.0, 2000.0, 2000.0), "ratio": (2.0, 2.0, 2.0),
        "ours_cpu": 0.75, "ours_outside": 0.625, "theirs_cpu": 0.75}


def test_what_is_printed_is_the_figures_of_the_measured_timings(bench, capsys, checkout, ours, monkeypatch):
    """The processes run, and their CPU seconds are replaced by given ones: the lines are exact."""
    given = {"ours": [0.25, 0.5, 0.75, 0.25], "MdpTetris": [0.25, 1.5, 0.25, 0.5]}  # warm-up, pairs 1-3
    real = versus.run_timed

    def run_timed(command, who, **options):
        out, _ = real(command, who, **options)
        return out, given["ours" if who.startswith("ours") else "MdpTetris"].pop(0)

    monkeypatch.setattr(versus, "run_timed", run_timed)
    status, out, err = run_versus(bench, capsys, str(checkout), "--only", "bcts", "--games", "3", "--runs", "3")
    assert (status, err) == (0, ""), err
    assert given == {"ours": [], "MdpTetris": []}
    lines = out.splitlines()
    at = lines.index("bcts on 10 x 10, 3 games a process (MdpTetris: features/record_du.dat):")
    assert lines[at + 1:at + 5] == [
        "  warm-up, 1 game each, not counted: ours 500 rows in 0.25 s of CPU, MdpTetris 1,000 rows in 0.25 s",
        "  pair 1 (ours first): ours 1,500 rows in 0.50 s (3,000/s; 0.03 s in its games), MdpTetris 3,030 rows in "
        "1.50 s (2,020/s): ratio 1.485",
        "  pair 2 (MdpTetris first): ours 1,500 rows in 0.75 s (2,000/s; 0.03 s in its games), MdpTetris 3,030 rows "
        "in 0.25 s (12,120/s): ratio 0.165",
        "  pair 3 (ours first): ours 1,500 rows in 0.25 s (6,000/s; 0.03 s in its games), MdpTetris 3,030 rows in "
        "0.50 s (6,060/s): ratio 0.990"]
    assert lines[at + 5].startswith("  rows per CPU second, median (min-max) of 3, load average now ")
    assert lines[at + 6:] == [
        "    MdpTetris     6,060 (2,020-12,120); 0.50 s of CPU a process",
        "    ours          3,000 (2,000-6,000); 0.50 s of CPU a process, 0.47 s of it outside its games",
        "  ratio ours / MdpTetris (above 1: ours clears more rows per CPU second): 0.990 (0.165-1.485)"]


def test_pairs_rows_and_ratio(bench, capsys, checkout, ours, monkeypatch, tmp_path):
    """Both players, measured for real: the calls, the rows and the structure are exact; the printed
    rates and ratios are checked against the printed rows and seconds at their printed precision only,
    which holds whatever the machine's load (never a bound on the speed)."""
    log = tmp_path / "mdp.log"
    monkeypatch.setenv("FAKE_MDP_LOG", str(log))
    status, out, err = run_versus(bench, capsys, str(checkout), "--games", "3", "--runs", "2")
    assert (status, err) == (0, ""), err
    # both players, each a warm-up game then the pairs; our runs on other seeds
    assert ours == [("dellacherie", 14, 1, 1000), ("dellacherie", 14, 3, 1000), ("dellacherie", 14, 3, 1003),
                    ("bcts", 10, 1, 1000), ("bcts", 10, 3, 1000), ("bcts", 10, 3, 1003)]
    calls = log.read_text().splitlines()
    data = checkout / "data"
    assert [c.split(" @ ")[1] for c in calls] == [str(data)] * 6  # run from its data folder
    assert [c.split()[:4] for c in calls] == [["features/dellacherie_initial.dat", "1", "10", "14"]] + \
        [["features/dellacherie_initial.dat", "3", "10", "14"]] * 2 + [["features/record_du.dat", "1", "10", "10"]] + \
        [["features/record_du.dat", "3", "10", "10"]] * 2
    assert "compiling is not" in out and "untimed run" in out and "load average" in out
    assert "allow_lines_after_overflow 0" in out and "state_then_column" in out
    assert "warm-up, 1 game each, not counted: ours 500 rows" in out and "MdpTetris 1,000 rows" in out
    pairs = PAIR.findall(out)
    assert [(p[0], p[1]) for p in pairs] == [("1", "ours"), ("2", "MdpTetris")] * 2
    for p in pairs:
        assert (p[2], p[5], p[6]) == ("1,500", "0.03", "3,030")  # 3 games of each side
        # each rate is the rows over the seconds, the ratio the rates' (as printed: give or take the last digit)
        assert shows(p[4], over((1500, 1500), printed(p[3]))), p
        assert shows(p[8], over((3030, 3030), printed(p[7]))), p
        assert shows(p[9], over(printed(p[4]), printed(p[8]))), p
    summaries = SUMMARY.findall(out)
    assert len(summaries) == 2 and out.count("    MdpTetris ") == 2 and out.count("    ours      ") == 2
    number = lambda text: float(text.replace(",", ""))  # noqa: E731
    for (theirs, low, high, cpu, mine, mine_low, mine_high, mine_cpu, outside, ratio, ratio_low, ratio_high), two in \
            zip(summaries, (pairs[:2], pairs[2:])):
        def median_of(column: int, median: str, lowest: str | None = None, highest: str | None = None) -> None:
            """min-max: the pairs' figures themselves; the median of two: their mean (give or take)."""
            figures = sorted((p[column] for p in two), key=number)
            if lowest is not None:
                assert (lowest, highest) == (figures[0], figures[1])
            mean = [(a + b) / 2 for a, b in zip(printed(figures[0]), printed(figures[1]))]
            assert shows(median, mean), (median, figures)

        median_of(8, theirs, low, high)
        median_of(4, mine, mine_low, mine_high)
        median_of(9, ratio, ratio_low, ratio_high)
        median_of(7, cpu)
        median_of(3, mine_cpu)
        spent = [(a - 0.03, b - 0.03) for a, b in (printed(p[3]) for p in two)]
        assert shows(outside, ((spent[0][0] + spent[1][0]) / 2, (spent[0][1] + spent[1][1]) / 2)), outside


def test_the_program_itself_one_player_and_the_tables_sizes(bench, capsys, checkout, ours):
    status, out, err = run_versus(bench, capsys, str(checkout / "src" / "mdptetris_play_games"), "--only", "bcts",
                              "--only", "bcts", "--runs", "1", "--games", "2", "--height", "8")
    assert (status, err) == (0, ""), err
    assert ours == [("bcts", 8, 1, 1000), ("bcts", 8, 2, 1000)]  # named twice, run once
    assert "bcts on 10 x 8, 2 games a process" in out and "dellacherie on" not in out


@pytest.mark.parametrize("mode, problem", [
    ("short", "printed 0 scores for 1 games"),
    ("nomean", "no 'Mean score:' line in its output (is it mdptetris_play_games?)"),
    ("badmean", "its mean score 1005.0 is not the mean of its 1 scores (1000.0)"),
    ("garbage", "'oops' where a game's score was expected"),
    ("fail", "exit status 1: ERROR [file game.c] [line 305] Trying to make a move but the game is over"),
])
def test_what_mdptetris_printed_is_checked(bench, capsys, checkout, ours, monkeypatch, mode, problem):
    monkeypatch.setenv("FAKE_MDP", mode)
    status, out, err = run_versus(bench, capsys, str(checkout), "--only", "bcts", "--games", "3", "--runs", "1")
    # its warm-up game already
    assert (status, err) == (2, f"error: --versus: mdptetris_play_games features/record_du.dat 1 10 10: {problem}")


def test_a_wrong_number_of_scores_in_a_pair(bench, capsys, checkout, monkeypatch, ours):
    # the warm-up game passes (1 game asked, 1 printed by a fake that drops one only from 2 games on)
    script = checkout / "src" / "mdptetris_play_games"
    script.write_text(script.read_text().replace('n - (mode == "short")', 'n - (mode == "short" and n > 1)'))
    monkeypatch.setenv("FAKE_MDP", "short")
    status, out, err = run_versus(bench, capsys, str(checkout), "--only", "dellacherie", "--games", "4", "--runs", "1")
    assert (status, err) == (2, "error: --versus: mdptetris_play_games features/dellacherie_initial.dat 4 10 14: "
                                "printed 3 scores for 4 games")
    assert "warm-up" in out and "pair 1" not in out


def test_missing_program_and_data(bench, capsys, checkout, ours, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, err = run_versus(bench, capsys, str(empty))
    assert (status, err) == (2, f"error: --versus {empty}: no program {empty}/src/mdptetris_play_games (build "
                                "MdpTetris first: docs/benchmark-standard.md)")
    program = checkout / "src" / "mdptetris_play_games"
    program.chmod(0o644)
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: --versus {checkout}: no program {program}")
    program.chmod(0o755)
    (checkout / "data" / "features" / "record_du.dat").unlink()
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert (status, err) == (2, f"error: --versus {checkout}: {checkout}/data/features/record_du.dat is missing "
                                "(MdpTetris's data folder)")
    status, _, err = run_versus(bench, capsys, str(checkout), "--only", "dellacherie", "--games", "1", "--runs", "1")
    assert (status, err) == (0, "")  # the other player's file is not needed
    (checkout / "data" / "pieces4.dat").unlink()
    status, _, err = run_versus(bench, capsys, str(checkout), "--only", "dellacherie")
    assert (status, err) == (2, f"error: --versus {checkout}: {checkout}/data/pieces4.dat is missing (MdpTetris's "
                                "data folder)")
    assert ours == [("dellacherie", 14, 1, 1000), ("dellacherie", 14, 1, 1000)]  # nothing else ran


def test_the_feature_files_must_hold_our_players(bench, capsys, checkout, ours):
    features = checkout / "data" / "features"
    record = features / "record_du.dat"
    record.write_text(feature_file("dellacherie"))  # another player under BCTS's name
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: {record}: not bcts's player: column_transitions -1 against our "
                                          "-19.7736, "), err
    assert "hole_depth 0 against our -1.61186" in err and "\n" not in err
    record.write_text(feature_file("bcts", gameover=0))
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert (status, err) == (2, f"error: {record}: reward function 0, game-over value 0: --versus compares players "
                                "with reward function 0 and game-over value -1 only")
    record.write_text(feature_file("bcts").replace("\n8\n", "\n9\n") + "12 1.0\n")
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert (status, err) == (2, f"error: {record}: feature id 12: not one of ours (MDPTETRIS_FEATURES)")
    record.write_text("0\n-1\n8\n1 -12.6\n")
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: {record}: not a MdpTetris feature file"), err
    record.write_bytes(b"\xff\xfe")
    status, _, err = run_versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: {record}: not UTF-8 text"), err
    assert ours == []  # checked before anything runs


def test_our_side_failing_is_one_line(bench, capsys, checkout, ours, monkeypatch):
    monkeypatch.setenv("FAKE_OURS", "fail")
    status, _, err = run_versus(bench, capsys, str(checkout), "--only", "bcts", "--runs", "1", "--games", "2")
    assert (status, err) == (2, "error: ours (games --evaluator bcts --height 10 --games 1): exit status 2: "
                                "error: --json x: cannot write there")


@pytest.mark.parametrize("args, message", [
    (["--runs", "0"], "error: --runs 0: must be at least 1"),
    (["--games", "0"], "error: --games 0: must be at least 1"),
    (["--height", "3"], "error: --height 3: height must be 4..60"),
])
def test_versus_numbers_out_of_range(bench, capsys, checkout, ours, args, message):
    status, _, err = run_versus(bench, capsys, str(checkout), *args)
    assert (status, err) == (2, message) and ours == []


def test_versus_options_go_with_versus_only(bench, capsys):
    for argv in (["--runs", "2", "games"], ["--games", "3", "speed"], ["--only", "bcts", "games"], []):
        with pytest.raises(SystemExit) as info:
            bench.main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    with pytest.raises(SystemExit):
        bench.main(["--versus", "x", "--only", "bdu"])
    assert "invalid choice: 'bdu'" in capsys.readouterr().err


def test_from_the_command_line_no_traceback(tmp_path):
    done = subprocess.run([sys.executable, "benchmarks/bench_standard.py", "--versus", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: --versus {tmp_path}: no program {tmp_path}/src/mdptetris_play_games (build " \
                          "MdpTetris first: docs/benchmark-standard.md)\n"


@pytest.mark.slow
def test_our_real_side_beside_a_fake_mdptetris(checkout):
    """Our side as it runs for real (`our_command`: a games process; compiles when numba's cache is cold).
    Dellacherie's player on the standard rules: the suite's other tests compile its game loop too."""
    done = subprocess.run([sys.executable, "benchmarks/bench_standard.py", "--versus", str(checkout), "--only", "dellacherie",
                           "--games", "2", "--height", "6", "--runs", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200, env={**os.environ})
    assert done.returncode == 0, done.stderr
    pair = re.search(r"pair 1 \(ours first\): ours ([\d,]+) rows in ([\d.]+) s \([\d,]+/s; ([\d.]+) s in its games",
                     done.stdout)
    assert pair and float(pair[2]) > float(pair[3]), done.stdout  # the process costs more than its games
    assert "ratio ours / MdpTetris" in done.stdout
