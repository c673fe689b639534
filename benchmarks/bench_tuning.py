"""Tuning benchmark (run by hand; prints, asserts nothing):

    python benchmarks/bench_tuning.py [--seeds 1 2 3] [--generations N] [--tuners ga cem ...] [--compare-only] [--out DIR]
    python benchmarks/bench_tuning.py --standard [--seeds 1 2 3] [--standard-tuners cmaes optuna-tpe ...]
                                      [--generations N] [--population N] [--set KEY=VALUE ...] [--out DIR]
    python benchmarks/bench_tuning.py --held-out RUN_DIR [RUN_DIR ...] [--instances 10] [--seed 1000]
    python benchmarks/bench_tuning.py --dropped RUN_DIR [--only-generations G ...]

The first form: the registered tuners at equal budget on the Geek game's short fitness, early abort
on and off. ``--standard``: our CMA-ES against Optuna's samplers on the standard 10 x 20 splitting
fitness (`STANDARD`), one resumable run directory per tuner and seed under ``--out``.
``--held-out``: finished runs' picks played on the same held-out instances, paired. ``--dropped``:
a race's dropped candidates played out, to count those that would have beaten its winner. In
full: docs/tuning.md ("The optuna tuner", "Measured: tuners and early abort", "Racing and validated picks").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from optimizers import tune  # noqa: E402
from optimizers.run import load_run_config  # noqa: E402
from optimizers.fitness import Task, evaluate  # noqa: E402
from engine.parallel import Pool  # noqa: E402
from optimizers.run_loop import make_space  # noqa: E402
from optimizers.tuners import TUNERS  # noqa: E402
from experiments import description  # noqa: E402


def run(config_name: str, out: Path, overrides: list[str], run_dir: Path | None = None, quiet: bool = True) -> dict:
    """One tuning run of a shipped config with ``overrides`` in a new directory under ``out``, or,
    with ``run_dir``, in that directory: started there, or continued from its checkpoint
    (`start_or_resume`), so that a benchmark of hours is resumed run by run. ``wall`` is the
    run's own time over every sitting (its generations' wall seconds) for a continued run.
    ``quiet=False`` shows the run's progress (a bar per generation and its summary line)."""
    config = load_run_config(ROOT / "configs" / config_name, [f"runs_dir={out}", *overrides])
    t0 = time.perf_counter()
    result = tune(config, quiet=quiet) if run_dir is None else start_or_resume(config, run_dir, quiet)
    wall = time.perf_counter() - t0
    ev, gens = result.evaluations(), result.generations()
    if run_dir is not None:
        wall = float(gens.wall_seconds.sum())
    sim = ev[~ev.cached]
    rescored = result.state.rescored
    return {"config": config, "dir": result.dir, "best": result.state.best.fitness, "evaluations": len(ev),
            "rescored": None if rescored is None else rescored.fitness,
            "simulated": len(sim), "aborted": int(ev.aborted.sum()), "pieces": int(sim.pieces.sum()),
            "eval_seconds": float(sim.seconds.sum()), "gen_wall": float(gens.wall_seconds.sum()), "wall": wall,
            "n_jobs": config.parallel.n_jobs, "ev": ev, "gens": gens}


class BenchError(Exception):
    """A benchmark that cannot go on as asked (one line, naming the file and what is wrong)."""


def start_or_resume(config, run_dir: Path, quiet: bool = True):
    """The run of ``config`` in ``run_dir``: started there when it holds no checkpoint yet,
    otherwise continued from it (`optimizers.run.resume`; a finished run is read back as it is,
    nothing played again and no file of it written). `BenchError` when the run there was made by
    another config (the ``parallel`` settings, ``runs_dir``, the ``meta`` notes and the sections of
    the tuners it does not run aside: a default changed in another tuner's settings does not make
    it another run)."""
    from optimizers.run import Run, load_resume, resume, saved_state
    from optimizers.store import RunStore

    store = RunStore(run_dir, [])
    if store.checkpoint.is_file():
        written = load_resume(run_dir)
        # meta: notes (where the YAML was read), not settings
        ignore = {"parallel", "runs_dir", "meta"} | (set(TUNERS) - {written.algorithm})
        if written.model_dump(mode="json", exclude=ignore) != config.model_dump(mode="json", exclude=ignore):
            raise BenchError(f"{run_dir / 'config.yaml'}: made by other settings than this benchmark's; "
                             f"give another --out or remove {run_dir}")
        state = saved_state(run_dir)
        if state.done:
            return Run(run_dir, written, state)
        return resume(run_dir, config=written.model_copy(update={"parallel": config.parallel}), quiet=quiet)
    run_dir.mkdir(parents=True, exist_ok=True)
    return tune(config, quiet=quiet, run_dir=run_dir)


