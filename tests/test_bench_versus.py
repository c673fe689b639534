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
def ours(bench, monkeypatch, tmp_path) -> list:
    """Our side replaced by FAKE_OURS; the list of its calls (evaluator, height, games, seed)."""
    script = tmp_path / "fake_ours.py"
    script.write_text(FAKE_OURS)
    calls = []

    def command(evaluator, height, n, seed, series):
        calls.append((evaluator, height, n, seed))
        return [sys.executable, str(script), str(series), str(n)]

    monkeypatch.setattr(bench, "our_command", command)
    return calls


def versus(bench, capsys, *args: str) -> tuple[int, str, str]:
    status = bench.main(["--versus", *args])
    out, err = capsys.readouterr()
    return status, out, err.strip()


def test_pairs_rows_and_ratio(bench, capsys, checkout, ours, monkeypatch, tmp_path):
    log = tmp_path / "mdp.log"
    monkeypatch.setenv("FAKE_MDP_LOG", str(log))
    status, out, err = versus(bench, capsys, str(checkout), "--games", "3", "--runs", "2")
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
    pairs = re.findall(r"pair (\d) \((ours|MdpTetris) first\): ours ([\d,]+) rows in ([\d.]+) s \(([\d,]+)/s; "
                       r"([\d.]+) s in its games\), MdpTetris ([\d,]+) rows in ([\d.]+) s \(([\d,]+)/s\): ratio ([\d.]+)",
                       out)
    assert [(p[0], p[1]) for p in pairs] == [("1", "ours"), ("2", "MdpTetris")] * 2
    num = lambda text: float(text.replace(",", ""))  # noqa: E731
    for p in pairs:
        assert num(p[2]) == 1_500 and num(p[6]) == 1_000 + 1_010 + 1_020  # 3 games of each side
        assert float(p[5]) == pytest.approx(0.03)
        # the rates and the ratio from the rows and the seconds (printed to 0.01 s, of about 0.1 s here)
        ours_rate, their_rate = num(p[2]) / float(p[3]), num(p[6]) / float(p[7])
        assert ours_rate == pytest.approx(num(p[4]), rel=0.1) and their_rate == pytest.approx(num(p[8]), rel=0.1)
        assert float(p[9]) == pytest.approx(num(p[4]) / num(p[8]), rel=0.01)
    ratios = re.findall(r"ratio ours / MdpTetris \(above 1: ours clears more rows per CPU second\): ([\d.]+) "
                        r"\(([\d.]+)-([\d.]+)\)", out)
    assert len(ratios) == 2
    for k, (median, low, high) in enumerate(ratios):
        two = sorted(float(p[9]) for p in pairs[2 * k:2 * k + 2])
        assert float(low) == pytest.approx(two[0], abs=0.0011) and float(high) == pytest.approx(two[1], abs=0.0011)
        assert float(median) == pytest.approx(sum(two) / 2, abs=0.0011)
    assert out.count("    MdpTetris ") == 2 and out.count("    ours      ") == 2


