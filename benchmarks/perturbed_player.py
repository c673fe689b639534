"""A player weaker or stronger than a known one, for rank measurements (run by hand; writes one
evaluator file, asserts nothing):

    python benchmarks/perturbed_player.py --evaluator bcts --sigma 0.3 --seed 1 --out FILE.yaml

Multiplies each weight of ``--evaluator`` (a preset's name or an evaluator file) by
``exp(sigma * z)``, z a standard normal drawn by ``numpy.random.default_rng(seed)`` in the
evaluator's feature order: the signs are kept, the balance between the features moves by about
``sigma`` in log scale. Delta flags, step tables and the tie-break are kept. The file's description
names the base, sigma, seed and this command, so that the player can be made again. Used to add
players of other strengths to `splitting_rank.py`'s measurement (how well an estimate ranks
players as their played games do), where tuned players alone are too few.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.files import write_text  # noqa: E402
from evaluators import EvaluatorError, load_evaluator  # noqa: E402
from experiments import description  # noqa: E402


def perturbed(evaluator, sigma: float, seed: int):
    """``evaluator`` with every weight multiplied by ``exp(sigma * z)`` (z standard normal, drawn by
    ``default_rng(seed)`` in its feature order)."""
    z = np.random.default_rng(seed).standard_normal(len(evaluator.weights))
    weights = {name: float(round(term.weight * np.exp(sigma * dz), 6))
               for (name, term), dz in zip(evaluator.weights.items(), z)}
    return evaluator.with_weights(weights)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=description(__doc__))
    ap.add_argument("--evaluator", required=True, help="a preset's name or an evaluator file")
    ap.add_argument("--sigma", type=float, required=True, help="the log-scale spread of the factors (> 0)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True, help="the evaluator file to write (.yaml)")
    args = ap.parse_args(argv)
    if not args.sigma > 0:
        ap.error(f"--sigma: {args.sigma}: must be > 0")
    if args.out.suffix not in (".yaml", ".yml"):
        ap.error(f"--out: {args.out}: must end in .yaml")
    try:
        base = load_evaluator(args.evaluator)
    except EvaluatorError as e:
        ap.error(f"--evaluator: {e}")
    player = perturbed(base, args.sigma, args.seed)
    command = (f"python benchmarks/perturbed_player.py --evaluator {args.evaluator} --sigma {args.sigma:g} "
               f"--seed {args.seed} --out {args.out.as_posix()}")
    player = replace(player, name=args.out.stem,
                     description=f"{base.name}'s weights, each multiplied by exp({args.sigma:g} z), z standard normal "
                                 f"(seed {args.seed}); made by: {command}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.out, player.to_yaml())
    print(f"{args.out}: " + ", ".join(f"{n} {t.weight:g}" for n, t in player.weights.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