def false_aborts(r: dict) -> tuple[int, int, list]:
    """Run every aborted candidate (memo repeats included) to the end without a threshold and
    compare its final fitness with the K-th best finished fitness of the generation that aborted
    it; returns (checks, false aborts, margins below the K-th best)."""
    from optimizers.fitness import canonical

    config, ev, gens = r["config"], r["ev"], r["gens"]
    space = make_space(config)
    kth = dict(zip(gens.generation, gens.kth_best))
    aborted = ev[ev.aborted].drop_duplicates(["generation", "key"])
    keys, tasks = [], []
    for _, row in aborted.drop_duplicates("key").iterrows():
        values = []
        for p in space.params:
            v = row[p.path]
            values.append(int(v) if p.type == "int" else float(v) if p.type == "float" else v)
        _, data = canonical(space.config(values))
        keys.append(row.key)
        tasks.append(Task(data, threads=1))
    with Pool(config.parallel) as pool:
        final = {k: res.record.fitness for k, res in zip(keys, pool.map(evaluate, tasks))}
    margins = [kth[row.generation] - final[row.key] for _, row in aborted.iterrows()]
    return len(margins), sum(m <= 0 for m in margins), margins


def short_tuners() -> dict[str, tuple[str, list[str], str]]:
    """Part 1's tuners: label -> (config, overrides, the setting counting its generations): every
    registered tuner with a shipped config of its name, and Optuna's CMA-ES sampler beside its TPE."""
    out = {}
    for name, tuner in TUNERS.items():
        if (ROOT / "configs" / f"{name}.yaml").is_file():
            steps = "iterations" if "iterations" in tuner.Settings.model_fields else "generations"
            out[name] = (f"{name}.yaml", [], f"{name}.{steps}")
    if "optuna" in out:
        out["optuna-cmaes"] = ("optuna.yaml", ["optuna.sampler=cmaes"], "optuna.generations")
    return out


#: part 5, the standard 10 x 20 fitness at equal budget: label -> (config, overrides)
STANDARD = {
    "cmaes": ("cmaes_standard_split.yaml", ["cmaes.bounds=penalty"]),
    "optuna-tpe": ("optuna_standard_split.yaml", ["optuna.sampler=tpe"]),
    "optuna-cmaes": ("optuna_standard_split.yaml", ["optuna.sampler=cmaes"]),
    "cmaes-resample": ("cmaes_standard_split.yaml", ["cmaes.bounds=resample"]),
}


def standard(args, out: Path) -> int:
    """Part 5: ours against Optuna's samplers on the standard 10 x 20 fitness, at equal budget."""
    size = []
    if args.generations:
        size += [f"cmaes.generations={args.generations}", f"optuna.generations={args.generations}"]
    if args.population:
        size += [f"cmaes.population={args.population}", f"optuna.population={args.population}"]
    budgets = {}
    for label in args.standard_tuners:
        name, over = STANDARD[label]
        c = load_run_config(ROOT / "configs" / name, [*over, *size, *args.set])
        budgets[label] = (c.population, c.generations)
    print(f"runs in {out}/\n")
    print("5. the standard 10 x 20 fitness (a splitting estimate of the mean rows per game per candidate): "
          "ours against Optuna's samplers at equal budget")
    print("   candidates x generations: " + ", ".join(f"{k} {p} x {g}" for k, (p, g) in budgets.items()))
    if len(set(budgets.values())) > 1:
        print("   warning: the budgets differ")
    print(f"{'tuner':<14}{'seed':>5}{'evaluations':>13}{'tuned best':>14}{'re-scored':>14}{'wall s':>9}")
    results: dict[str, list[dict]] = {}
    for seed in args.seeds:  # seed by seed, so that a benchmark stopped part way compares every tuner on its first seeds
        for label in args.standard_tuners:
            name, over = STANDARD[label]
            r = run(name, out, [f"seed={seed}", *over, *size, *args.set], run_dir=out / f"standard-{label}-seed{seed}",
                    quiet=False)
            results.setdefault(label, []).append(r)
            rescored = "" if r["rescored"] is None else f"{r['rescored']:,.0f}"
            print(f"{label:<14}{seed:>5}{r['evaluations']:>13}{r['best']:>14,.0f}{rescored:>14}{r['wall']:>9.0f}  "
                  f"{r['dir']}", flush=True)
    print("   re-scored best (the tuned best when not re-scored), mean over seeds (min-max):")
    for label, rs in results.items():
        final = [r["rescored"] if r["rescored"] is not None else r["best"] for r in rs]
        tuned = [r["best"] for r in rs]
        print(f"  {label:<14} {sum(final) / len(final):,.0f} ({min(final):,.0f}-{max(final):,.0f}); "
              f"tuned best {sum(tuned) / len(tuned):,.0f}; wall {sum(r['wall'] for r in rs):.0f} s")
    return 0


