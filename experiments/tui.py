"""A terminal Tetris player (curses) on the workbench's engine, with an agent that can take over.

    python -m experiments.tui [--rules geek|classic] [--agent CONFIG] [--seed N] [--save FILE]

Keys: arrows or WASD (left/right move, up/w rotates clockwise, down/s moves down one row), space
drops the piece to rest and locks it, v toggles autoplay by the agent, p pauses, q quits. Under
the classic rules the piece also falls by itself (faster every 30 lines: the level); under the Geek
rules it plays the contest's 10,000-piece sequence without gravity (a record holds no time) and
``--save FILE`` writes the human's record when the game ends or on quit (q or Ctrl-C), after the
project's replayer has confirmed its score.

``--save`` is checked before the game starts and written atomically (`engine.files.write_text`).
Without a terminal (standard input or output redirected, an unknown TERM) the player does not
start. Every such problem is one line, exit status 2. In full: docs/family.md, "The terminal
player"."""

from __future__ import annotations

import argparse
import curses
import os
import sys
import time
from pathlib import Path

import configs
from engine import GameState, Rules, encode, get_rules, replay
from engine.board import is_valid
from engine.config import ConfigError
from engine.files import not_a_folder, write_text
from engine.movegen import route
from engine.movegen.tables import STEP_C, STEP_D, STEP_L, STEP_R
from engine.rules import SHAPE_NAMES
from evaluators import EvaluatorError
from solver import load_online_policy
from experiments import description

DEFAULT_AGENT = configs.path("solve/tui_agent.yaml")


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


class SaveError(OSError):
    """A record that could not be written where ``--save`` said; the message (one line) says where it
    was kept instead."""


def save(game: Game, path: Path) -> str:
    """Write the game's record (atomically) after the replayer has confirmed its score; returns a
    message. When ``path`` cannot be written, the record is kept (`keep`) and `SaveError` says where."""
    record = game.record()
    verdict = replay(record, game.rules)
    if verdict.score != game.score:
        raise RuntimeError(f"the replayer scores the record {verdict.score}, the game showed {game.score}")
    try:
        write_text(path, record + "\n")
    except OSError as e:
        up = not_a_folder(path)  # (a folder replaced by a file since the start: "File exists" says less)
        why = f"{up} is not a folder" if up is not None else e.strerror or str(e)
        raise SaveError(f"{path}: cannot write there: {why}; {keep(record)}") from None
    return f"record of {game.t} pieces, {game.score} points (confirmed by the replayer) written to {path}"


def keep(record: str) -> str:
    """Keep a record that could not be written where asked: in a new file ``tui-record-N.txt`` of the
    current folder, else on standard output; returns where, for the error line."""
    for n in range(1, 1000):
        fallback = Path(f"tui-record-{n}.txt")
        try:
            fd = os.open(fallback, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        except FileExistsError:
            continue
        except OSError:
            break
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(record + "\n")
        except OSError:
            fallback.unlink(missing_ok=True)
            break
        return f"the record is kept in {fallback.resolve()}"
    print(record, flush=True)
    return "the record is printed on standard output above"


def terminal_problem() -> str | None:
    """Why the player cannot take the screen, or None: standard input or output is not a terminal,
    or curses does not know the terminal (TERM)."""
    for name, stream in (("standard input", sys.stdin), ("standard output", sys.stdout)):
        try:
            tty = stream is not None and stream.isatty()
        except ValueError:  # closed
            tty = False
        if not tty:
            return f"{name} is not a terminal; the player runs in one (not with < FILE, > FILE or a pipe)"
    try:
        curses.setupterm()
    except curses.error as e:
        return f"the terminal cannot be driven ({e}); check TERM"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.tui", description=description(__doc__),
                                     epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", choices=("geek", "classic"), default="classic")
    parser.add_argument("--agent", type=Path, default=DEFAULT_AGENT, help="solver YAML of the autoplay agent")
    parser.add_argument("--seed", type=int, help="piece seed (classic; default the preset's)")
    parser.add_argument("--save", help="geek: write the record here at the end")
    parser.add_argument("--tick", type=int, default=500, help="classic: ms per row of fall at level 0")
    args = parser.parse_args(argv)
    if args.save is not None and args.rules != "geek":
        print("error: --save: records are the Geek contest's format (use --rules geek)", file=sys.stderr)
        return 2
    if args.save is not None:  # before the game: a place that cannot be written is known at once
        from experiments.view import ViewError, output_path

        try:
            args.save = output_path(args.save, "record.txt", "--save")
        except ViewError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    problem = terminal_problem()
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
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
    status = 0
    try:
        curses.wrapper(play, game, agent, args.tick)
    except KeyboardInterrupt:  # a quit too: the record is saved all the same
        status = 130
    if args.save is not None:
        if not game.routes:
            print(f"no piece was locked: nothing written to {args.save}")
        else:
            try:
                print(save(game, args.save))
            except SaveError as e:
                print(f"error: {e}", file=sys.stderr)
                status = 2
    print(f"{game.score} points, {game.lines} lines, {game.t} pieces" + (f" ({game.end})" if game.end else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
