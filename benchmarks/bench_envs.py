"""The Gymnasium environments' steps per second (run by hand; prints figures for
docs/performance.md, asserts nothing).

    python benchmarks/bench_envs.py [--env Standard-v0] [--steps 20000] [--num-envs 4] [--seed 0]

Each form plays ``--steps`` steps of seeded random legal actions: one environment,
`engine.envs.TetrisEnv` as ``gymnasium.make`` returns it and bare (``.unwrapped``); then
``--num-envs`` games at once, `engine.envs.TetrisVectorEnv` (one kernel call steps them all),
``SyncVectorEnv`` over `TetrisEnv` and ``AsyncVectorEnv`` (one worker process per game). It
prints each form's steps per wall second, episodes ended and CPU seconds, with the load average.
A problem with the command line is one line, exit status 2. How the figures are taken, and the
figures: docs/performance.md, "Gymnasium environments".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

from engine.envs import GAMES, NAMESPACE  # noqa: E402
from experiments import description  # noqa: E402

WARM_UP = 200


def legal_choices(masks: np.ndarray, u: np.ndarray) -> np.ndarray:
    """For each row of ``masks`` (games x actions), the legal action of rank ``floor(u x count)``
    among the row's legal ones (``u`` uniform in [0, 1)); action 0 for a row with none."""
    counts = masks.sum(axis=1)
    rank = (u * counts).astype(np.int64)
    return np.minimum((masks.cumsum(axis=1) <= rank[:, None]).sum(axis=1), masks.shape[1] - 1)


def time_single(env, steps: int, seed: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, episodes ended) of ``steps`` steps of one environment."""
    u = np.random.default_rng(seed).random(WARM_UP + steps)
    obs, _ = env.reset(seed=seed)
    episodes = 0
    for i in range(WARM_UP + steps):
        if i == WARM_UP:
            episodes = 0
            wall, cpu = time.perf_counter(), time.process_time()
        legal = np.flatnonzero(obs["action_mask"])
        obs, _, terminated, truncated, _ = env.step(int(legal[int(u[i] * len(legal))]))
        if terminated or truncated:
            episodes += 1
            obs, _ = env.reset()
    return time.perf_counter() - wall, time.process_time() - cpu, episodes


def time_vector(envs, steps: int, seed: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, episodes ended) of ``steps`` steps of each game of ``envs``."""
    rng = np.random.default_rng(seed)
    obs, _ = envs.reset(seed=seed)
    n = envs.num_envs
    for _ in range(WARM_UP):
        obs, *_ = envs.step(legal_choices(obs["action_mask"], rng.random(n)))
    episodes = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        obs, _, terminated, truncated, _ = envs.step(legal_choices(obs["action_mask"], rng.random(n)))
        episodes += int((terminated | truncated).sum())
    return time.perf_counter() - wall, time.process_time() - cpu, episodes


def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (--help: the options)\n")


def at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog="bench_envs.py", description=description(__doc__))
    ap.add_argument("--env", default="Standard-v0", choices=sorted(GAMES), help="the registered game (default "
                    "Standard-v0)")
    ap.add_argument("--steps", type=at_least_one, default=20_000, help="steps timed per form (a vectorised step of "
                    "N games: N steps; default 20,000)")
    ap.add_argument("--num-envs", type=at_least_one, default=4, help="games of the vectorised forms (default 4)")
    ap.add_argument("--seed", type=int, default=0, help="the first game's seed and the actions' (default 0)")
    args = ap.parse_args(argv)
    env_id = f"{NAMESPACE}/{args.env}"
    n, steps = args.num_envs, args.steps
    vector_steps = max(1, steps // n)
    single = gym.make(env_id)
    rules = single.unwrapped.rules
    print(f"{env_id} ({rules.name}, {rules.width} x {rules.height}): random legal actions, {steps:,} steps per "
          f"form; load average {load()}", flush=True)

    def show(label: str, wall: float, cpu: float, episodes: int, counted: int) -> None:
        print(f"  {label:<38} {counted / wall:>10,.0f} steps/s  ({counted:,} steps in {wall:.2f} s, CPU {cpu:.2f} s, "
              f"{episodes:,} episodes ended)", flush=True)

    show("TetrisEnv via gymnasium.make", *time_single(single, steps, args.seed), steps)
    show("TetrisEnv bare (.unwrapped)", *time_single(single.unwrapped, steps, args.seed), steps)
    forms = [(f"TetrisVectorEnv, {n} games", {}), (f"SyncVectorEnv, {n} games", {"vectorization_mode": "sync"}),
             (f"AsyncVectorEnv, {n} worker processes", {"vectorization_mode": "async"})]
    for label, kwargs in forms:
        envs = gym.make_vec(env_id, num_envs=n, **kwargs)
        try:
            show(label, *time_vector(envs, vector_steps, args.seed), vector_steps * n)
        finally:
            envs.close()
    print(f"  load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