def test_the_program_itself_one_player_and_the_tables_sizes(bench, capsys, checkout, ours):
    status, out, err = versus(bench, capsys, str(checkout / "src" / "mdptetris_play_games"), "--only", "bcts",
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
    status, out, err = versus(bench, capsys, str(checkout), "--only", "bcts", "--games", "3", "--runs", "1")
    # its warm-up game already
    assert (status, err) == (2, f"error: --versus: mdptetris_play_games features/record_du.dat 1 10 10: {problem}")


def test_a_wrong_number_of_scores_in_a_pair(bench, capsys, checkout, monkeypatch, ours):
    # the warm-up game passes (1 game asked, 1 printed by a fake that drops one only from 2 games on)
    script = checkout / "src" / "mdptetris_play_games"
    script.write_text(script.read_text().replace('n - (mode == "short")', 'n - (mode == "short" and n > 1)'))
    monkeypatch.setenv("FAKE_MDP", "short")
    status, out, err = versus(bench, capsys, str(checkout), "--only", "dellacherie", "--games", "4", "--runs", "1")
    assert (status, err) == (2, "error: --versus: mdptetris_play_games features/dellacherie_initial.dat 4 10 14: "
                                "printed 3 scores for 4 games")
    assert "warm-up" in out and "pair 1" not in out


def test_missing_program_and_data(bench, capsys, checkout, ours, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, err = versus(bench, capsys, str(empty))
    assert (status, err) == (2, f"error: --versus {empty}: no program {empty}/src/mdptetris_play_games (build "
                                "MdpTetris first: docs/benchmark-standard.md)")
    program = checkout / "src" / "mdptetris_play_games"
    program.chmod(0o644)
    status, _, err = versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: --versus {checkout}: no program {program}")
    program.chmod(0o755)
    (checkout / "data" / "features" / "record_du.dat").unlink()
    status, _, err = versus(bench, capsys, str(checkout))
    assert (status, err) == (2, f"error: --versus {checkout}: {checkout}/data/features/record_du.dat is missing "
                                "(MdpTetris's data folder)")
    status, _, err = versus(bench, capsys, str(checkout), "--only", "dellacherie", "--games", "1", "--runs", "1")
    assert (status, err) == (0, "")  # the other player's file is not needed
    (checkout / "data" / "pieces4.dat").unlink()
    status, _, err = versus(bench, capsys, str(checkout), "--only", "dellacherie")
    assert (status, err) == (2, f"error: --versus {checkout}: {checkout}/data/pieces4.dat is missing (MdpTetris's "
                                "data folder)")
    assert ours == [("dellacherie", 14, 1, 1000), ("dellacherie", 14, 1, 1000)]  # nothing else ran


def test_the_feature_files_must_hold_our_players(bench, capsys, checkout, ours):
    features = checkout / "data" / "features"
    record = features / "record_du.dat"
    record.write_text(feature_file("dellacherie"))  # another player under BCTS's name
    status, _, err = versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: {record}: not bcts's player: column_transitions -1 against our "
                                          "-19.7736, "), err
    assert "hole_depth 0 against our -1.61186" in err and "\n" not in err
    record.write_text(feature_file("bcts", gameover=0))
    status, _, err = versus(bench, capsys, str(checkout))
    assert (status, err) == (2, f"error: {record}: reward function 0, game-over value 0: --versus compares players "
                                "with reward function 0 and game-over value -1 only")
    record.write_text(feature_file("bcts").replace("\n8\n", "\n9\n") + "12 1.0\n")
    status, _, err = versus(bench, capsys, str(checkout))
    assert (status, err) == (2, f"error: {record}: feature id 12: not one of ours (MDPTETRIS_FEATURES)")
    record.write_text("0\n-1\n8\n1 -12.6\n")
    status, _, err = versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: {record}: not a MdpTetris feature file"), err
    record.write_bytes(b"\xff\xfe")
    status, _, err = versus(bench, capsys, str(checkout))
    assert status == 2 and err.startswith(f"error: {record}: not UTF-8 text"), err
    assert ours == []  # checked before anything runs


def test_our_side_failing_is_one_line(bench, capsys, checkout, ours, monkeypatch):
    monkeypatch.setenv("FAKE_OURS", "fail")
    status, _, err = versus(bench, capsys, str(checkout), "--only", "bcts", "--runs", "1", "--games", "2")
    assert (status, err) == (2, "error: ours (games --evaluator bcts --height 10 --games 1): exit status 2: "
                                "error: --json x: cannot write there")


@pytest.mark.parametrize("args, message", [
    (["--runs", "0"], "error: --runs 0: must be at least 1"),
    (["--games", "0"], "error: --games 0: must be at least 1"),
    (["--height", "3"], "error: --height 3: height must be 4..60"),
])
def test_versus_numbers_out_of_range(bench, capsys, checkout, ours, args, message):
    status, _, err = versus(bench, capsys, str(checkout), *args)
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
