"""Export a tuned evaluator alone: ``python -m experiments.export SOURCE [-o FILE] [--name NAME]``.

SOURCE is a run directory (its ``best.yaml``), a solver YAML (a run's ``best.yaml``,
``recommendation.yaml`` or any solver config) or an evaluator YAML. The evaluator it plays is
written as a preset-style YAML (name, description, features, tie break) that any solver config can
name (``evaluator: FILE``) and ``benchmarks/bench_standard.py --evaluator FILE`` can play; without
``-o`` it is printed. A tuning run that tunes weights writes the same file as ``RUN/evaluator.yaml``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.config import ConfigError
from engine.files import OutputError, write_yaml
from evaluators import EvaluatorError
from experiments import description


def evaluator_of(source: Path, name: str | None = None) -> dict:
    """The evaluator that ``source`` plays (see the module docstring), as its YAML structure."""
    from engine.config import load_mapping
    from evaluators import load_evaluator
    from solver import load_evaluators, load_solver_config

    path = source / "best.yaml" if source.is_dir() else source
    if not path.is_file():
        raise ConfigError(f"{path}: no such file" + (" (no evaluation of the run finished yet?)" if source.is_dir() else ""))
    data = load_mapping(path)
    if "features" in data and "policy" not in data:  # an evaluator YAML itself
        evaluator = load_evaluator(path)
    else:
        config = load_solver_config(path)
        evaluator = load_evaluators(config, str(path))
    out = evaluator.to_dict()
    if name:
        out["name"] = name
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.export", description=description(__doc__))
    parser.add_argument("source", type=Path, metavar="SOURCE", help="a run directory, a solver YAML or an evaluator YAML")
    parser.add_argument("-o", "--out", type=Path, help="where to write the evaluator (default: print it)")
    parser.add_argument("--name", help="the evaluator's name (default: the one it has)")
    args = parser.parse_args(argv)
    try:
        data = evaluator_of(args.source, args.name)
        if args.out is None:
            import yaml

            sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        else:
            write_yaml(args.out, data, header=f"# exported from {args.source}; name it in a solver config with\n"
                                              f"#   evaluator: {args.out}")
            print(f"wrote {args.out}")
    except (ConfigError, EvaluatorError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
