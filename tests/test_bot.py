"""The protocol bot (python -m experiments.bot) driven as a subprocess by a scripted judge.

The judge keeps its own board with the plain-Python reading of the protocol (course_reference.py,
which parses the piece matrices from ../shared/CLASSIC_RULES.md) and checks every answer: a legal
drop (rotation 0/90/180/270, leftmost column, resting inside the board), the right cumulative score,
``0 0`` with an unchanged score once the piece fits nowhere, and exit status 0 after X or E.
Each line is sent only after the previous answer has been read, so a missing flush would hang the
exchange (a watchdog kills the bot and the test fails).
"""

import io
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import course_reference as ref

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120  # seconds for a whole game, interpreter start and kernel loading included


class Judge:
    def __init__(self, *overrides):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "experiments.bot", "configs/solve/play.yaml", *overrides], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.timer = threading.Timer(TIMEOUT, self.proc.kill)
        self.timer.start()
        self.board = set()
        self.score = 0
        self.over = False
        self.game_over_at = None
        self.answers = 0

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read_answer(self):
        move = self.proc.stdout.readline()
        score = self.proc.stdout.readline()
        assert move and score, "the bot stopped answering (killed by the watchdog, or exited)"
        return move.split(), score.strip()

    def check(self, letter):
        """Read the answer for the held piece ``letter`` and check it against the judge's board."""
        letter = "O" if letter == "0" else letter.upper()
        (c, x), score = self.read_answer()
        c, x, score = int(c), int(x), int(score)
        self.answers += 1
        if not self.over and not ref.any_fit(self.board, letter):
            self.over = True
            self.game_over_at = self.answers
        if self.over:
            assert (c, x, score) == (0, 0, self.score), f"answer {self.answers}: after game over"
            return
        assert c in (0, 90, 180, 270)
        cells = ref.drop(self.board, letter, c, x)
        assert cells is not None, f"answer {self.answers}: {letter} {c} {x} is not a legal drop"
        self.board, lines = ref.lock(self.board, cells)
        self.score += ref.SCORES[lines]
        assert score == self.score, f"answer {self.answers}: score {score}, judge {self.score}"

    def play(self, pieces, end):
        """Deliver ``pieces`` (protocol letters) then ``end`` (X or E); returns (status, stderr)."""
        self.send(pieces[0] + pieces[1])
        self.check(pieces[0])
        for i in range(2, len(pieces)):
            self.send(pieces[i])
            self.check(pieces[i - 1])
        self.send(end)
        self.check(pieces[-1])
        status = self.proc.wait(timeout=TIMEOUT)
        err = self.proc.stderr.read()
        self.timer.cancel()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            pipe.close()
        return status, err


def letters(n, seed):
    rng = random.Random(seed)
    return [rng.choice("IOTSZJLiotszjl0") for _ in range(n)]


@pytest.mark.slow
def test_long_game_ends_with_x():
    judge = Judge()
    status, err = judge.play(letters(400, 1), "X")
    assert status == 0, err
    assert not judge.over and judge.answers == 400
    assert judge.score >= 10 * 100  # 400 pieces fill 160 rows' worth of cells: most must have cleared
    assert "game over" not in err


def test_e_ending_with_o_written_as_zero():
    judge = Judge("policy=one_ply")
    status, err = judge.play(["0", "0", "O", "o", "0", "I", "I", "0"], "E")
    assert status == 0, err
    assert judge.answers == 8


def test_game_over_before_the_end():
    judge = Judge("policy=one_ply")
    status, err = judge.play(["S"] * 120, "X")  # S pieces alone bury any board
    assert status == 0, err
    assert judge.game_over_at is not None and judge.game_over_at < 120
    assert err.count("game over") == 1


