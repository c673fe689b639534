"""A terminal Tetris player (curses) on the workbench's engine, with an agent that can take over.

    python -m experiments.tui [--rules geek|classic] [--agent CONFIG] [--seed N] [--save FILE]

Keys: arrows or WASD (left/right move, up/w rotates clockwise, down/s moves down one row), space
drops the piece to rest and locks it, v toggles autoplay by the agent, p pauses, q quits. Under
the classic rules the piece also falls by itself (faster every 30 lines: the level); under the Geek
rules it plays the contest's 10,000-piece sequence without gravity (a record holds no time) and
``--save FILE`` writes the human's record when the game ends or on quit, after the project's
replayer has confirmed its score.
"""

from __future__ import annotations

import argparse
import curses
import sys
import time
from pathlib import Path

import configs
from engine import GameState, Rules, encode, get_rules, replay
from engine.board import is_valid
from engine.config import ConfigError
from engine.movegen import STEP_C, STEP_D, STEP_L, STEP_R, route
from engine.rules import SHAPE_NAMES
from evaluators import EvaluatorError
from solver import load_online_policy

DEFAULT_AGENT = configs.path("tui_agent.yaml")


class Game:
    """One game as the player sees it: an `engine.GameState` (board, score, lines, pieces, end)
    plus the falling piece (x, y, state) and the steps taken with it. No drawing here (the curses
    front end reads the fields)."""

    def __init__(self, rules: Rules, seed: int | None = None, pieces: int = 100_000):
        self.state = GameState.new(rules, pieces=rules.piece_limit or pieces, seed=seed)
        self.routes: list[list[int]] = []
        self._spawn()

    rules = property(lambda self: self.state.rules)
    sequence = property(lambda self: self.state.sequence)
    board = property(lambda self: self.state.board)
    score = property(lambda self: self.state.score)
    lines = property(lambda self: self.state.lines)
    end = property(lambda self: self.state.end)
    t = property(lambda self: self.state.piece, doc="0-based index of the falling piece")

    @property
    def shape(self) -> int:
        return self.state.shape

    @property
    def next_shape(self) -> int:
        return int(self.sequence[self.t + 1]) if self.t + 1 < len(self.sequence) else -1

    @property
    def contest(self) -> bool:
        """Under the Geek rules the game is a contest record: no gravity (a record holds no time),
        and the contest's step limit per piece. The classic game has gravity and no step limit
        (the engine's ``max_steps`` there only bounds the solvers' move search)."""
        return self.rules.name == "geek"

    @property
    def level(self) -> int:
        return self.lines // 30

    def cells(self, x=None, y=None, s=None):
        s = self.s if s is None else s
        return self.rules.cells[self.shape, s], (self.x if x is None else x), (self.y if y is None else y)

    def _spawn(self):
        self.x, self.y, self.s = self.rules.spawn_x, self.rules.spawn_y, self.state.spawn_state
        self.steps: list[int] = []

    def step(self, code: int) -> bool:
        """One L, R, D or C step; True when the piece moved. In a `contest` game a piece has at
        most the contest's ``max_steps`` steps: then it locks where it stands."""
        if self.end:
            return False
        x, y, s = self.x, self.y, self.s
        if code == STEP_L:
            x -= 1
        elif code == STEP_R:
            x += 1
        elif code == STEP_D:
            y += 1
        else:
            s = (s + 1) % 4
        if not is_valid(self.board, self.rules.cells[self.shape, s], x, y, self.rules.width):
            return False
        self.x, self.y, self.s = x, y, s
        self.steps.append(code)
        if self.contest and len(self.steps) >= self.rules.max_steps:
            self.lock()
        return True

    def resting(self) -> bool:
        return not is_valid(self.board, self.rules.cells[self.shape, self.s], self.x, self.y + 1, self.rules.width)

    def drop(self):
        """Down to rest, then lock."""
        t = self.t
        while not self.end and self.t == t and self.step(STEP_D):
            pass
        if not self.end and self.t == t:  # (the step limit may have locked it already)
            self.lock()

    def lock(self):
        """Lock the piece where it stands, score it, and bring the next one."""
        self.state = self.state.apply((self.x, self.y, self.s), check=False).state
        self.routes.append(self.steps)
        if not self.end:
            self._spawn()

    def place(self, target):
        """Walk a shortest route from the spawn to ``target`` (x, y, state) and lock (the agent's
        move). A piece the player has already moved is dropped where it is instead."""
        if self.steps:
            self.drop()
            return
        t = self.t
        for code in route(self.board, self.rules, self.shape, self.s, target):
            if self.end or self.t != t:
                break
            self.step(code)
        if not self.end and self.t == t:
            self.lock()

    def record(self) -> str:
        """The Geek contest record of the pieces locked so far."""
        return encode(self.routes)

KEYS = {curses.KEY_LEFT: STEP_L, ord("a"): STEP_L, curses.KEY_RIGHT: STEP_R, ord("d"): STEP_R,
        curses.KEY_UP: STEP_C, ord("w"): STEP_C, curses.KEY_DOWN: STEP_D, ord("s"): STEP_D}


