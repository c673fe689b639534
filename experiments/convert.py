"""Convert the pickled state files of older versions to data, once: ``python -m experiments.convert PATH...``.

Older versions saved a run's checkpoint (``RUN/checkpoint.pkl``), the searches of its candidates in
play (``RUN/in-play/*.pkl``) and a segment solve's search (``DIR.checkpoint.pkl``) as pickles,
which this version no longer reads: unpickling a file runs code the file names, and run
directories are handed from one person to another. Each PATH is a run directory, a solve's
output folder (its ``DIR.checkpoint.pkl`` beside it), or one such file. Each pickle is read by a
restricted loader that admits only the classes and functions those versions wrote (`ALLOWED`)
and refuses anything else before it is built; the state is then written as an `engine.statefile`
file (``.npz``) beside it and the pickle removed (``--keep`` keeps it). A file that cannot be
converted is one line naming it (exit status 2), and nothing of it is changed.
"""

from __future__ import annotations

import argparse
import io
import pickle
import sys
import zlib
from pathlib import Path

from engine.files import ReadError, read_bytes
from engine.statefile import MAX_SEARCH_STATE_BYTES, write_state
from experiments import description

#: every global a pickled state of the older versions names: the project's state classes, their
#: settings, and what numpy, DEAP, pyswarms and Optuna pickle their objects with
ALLOWED = {
    "numpy": {"dtype", "ndarray"},
    "numpy._core.multiarray": {"scalar", "_reconstruct"},
    "numpy.core.multiarray": {"scalar", "_reconstruct"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy.core.numeric": {"_frombuffer"},
    "numpy.random._pickle": {"__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor"},
    "numpy.random._pcg64": {"PCG64"},
    "numpy.random._mt19937": {"MT19937"},
    "numpy.random.bit_generator": {"SeedSequence", "__pyx_unpickle_SeedSequence"},
    "pathlib": {"PosixPath", "WindowsPath", "Path"},
    "deap.cma": {"Strategy"},
    "deap.tools.support": {"HallOfFame"},
    "pyswarms.backend.swarms": {"Swarm"},
    "optimizers.space": {"Space", "Param"},
    "optimizers.config": {"EarlyAbortConfig"},
    "optimizers.early_abort": {"EarlyAbort"},
    "optimizers.noise": {"Noise", "NoiseConfig", "Point", "RestartConfig", "SamplesConfig"},
    "optimizers.tuners.cmaes": {"CMAES", "CMAESConfig"},
    "optimizers.tuners.cem": {"CEM", "CEMConfig"},
    "optimizers.tuners.ga": {"GA", "GAConfig", "SelectionConfig", "CrossoverConfig", "MutationConfig", "Individual",
                             "FitnessMax", "same_setting"},
    "optimizers.tuners.pso": {"PSO", "PSOConfig"},
    "optimizers.tuners.random_search": {"RandomSearch", "RandomConfig"},
    "optimizers.tuners.sha": {"SHA", "SHAConfig", "RungConfig"},
    "optimizers.tuners.optuna_samplers": {"OptunaTuner", "OptunaConfig"},
    "optuna.distributions": {"FloatDistribution", "IntDistribution", "CategoricalDistribution"},
    "optuna.samplers._cmaes": {"CmaEsSampler"},
    "optuna.samplers._lazy_random_state": {"LazyRandomState"},
    "optuna.samplers._random": {"RandomSampler"},
    "optuna.samplers._tpe.parzen_estimator": {"_ParzenEstimator", "_ParzenEstimatorParameters"},
    "optuna.samplers._tpe.sampler": {"TPESampler", "default_gamma", "default_weights"},
    "optuna.search_space.intersection": {"IntersectionSearchSpace"},
}
#: the most bytes a pickle is read (and inflated) to
MAX_LEGACY_BYTES = MAX_SEARCH_STATE_BYTES


class ConvertError(ValueError):
    """A file that cannot be converted; one line naming it."""


class _Restricted(pickle.Unpickler):
    """An unpickler that builds only the globals of `ALLOWED` and refuses any other at once."""

    def find_class(self, module, name):
        if name in ALLOWED.get(module, ()):
            if module.startswith("pyswarms"):  # imported quietly, as the tuner does (its logging writes a file)
                from optimizers.tuners.pso import _backend

                _backend()
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"it names {module}.{name}, which no state of this program holds; not loaded")


