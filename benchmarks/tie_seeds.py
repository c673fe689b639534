"""How much a setting's score on the known sequence moves with its tie order (run by hand; prints,
asserts nothing).

    python benchmarks/tie_seeds.py CONFIG [--seeds 8] [--first 0] [--set KEY=VALUE ...] [--record FILE]

CONFIG is a solver YAML or a solve's summary.json (its config). The setting is played once per tie
seed (``beam.tie_seed`` or ``segment.tie_seed``, the policy's `solver.Policy.tie_seed`), from
``--first`` on, each record checked by the replayer as every solve's is; the command prints each
score and its CPU seconds, then the mean, its 95% interval, the standard deviation and the spread
(max - min over the mean): the noise a race on the Geek game pairs its candidates over. With
``--record FILE`` it also says whether tie seed 0 reproduces that record byte for byte.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from engine.config import ConfigError, apply_overrides, load_mapping  # noqa: E402
from experiments import description  # noqa: E402
from optimizers.space import with_settings  # noqa: E402
from solver import SolverConfig, registry, solve  # noqa: E402
from solver.online.intervals import mean_ci95  # noqa: E402


def config_of(path: Path, overrides: list[str]) -> dict:
    """The solver config mapping of a solver YAML or a summary.json (its plain keys, evaluator and
    policy section), with the overrides."""
    if path.suffix == ".json":
        from solver.result import read_summary

        data = read_summary(path).config.model_dump(mode="json")
        policy = data.get("policy", "beam")  # its own section and the plain keys: an older summary's other
        data = {k: v for k, v in data.items()  # sections may hold keys this version moved
                if k in SolverConfig.model_fields and (not isinstance(v, dict) or k in (policy, "evaluator"))}
    else:
        data = load_mapping(path)
    data.pop("meta", None)
    if data.get("threads") is None:
        data["threads"] = 1  # a core's CPU, as bench_solver's figures (--set threads=N for more)
    return apply_overrides(data, overrides)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("config", type=Path, help="a solver YAML or a solve's summary.json")
    parser.add_argument("--seeds", type=int, default=8, help="tie seeds played (default 8)")
    parser.add_argument("--first", type=int, default=0, help="the first tie seed (default 0, the records' order)")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="overrides of the config")
    parser.add_argument("--record", type=Path, help="a record tie seed 0 should reproduce")
    args = parser.parse_args(argv)
    try:
        data = config_of(args.config, args.set)
        setting = registry.get(data.get("policy", "beam")).policy.tie_seed
        if setting is None:
            raise ConfigError(f"{args.config}: policy {data.get('policy')!r} has no tie seed")
        SolverConfig.model_validate(data)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    scores = []
    print(f"{args.config}: {setting} {args.first} to {args.first + args.seeds - 1}")
    for seed in range(args.first, args.first + args.seeds):
        started = time.process_time()
        result = solve(SolverConfig.model_validate(with_settings(data, {setting: seed})))
        cpu = time.process_time() - started
        scores.append(result.score)
        same = ""
        if seed == 0 and args.record is not None:
            same = "  (the record, byte for byte)" if result.record.strip() == args.record.read_text().strip() else \
                "  (NOT the record)"
        print(f"  tie seed {seed:>4}: {result.score:>12,}  {cpu:7.1f} s CPU{same}", flush=True)
    a = np.array(scores, dtype=np.float64)
    low, high = mean_ci95(a) if len(a) > 1 else (a[0], a[0])
    print(f"  mean {a.mean():,.0f} (95% CI {low:,.0f} .. {high:,.0f}), sd {a.std(ddof=1) if len(a) > 1 else 0:,.0f}, "
          f"min {a.min():,.0f}, max {a.max():,.0f}, spread {(a.max() - a.min()) / a.mean():.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
