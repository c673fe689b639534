"""A bot for the course protocol (../shared/PROTOCOL.md) over standard input and output.

    python -m experiments.bot [CONFIG] [key=value ...]

CONFIG (default configs/solve/play.yaml) is a solver configuration whose policy is one for unknown pieces
(one_ply, preview, expect, mcts) and whose rules place pieces by dropping them (``course``: 10 x 20,
the classic matrices, drops only, 10/25/40/55 points for 1-4 lines).

The first answer waits for the bot's kernels: loaded from numba's cache in about a second, or
compiled (about 12 s here) when the cache is cold, after installing or changing the code.
``--warm-up`` compiles them ahead and exits: run it once before a judge with a time limit. A line
longer than 64 characters is an error, read no further.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import configs
from engine import get_rules
from engine.rules import SHAPE_NAMES
from experiments import description

DEFAULT_CONFIG = configs.path("solve/play.yaml")
#: protocol letters (upper or lower case; the digit 0 is the O) -> shape index
LETTERS = {**{n: i for i, n in enumerate(SHAPE_NAMES)}, **{n.lower(): i for i, n in enumerate(SHAPE_NAMES)},
           "0": SHAPE_NAMES.index("O")}
ENDS = ("X", "E", "x", "e")
#: the longest input line read (a protocol line is one or two characters; white space around it is
#: allowed): a longer one is an error, read no further
LINE_LIMIT = 64
#: characters of a bad line shown in an error message
SHOWN = 20


class ProtocolError(ValueError):
    """Input the protocol does not allow; the message says which line and why."""


def rotation_table(rules_name: str = "course") -> str:
    """Each piece's four rotations as the bot names them (0, 90, 180, 270: quarter turns clockwise),
    drawn from the rules' own shape tables; x is the piece's leftmost column."""
    rules = get_rules(rules_name)
    lines = ["rotation table (answer 'c x': c the rotation, x the leftmost column of the rotated piece):",
             "        " + "".join(f"{c:<8}" for c in ("0", "90", "180", "270"))]
    for s, name in enumerate(SHAPE_NAMES):
        boxes = []
        for k in range(4):
            cells = {tuple(c) for c in rules.cells[s, k].tolist()}
            boxes.append(["".join("#" if (x, y) in cells else "." for x in range(4)) for y in range(4)])
        for y in range(4):
            head = f"  {name + ('/0' if name == 'O' else ''):<4}  " if y == 0 else "        "
            lines.append(head + "".join(f"{boxes[k][y]:<8}" for k in range(4)))
    lines.append("I, S and Z have two distinct rotations (0 = 180, 90 = 270), O one; the bot answers the lowest name.")
    return "\n".join(lines)


class Bot:
    """The protocol's game from the bot's side: its board, score and held piece."""

    def __init__(self, policy):
        self.policy = policy
        self.rules = policy.rules
        self.board = np.zeros(self.rules.height, np.uint16)
        self.score = 0
        self.t = 0
        self.over = False

    def place(self, shape: int, preview: int) -> tuple[int, int]:
        """Place ``shape`` (the preview's shape or -1); returns (rotation in degrees, leftmost column),
        or (0, 0) once the game is over."""
        if not self.over:
            step, p = self.policy.play(self.board, self.t, shape, preview)
            if not step.placed:
                self.over = True
                print("game over", file=sys.stderr, flush=True)
            else:
                x, s = int(p[0]), int(p[2])
                self.score += int(step.points)
                self.t += 1
                return 90 * s, x + int(self.rules.cells[shape, s][:, 0].min())
        return 0, 0


def read_piece(line: str, number: int, count: int) -> list[str]:
    """The ``count`` characters of input line ``number`` (1-based), checked."""
    text = line.strip()
    if len(text) != count:
        want = "two characters (the piece and the preview)" if count == 2 else "one character"
        raise ProtocolError(f"line {number}: {text!r}: expected {want}")
    for ch in text:
        if ch not in LETTERS and not (count == 1 and ch in ENDS):
            raise ProtocolError(f"line {number}: {text!r}: unknown piece {ch!r} (expected one of I O T S Z J L, "
                                "lower case, 0 for O" + (", or X / E to end" if count == 1 else "") + ")")
    return list(text)


def run(policy, stdin, stdout) -> int:
    """Play one game over ``stdin``/``stdout``; returns the exit status (0 after X or E)."""
    bot = Bot(policy)

    def answer(shape, preview):
        c, x = bot.place(shape, preview)
        stdout.write(f"{c} {x}\n{bot.score}\n")
        stdout.flush()

    number = 0
    held = None
    while True:
        line = stdin.readline(LINE_LIMIT + 1)
        number += 1
        if not line:
            raise ProtocolError(f"line {number}: input ended before X or E")
        if len(line) > LINE_LIMIT and not line.endswith("\n"):
            raise ProtocolError(f"line {number}: {line[:SHOWN] + '...'!r}: longer than a protocol line "
                                f"({LINE_LIMIT} characters)")
        if not line.strip():
            number -= 1  # blank lines are ignored
            continue
        if held is None:
            first, second = read_piece(line, number, 2)
            held = LETTERS[first]
            answer(held, LETTERS[second])
            held = LETTERS[second]
            continue
        (ch,) = read_piece(line, number, 1)
        if ch in ENDS:
            answer(held, -1)
            return 0
        answer(held, LETTERS[ch])
        held = LETTERS[ch]


#: the game `warm_up` plays: every shape as the piece and as the preview, then the end
WARM_UP_GAME = "IO\nT\nS\nZ\nJ\nL\nI\nX\n"


def warm_up(policy) -> float:
    """Play a short game by ourselves, so that every kernel the bot uses is compiled (or loaded) and
    in numba's cache; returns the seconds it took."""
    import io
    import time

    t = time.monotonic()
    run(policy, io.StringIO(WARM_UP_GAME), io.StringIO())
    return time.monotonic() - t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.bot", description=description(__doc__),
        epilog=rotation_table(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?", default=str(DEFAULT_CONFIG), help="solver YAML (default: configs/solve/play.yaml)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="dotted overrides, e.g. policy=one_ply")
    parser.add_argument("--warm-up", action="store_true",
                        help="compile the bot's kernels into numba's cache and exit (run it once after installing "
                             "or changing the code: a cold first answer waits for the compiler)")
    args = parser.parse_intermixed_args(argv)
    from evaluators import EvaluatorError

    from engine.config import ConfigError
    from solver import load_online_policy

    try:
        config, policy = load_online_policy(args.config, args.overrides)
        if get_rules(config.rules).placement != "drop":
            raise ConfigError(f"{args.config}: rules: {config.rules!r} does not place pieces by dropping them "
                              "(the protocol answers a rotation and a column: use course)")
    except (ConfigError, EvaluatorError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.warm_up:
        seconds = warm_up(policy)
        print(f"warm: the bot's kernels are compiled and cached ({seconds:.1f} s)", file=sys.stderr)
        return 0
    try:
        return run(policy, sys.stdin, sys.stdout)
    except ProtocolError as e:
        print(f"error: standard input: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