def load_legacy(path: Path):
    """The object pickled in ``path`` (plain, or a zlib stream), built by the restricted loader."""
    try:
        data = read_bytes(path, MAX_LEGACY_BYTES, "a pickled state")
    except ReadError as e:
        raise ConvertError(str(e)) from None
    if data[:1] == b"\x78":
        inflate = zlib.decompressobj()
        try:
            data = inflate.decompress(data, MAX_LEGACY_BYTES + 1)
        except zlib.error as e:
            raise ConvertError(f"{path}: damaged: {e}") from None
        if len(data) > MAX_LEGACY_BYTES or inflate.unconsumed_tail:
            raise ConvertError(f"{path}: inflates to more than {MAX_LEGACY_BYTES:,} bytes: refused")
    try:
        return _Restricted(io.BytesIO(data)).load()
    except Exception as e:  # a damaged pickle raises almost anything; none of it ran code
        raise ConvertError(f"{path}: not convertible: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                           ) from None


def _legacy_tuner(optimizer) -> dict:
    """The state of a tuner an older version pickled, its older layouts brought up to date."""
    from optimizers._base import Tuner
    from optimizers.tuners.optuna_samplers import OptunaTuner
    from optimizers.tuners.pso import PSO

    if not isinstance(optimizer, Tuner):
        raise TypeError(f"the optimizer is a {type(optimizer).__name__}, not a tuner")
    if isinstance(optimizer, PSO) and "_memory" in vars(optimizer):  # its operators were not pickled
        bh_memory, vh_memory, neighbors = vars(optimizer).pop("_memory")
        optimizer._make_operators()
        optimizer.bh.memory, optimizer.vh.memory, optimizer.topology.neighbor_idx = bh_memory, vh_memory, neighbors
    if isinstance(optimizer, OptunaTuner) and "x0" not in vars(optimizer):
        optimizer.x0 = getattr(optimizer.sampler, "_x0", None)
        optimizer._trials = []
    if isinstance(optimizer, OptunaTuner) and "digests" not in vars(optimizer):
        optimizer.digests = None  # no digests of its told trials: taken from study.db when attached
    return optimizer.state_dict()


def convert_run_checkpoint(data) -> dict:
    """A run's checkpoint tree (`optimizers.state.RunState.state_dict`) from an older version's
    pickled mapping."""
    if not isinstance(data, dict) or "optimizer" not in data or "generation" not in data:
        raise TypeError("not a run's checkpoint")
    out = {k: data[k] for k in ("generation", "history", "best", "rescored") if k in data}
    out["done"] = bool(data.get("done", False))
    out["optimizer"] = _legacy_tuner(data["optimizer"])
    out["early_abort"] = data["early_abort"].state_dict()
    out["noise"] = None if data.get("noise") is None else data["noise"].state_dict()
    for k in ("config", "provenance"):
        if k in data:
            out[k] = data[k]
    return out


def convert_search(data) -> dict:
    """A segment search's checkpoint tree (`solver.segment`'s format 3) from format 2's mapping."""
    from solver.segment import CHECKPOINT_VERSION

    version = data.get("version") if isinstance(data, dict) else None
    if version != 2:
        raise TypeError(f"not a segment search's checkpoint of format 2 (its version: {version!r})")
    return {**data, "version": CHECKPOINT_VERSION}


def targets(path: Path) -> list[tuple[Path, str]]:
    """(pickle, kind) pairs found at ``path``: ``run``, ``search``."""
    from experiments.solve import checkpoint_path
    from optimizers.store import IN_PLAY, LEGACY_CHECKPOINT

    if path.is_dir():
        found = []
        if (path / LEGACY_CHECKPOINT).exists():
            found.append((path / LEGACY_CHECKPOINT, "run"))
        found += [(p, "search") for p in sorted((path / IN_PLAY).glob("*.pkl"))] if (path / IN_PLAY).is_dir() else []
        beside = checkpoint_path(path).with_suffix(".pkl")  # a solve's saved search, as an older version named it
        if beside.exists():
            found.append((beside, "search"))
        return found
    if path.name == LEGACY_CHECKPOINT:
        return [(path, "run")]
    if path.suffix == ".pkl" and path.exists():
        return [(path, "search")]
    raise ConvertError(f"{path}: not a run directory, a solve's folder or a pickled state file")


def convert(path: Path, kind: str, keep: bool = False) -> Path:
    """Convert one pickled state file of ``kind`` (`targets`); returns the state file written
    (``.npz`` beside it)."""
    from optimizers.store import CHECKPOINT_KIND
    from solver.segment import CHECKPOINT_KIND as SEARCH_KIND

    data = load_legacy(path)
    try:
        tree = convert_run_checkpoint(data) if kind == "run" else convert_search(data)
        out = path.with_suffix(".npz")
        write_state(out, tree, CHECKPOINT_KIND if kind == "run" else SEARCH_KIND, compress=kind == "search")
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise ConvertError(f"{path}: not convertible: {e}") from None
    if not keep:
        path.unlink()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.convert", description=description(__doc__))
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="a run directory, a solve's output folder, or a pickled state file")
    parser.add_argument("--keep", action="store_true", help="keep each pickle beside its converted file")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        try:
            found = targets(path)
            if not found:
                print(f"{path}: nothing to convert (no pickled state there)")
            for legacy, kind in found:
                print(f"{legacy} -> {convert(legacy, kind, args.keep)}")
        except ConvertError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