def _values(space, row) -> list:
    return [int(row[p.path]) if p.type == "int" else float(row[p.path]) if p.type == "float" else row[p.path]
            for p in space.params]


def _play(configs: list[dict], n_jobs: int) -> list[float]:
    """Each solver config mapping's fitness (`optimizers.fitness.evaluate` on a pool of ``n_jobs``)."""
    from engine.parallel import ParallelConfig

    tasks = [Task(c, threads=1) for c in configs]
    with Pool(ParallelConfig(n_jobs=n_jobs)) as pool:
        return [r.record.fitness for r in pool.map(evaluate, tasks)]


def held_out(args) -> int:
    """Part 6: each run's pick (best.yaml) and the runs' start played on the same held-out instances."""
    import numpy as np
    import pandas as pd
    import yaml

    from optimizers.fitness import canonical
    from optimizers.config import base_solver
    from optimizers.instances import InstanceSet, games_of, instance_setting
    from optimizers.run import load_resume
    from optimizers.space import with_settings
    from optimizers.validation import paired_interval

    runs = []
    for run_dir in args.held_out:
        if not (run_dir / "best.yaml").is_file():
            raise BenchError(f"{run_dir}: no best.yaml (not a run directory, or no evaluation finished)")
        config = load_resume(run_dir)
        space = make_space(config)
        pick = yaml.safe_load((run_dir / "best.yaml").read_text())
        pick.pop("meta", None)
        ev = pd.read_csv(run_dir / "evaluations.csv")
        base = base_solver(config)
        spent = int((~ev.cached).sum()) * games_of(base)  # (games or estimates played)
        seconds = float(ev.seconds[~ev.cached].sum())
        if (run_dir / "rescore.csv").is_file():
            rs = pd.read_csv(run_dir / "rescore.csv")
            games = games_of(with_settings(base, config.rescore.overrides)) if config.rescore is not None else 1
            spent, seconds = spent + int((~rs.cached).sum()) * games, seconds + float(rs.seconds[~rs.cached].sum())
        runs.append((run_dir, config, pick, space.config(space.init_values), spent, seconds))
    setting, _ = instance_setting(runs[0][2])
    held = InstanceSet("held-out", setting, args.seed, args.games if setting == "seed" else 1, args.instances)
    players = {}  # key -> config, in first-seen order
    plays = []  # per run: (pick keys, start keys)
    for _, _, pick, start, _, _ in runs:
        keys = []
        for player in (pick, start):
            row = []
            for i in range(held.count):
                key, data = canonical(with_settings(player, held.settings(i)))
                players.setdefault(key, data)
                row.append(key)
            keys.append(row)
        plays.append(keys)
    order = list(players)
    print(f"6. picks on {held.describe()}, {len(order)} plays on {args.jobs} workers", flush=True)
    got = dict(zip(order, _play([players[k] for k in order], args.jobs)))
    print(f"{'run':<44}{'algorithm':>16}{'games':>7}{'CPU s':>8}{'pick':>14}{'start':>14}   difference to the start "
          f"({held.count} paired, 95%)")
    picks = []
    for (run_dir, config, *_, spent, seconds), (pk, sk) in zip(runs, plays):
        p, s0 = [got[k] for k in pk], [got[k] for k in sk]
        d, low, high = paired_interval(p, s0, 0.95)
        race = "race" if config.race is not None else "no race"
        label = f"{config.algorithm} ({race})"
        print(f"{run_dir.name[:43]:<44}{label:>16}{spent:>7}{seconds:>8.0f}{np.mean(p):>14,.0f}{np.mean(s0):>14,.0f}   "
              f"{d:+,.0f} ({low:+,.0f} to {high:+,.0f})")
        picks.append((run_dir.name, p))
    for a in range(len(picks)):
        for b in range(a + 1, len(picks)):
            d, low, high = paired_interval(picks[a][1], picks[b][1], 0.95)
            print(f"  {picks[a][0]} - {picks[b][0]}: {d:+,.0f} ({low:+,.0f} to {high:+,.0f})")
    return 0


