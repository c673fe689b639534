"""The terminal player: its game logic directly, and the curses program driven in tmux."""

import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from engine import CLASSIC, GEEK, replay
from engine.movegen.tables import STEP_C, STEP_L, STEP_R
from experiments.tui import Game, save

ROOT = Path(__file__).resolve().parents[1]


def test_game_moves_locks_and_scores_classic():
    g = Game(CLASSIC, seed=3)
    x0 = g.x
    assert g.step(STEP_L) and g.x == x0 - 1
    g.drop()
    assert g.t == 1 and int(np.count_nonzero(g.board)) > 0
    # walk a piece into the left wall: the step that fails does not move it
    for _ in range(12):
        g.step(STEP_L)
    assert not g.step(STEP_L)


def test_step_limit_is_the_contests_only():
    # the Geek contest locks a piece after 100 steps; classic Tetris has no such rule
    geek, classic = Game(GEEK), Game(CLASSIC, seed=3)
    for _ in range(100):
        assert geek.t == 0 and geek.step(STEP_C)
    assert geek.t == 1 and geek.routes[0] == [STEP_C] * 100
    for _ in range(150):
        assert classic.step(STEP_C)
    assert classic.t == 0 and len(classic.steps) == 150


def test_geek_record_saved_by_the_player_replays_to_its_score(tmp_path):
    g = Game(GEEK)
    moves = [STEP_L, STEP_L, STEP_R, STEP_C, STEP_L, STEP_R, STEP_R, STEP_R, STEP_C, STEP_L]
    for i in range(60):
        g.step(moves[i % len(moves)])
        g.step(moves[(3 * i) % len(moves)])
        g.drop()
        if g.end:
            break
    out = tmp_path / "human.txt"
    save(g, out)
    verdict = replay(out.read_text().strip())
    assert verdict.score == g.score and verdict.bricks == g.t


def screen(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session, predicate, timeout=90):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = screen(session)
        if predicate(text):
            return text
        time.sleep(0.2)
    raise AssertionError(f"timed out; the screen shows:\n{screen(session)}")


def field(text, name):
    m = re.search(rf"{name}\s+(\d+)", text)
    return int(m.group(1)) if m else None


def falling_columns(text):
    """Board columns holding the falling piece (drawn '@@')."""
    cols = set()
    for line in text.splitlines():
        if line.startswith("|"):
            board = line[1:line.index("|", 1)]
            cols |= {i // 2 for i in range(0, len(board), 2) if board[i:i + 2] == "@@"}
    return cols


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_player_in_tmux():
    session = f"tui-{uuid.uuid4().hex[:8]}"
    cmd = f"cd {ROOT} && env -u LINES -u COLUMNS python -m experiments.tui --rules classic --seed 3 --tick 100000; echo EXIT=$?; sleep 60"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "35", cmd], check=True)
    try:
        text = wait_for(session, lambda t: "rules  classic" in t and "x=" in t)
        before = falling_columns(text)
        x = int(re.search(r"x=(\d+)", text).group(1))
        subprocess.run(["tmux", "send-keys", "-t", session, "Left"], check=True)
        text = wait_for(session, lambda t: f"x={x - 1} " in t)
        assert falling_columns(text) == {c - 1 for c in before}
        subprocess.run(["tmux", "send-keys", "-t", session, "d"], check=True)  # WASD too
        text = wait_for(session, lambda t: f"x={x} " in t)
        assert falling_columns(text) == before
        subprocess.run(["tmux", "send-keys", "-t", session, "v"], check=True)
        text = wait_for(session, lambda t: (field(t, "pieces") or 0) >= 30 and (field(t, "score") or 0) > 0)
        assert "auto   on" in text
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        text = wait_for(session, lambda t: "EXIT=" in t)
        assert "EXIT=0" in text
        assert "+------" not in text and "auto   on" not in text  # curses left: the terminal is restored
        assert re.search(r"\d+ points, \d+ lines, \d+ pieces", text)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