def put(win, y: int, x: int, text: str) -> None:
    """Write ``text`` at (y, x), clipped to the window (a small terminal shows part of the game)."""
    rows, cols = win.getmaxyx()
    if y >= rows or x >= cols:
        return
    try:
        win.addstr(y, x, text[:cols - x - (1 if y == rows - 1 else 0)])
    except curses.error:
        pass


def draw(win, game: Game, autoplay: bool, paused: bool, message: str):
    win.erase()
    r = game.rules
    falling = set()
    if not game.end:
        cells, x, y = game.cells()
        falling = {(x + int(dx), y + int(dy)) for dx, dy in cells}
    for y in range(r.height):
        row = int(game.board[y])
        line = "".join("@@" if (x, y) in falling else ("[]" if (row >> x) & 1 else " .") for x in range(r.width))
        put(win, y, 0, "|" + line + "|")
    put(win, r.height, 0, "+" + "--" * r.width + "+")
    col = 2 * r.width + 4
    info = [f"rules  {r.name}", f"score  {game.score}", f"lines  {game.lines}", f"level  {game.level}",
            f"pieces {game.t}", f"piece  {SHAPE_NAMES[game.shape] if game.t < len(game.sequence) else '-'}"
            f" x={game.x} y={game.y} r={game.s}", f"auto   {'on' if autoplay else 'off'}",
            "PAUSED" if paused else "", f"GAME OVER ({game.end})" if game.end else "", "next:"]
    for i, text in enumerate(info):
        put(win, i, col, text)
    if game.next_shape >= 0:
        nxt = {(int(dx), int(dy)) for dx, dy in r.cells[game.next_shape, r.spawn_state_of(game.t + 1)]}
        lo_x, lo_y = min(x for x, _ in nxt), min(y for _, y in nxt)
        for dy in range(4):
            put(win, len(info) + dy, col, "".join("[]" if (dx + lo_x, dy + lo_y) in nxt else "  " for dx in range(4)))
    put(win, len(info) + 5, col, "arrows/WASD move, space drop")
    put(win, len(info) + 6, col, "v autoplay, p pause, q quit")
    if message:
        put(win, len(info) + 8, col, message[:60])
    win.refresh()


def play(win, game: Game, agent, tick_ms: int) -> None:
    """The game loop; ``agent`` is the autoplay policy (`solver.online`)."""
    curses.curs_set(0)
    win.timeout(20)
    autoplay = paused = False
    message = ""
    last_fall = last_auto = time.monotonic()
    while True:
        draw(win, game, autoplay, paused, message)
        key = win.getch()
        if key in (ord("q"), ord("Q")):
            return
        if key in (ord("p"), ord("P")):
            paused = not paused
        elif key in (ord("v"), ord("V")):
            autoplay = not autoplay
        if paused or game.end:
            continue
        now = time.monotonic()
        if autoplay:
            if now - last_auto >= 0.05:
                last_auto = now
                target = agent.choose(game.board, game.t, game.shape, game.next_shape)
                if target is None:
                    game.drop()
                else:
                    game.place(target)
            continue
        if key in KEYS:
            game.step(KEYS[key])
        elif key == ord(" "):
            game.drop()
        if not game.contest and now - last_fall >= tick_ms / 1000 * 0.85 ** game.level:
            last_fall = now
            if not game.step(STEP_D) and game.resting():
                game.lock()


def save(game: Game, path: Path) -> str:
    """Write the game's record after the replayer has confirmed its score; returns a message."""
    record = game.record()
    verdict = replay(record, game.rules)
    if verdict.score != game.score:
        raise RuntimeError(f"the replayer scores the record {verdict.score}, the game showed {game.score}")
    path.write_text(record + "\n")
    return f"record of {game.t} pieces, {game.score} points (confirmed by the replayer) written to {path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.tui", description=__doc__.splitlines()[0],
                                     epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", choices=("geek", "classic"), default="classic")
    parser.add_argument("--agent", type=Path, default=DEFAULT_AGENT, help="solver YAML of the autoplay agent")
    parser.add_argument("--seed", type=int, help="piece seed (classic; default the preset's)")
    parser.add_argument("--save", type=Path, help="geek: write the record here at the end")
    parser.add_argument("--tick", type=int, default=500, help="classic: ms per row of fall at level 0")
    args = parser.parse_args(argv)
    if args.save and args.rules != "geek":
        print("error: --save: records are the Geek contest's format (use --rules geek)", file=sys.stderr)
        return 2
    if not args.agent.is_file():
        print(f"error: --agent: {args.agent}: file not found", file=sys.stderr)
        return 2
    try:  # before the screen is taken: a bad agent is a one-line error, not a crash mid-game
        _, agent = load_online_policy(args.agent, [f"rules={args.rules}"])
    except (ConfigError, EvaluatorError) as e:
        print(f"error: --agent: {e}", file=sys.stderr)
        return 2
    game = Game(get_rules(args.rules), args.seed)
    curses.wrapper(play, game, agent, args.tick)
    if args.save and game.routes:
        print(save(game, args.save))
    print(f"{game.score} points, {game.lines} lines, {game.t} pieces" + (f" ({game.end})" if game.end else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