def bot_in_process(monkeypatch, capsys, text, *argv):
    """``python -m experiments.bot ARGV`` fed ``text``, run by its main in this process (the Judge
    above drives the real process): (exit status, standard output, standard error)."""
    from experiments.bot import main

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("text, fragment, answers", [
    ("IO\nT\nQ\n", "line 3: 'Q': unknown piece 'Q'", 2),
    ("I\n", "line 1: 'I': expected two characters", 0),
    ("IO\nTS\n", "line 2: 'TS': expected one character", 1),
    ("IO\nT\n", "line 3: input ended before X or E", 2),
])
def test_malformed_input(monkeypatch, capsys, text, fragment, answers):
    status, out, err = bot_in_process(monkeypatch, capsys, text)
    assert status == 2
    assert fragment in err
    assert len(out.splitlines()) == 2 * answers  # every answer before the bad line was given


def test_a_huge_line_is_refused_and_cut_in_the_message(monkeypatch, capsys):
    """A 50 MB line is not read whole nor echoed whole: the bot reads a line no further than a
    protocol line can be and shows its start."""
    text = "IO\nT\n" + "Q" * 50_000_000 + "\n"
    status, out, err = bot_in_process(monkeypatch, capsys, text)
    assert status == 2
    assert err.strip() == ("error: standard input: line 3: 'QQQQQQQQQQQQQQQQQQQQ...': longer than "
                           "a protocol line (64 characters)")
    assert len(out.splitlines()) == 4


#: runs ``python -m experiments.bot ARGS`` and, at its exit, writes to the file $SIGNATURES_OUT every
#: kernel of the project that the process called from Python, with the signatures it called them at
#: (loaded from the cache or compiled)
SIGNATURES = """
import atexit, json, os, runpy, sys
from numba.core.dispatcher import Dispatcher

def dump():
    called = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("engine", "evaluators", "solver", "experiments"):
            for v in list(vars(module).values()):
                for d in (v, getattr(v, "__dict__", {}).get("_python_twin")):  # an inner kernel's twin
                    if isinstance(d, Dispatcher) and d.signatures:
                        called[d.py_func.__module__ + "." + d.py_func.__qualname__] = sorted(map(str, d.signatures))
    with open(os.environ["SIGNATURES_OUT"], "w") as f:
        json.dump(called, f)

atexit.register(dump)
sys.argv[0] = "experiments.bot"
runpy.run_module("experiments.bot", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
def test_warm_up_calls_every_kernel_the_bot_uses_and_reads_nothing(tmp_path):
    """--warm-up plays a short game by itself (compiling, or loading from the cache, every kernel the
    bot uses) and exits, reporting how long it took; a later bot then calls no kernel at a signature
    the warm-up did not (so from the cache the warm-up filled it compiles nothing), whatever the
    cache held before."""
    import json
    import os

    def bot(args, text, name):
        env = {**os.environ, "SIGNATURES_OUT": str(tmp_path / name)}
        proc = subprocess.run([sys.executable, "-c", SIGNATURES, *args], cwd=ROOT, input=text,
                              capture_output=True, text=True, timeout=TIMEOUT, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc, json.loads((tmp_path / name).read_text())

    warm, warmed = bot(["--warm-up"], "", "warm.json")
    assert warm.stdout == "" and warm.stderr.startswith("warm: the bot's kernels are compiled and cached (")
    game, played = bot([], "IO\nT\nX\n", "game.json")
    assert len(game.stdout.splitlines()) == 6 and played  # the game called kernels, all of them warmed
    assert {k: [s for s in sigs if s not in warmed.get(k, [])] for k, sigs in played.items()} == {k: [] for k in played}


def test_help_shows_the_rotation_table(capsys):
    from experiments.bot import main

    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "rotation table" in out and "180" in out and "270" in out
    assert "####" in out  # the horizontal I


def test_bad_config_exits_2(monkeypatch, capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy: beam\nrules: course\npieces: 10\n")
    status, _, err = bot_in_process(monkeypatch, capsys, "IO\nX\n", str(bad))
    assert status == 2 and "policy" in err