def dropped(args) -> int:
    """Part 7: a racing run's dropped candidates played out to the race's last instance."""
    import numpy as np
    import pandas as pd

    from optimizers.config import base_solver
    from optimizers.fitness import canonical
    from optimizers.instances import training
    from optimizers.racing import Race, race_order
    from optimizers.run import load_resume
    from optimizers.space import with_settings

    run_dir = args.dropped
    config = load_resume(run_dir)
    if config.race is None:
        raise BenchError(f"{run_dir}: not a racing run (its config has no race section)")
    space = make_space(config)
    instances = training(config, base_solver(config))
    ev = pd.read_csv(run_dir / "evaluations.csv").sort_values(["generation", "index"])
    last = config.race.max_instances
    todo, races = {}, []
    seen = 0  # the training instances the races before played (`race_order`)
    for g, rows in ev.groupby("generation"):
        order = race_order(seen, config.race)  # round k played instance order[k]
        played: dict[tuple, list[float]] = {}  # an entrant's values -> its results, round by round
        for _, row in rows.iterrows():
            played.setdefault(tuple(_values(space, row)), []).append(float(row.fitness))
        most = max(len(v) for v in played.values())
        seen = max(seen, max(order[:most]) + 1)
        if args.only_generations and g not in args.only_generations:
            continue
        # the race replayed from its results (entrants in the order they first played): its survivors
        entrants = list(played)
        race = Race(list(range(len(entrants))), config.race,
                    results={(c, k): f for c, v in enumerate(entrants) for k, f in enumerate(played[v])})
        race.step()
        alive = [entrants[c] for c in race.alive]
        winner = max(alive, key=lambda v: np.mean(played[v]))
        for values, results in played.items():
            if values in alive and values != winner:
                continue
            for k in range(len(results), last):
                key, data = canonical(with_settings(space.config(list(values)), instances.settings(order[k])))
                todo.setdefault(key, data)
        races.append((g, played, alive, winner, order))
    keys = list(todo)
    print(f"7. {run_dir.name}: the dropped candidates of {len(races)} races played out to instance {last} "
          f"({len(keys)} plays on {args.jobs} workers)", flush=True)
    got = dict(zip(keys, _play([todo[k] for k in keys], args.jobs)))

    def full(values, results, order):
        rest = [got[canonical(with_settings(space.config(list(values)), instances.settings(order[k])))[0]]
                for k in range(len(results), last)]
        return float(np.mean(results + rest))

    wrong, checked = 0, 0
    for g, played, alive, winner, order in races:
        w = full(winner, played[winner], order)
        beaten = [(v, full(v, r, order)) for v, r in played.items() if v not in alive]
        better = [f for _, f in beaten if f > w]
        checked += len(beaten)
        wrong += len(better)
        print(f"  generation {g}: {len(beaten)} dropped, winner {w:,.0f} over {last}; "
              f"{len(better)} would have beaten it" + (f" ({', '.join(f'{f:,.0f}' for f in better)})" if better else ""))
    print(f"  {wrong} of {checked} dropped candidates would have beaten their race's winner with the full budget")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--generations", type=int, help="fewer generations (a quick look)")
    parser.add_argument("--out", type=Path, help="where the runs go (default: a temporary directory)")
    shipped = short_tuners()
    parser.add_argument("--tuners", nargs="+", choices=list(shipped), default=list(shipped),
                        help="the tuners compared in part 1")
    parser.add_argument("--compare-only", action="store_true", help="part 1 alone (no early-abort study)")
    parser.add_argument("--standard", action="store_true", help="part 5 alone: the standard 10 x 20 comparison")
    parser.add_argument("--standard-tuners", nargs="+", choices=list(STANDARD), default=list(STANDARD),
                        help="the tuners compared in part 5")
    parser.add_argument("--population", type=int, help="part 5: fewer candidates per generation (a quick look)")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="part 5: overrides for every run")
    parser.add_argument("--held-out", type=Path, nargs="+", metavar="RUN_DIR",
                        help="part 6 alone: these finished runs' picks and start on the same held-out instances")
    parser.add_argument("--instances", type=int, default=10, help="part 6: held-out instances")
    parser.add_argument("--seed", type=int, default=1000, help="part 6: the first held-out instance's seed")
    parser.add_argument("--games", type=int, default=1, help="part 6: games (or estimates) an instance plays")
    parser.add_argument("--dropped", type=Path, metavar="RUN_DIR",
                        help="part 7 alone: a racing run's dropped candidates played out")
    parser.add_argument("--only-generations", type=int, nargs="+", metavar="G",
                        help="part 7: these generations' races only")
    parser.add_argument("--jobs", type=int, default=2, help="parts 6 and 7: workers")
    args = parser.parse_args(argv)
    if args.held_out or args.dropped:
        try:
            return held_out(args) if args.held_out else dropped(args)
        except BenchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-tuning-"))
    if args.standard:
        try:
            return standard(args, out)
        except BenchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    extra = lambda label: [f"{shipped[label][2]}={args.generations}"] if args.generations else []

    print(f"runs in {out}/\n")
    print("1. final best fitness at equal evaluations (configs/*.yaml)")
    print(f"{'algorithm':<13}{'seed':>5}{'evaluations':>13}{'simulated':>11}{'aborted':>9}{'best':>11}{'wall s':>9}")
    runs: dict[str, list[dict]] = {}
    labels = args.tuners if args.compare_only else ["ga", *args.tuners]  # ga: parts 2-4 read it
    for label in dict.fromkeys(labels):
        name, over, _ = shipped[label]
        for seed in args.seeds:
            r = run(name, out, [f"seed={seed}", *over, *extra(label)])
            runs.setdefault(label, []).append(r)
            print(f"{label:<13}{seed:>5}{r['evaluations']:>13}{r['simulated']:>11}{r['aborted']:>9}"
                  f"{r['best']:>11,.0f}{r['wall']:>9.1f}", flush=True)
    for label, rs in runs.items():
        bests = [r["best"] for r in rs]
        print(f"  {label:<13} mean best {sum(bests) / len(bests):,.0f}  (min {min(bests):,.0f}, max {max(bests):,.0f})")
    if args.compare_only:
        return 0

    print("\n2. configs/ga.yaml with and without early abort")
    print(f"{'early abort':<12}{'seed':>5}{'simulated':>11}{'aborted':>9}{'pieces':>10}{'best':>11}{'wall s':>9}")
    off = []
    for seed, r_on in zip(args.seeds, runs["ga"]):
        r_off = run("ga.yaml", out, [f"seed={seed}", "early_abort.enabled=false", *extra("ga")])
        off.append(r_off)
        for label, r in (("on", r_on), ("off", r_off)):
            print(f"{label:<12}{seed:>5}{r['simulated']:>11}{r['aborted']:>9}{r['pieces']:>10,}{r['best']:>11,.0f}"
                  f"{r['wall']:>9.1f}", flush=True)
    on = runs["ga"]
    p_on, p_off = sum(r["pieces"] for r in on), sum(r["pieces"] for r in off)
    b_on, b_off = sum(r["best"] for r in on) / len(on), sum(r["best"] for r in off) / len(off)
    print(f"  pieces simulated: {p_on:,} with, {p_off:,} without: {100 * (1 - p_on / p_off):.1f}% fewer")
    print(f"  mean final best: {b_on:,.0f} with, {b_off:,.0f} without ({100 * (b_on / b_off - 1):+.2f}%)")
    print(f"  wall: {sum(r['wall'] for r in on):.0f} s with, {sum(r['wall'] for r in off):.0f} s without")

    print("\n3. no false abort: aborted candidates run to the end vs the K-th best they were compared with")
    for seed, r in zip(args.seeds, on):
        checked, bad, margins = false_aborts(r)
        closest = min(margins) if margins else float("nan")
        print(f"  seed {seed}: {checked} aborts checked, {bad} false aborts "
              f"(closest: {closest:,.0f} points below the K-th best)", flush=True)

    print("\n4. parallel efficiency (summed evaluation seconds / (n_jobs x wall))")
    for name, rs in runs.items():
        for seed, r in zip(args.seeds, rs):
            n = r["n_jobs"]
            print(f"  {name:<13} seed {seed}: n_jobs {n}: generations {r['eval_seconds'] / (n * r['gen_wall']):.3f}, "
                  f"whole run {r['eval_seconds'] / (n * r['wall']):.3f} ({r['eval_seconds']:.0f} s of evaluations, "
                  f"{r['gen_wall']:.0f} s in generations, {r['wall']:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
