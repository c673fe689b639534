"""A run directory's other files, damaged between two sessions (issue 61, item 7): each ends in one
line naming the file and what is wrong (exit status 2), or the run recovers to exactly the end of
one never stopped; nothing damaged is taken in silently.

- study.db (the `optuna` tuner's study): not a SQLite file, truncated, a folder, a device, no
  Optuna tables, or a told trial's value or parameter rewritten (the checkpoint's digest of the
  told trials);
- evaluations.csv: a NaN or infinite fitness (a damaged line), a row twice, a candidate the
  generation did not have, a value changed in a finished generation (the checkpoint's statistics);
- curves.jsonl removed: the evaluations whose curves it held are simulated again when their
  configs come up again, and the run ends as one never stopped;
- a candidate's saved search in in-play/ truncated or garbled: discarded, said in one line, and
  the candidate played from its first piece to the same end.

The runs play the synthetic fitness of tests/toy_fitness.py, except the in-play ones (a segment
search, which alone saves its search)."""

import csv
import os
import shutil
import sqlite3

import pytest
import yaml

import toy_fitness
from experiments import run as run_cli
from optimizers import run as tuning
from optimizers.tuners.optuna_samplers import STUDY_ADVICE

#: the toy run as a GA whose candidates come back (games on fixed seeds, two elites), under an early
#: abort from the second generation on: the memo and the threshold both at work
GA = {**toy_fitness.RUN, "algorithm": "ga", "ga": {"population": 6, "generations": 5, "elitism": 2, "hall_of_fame": 4},
      "games": {"seeds": "fixed"}, "early_abort": {"enabled": True, "k": 2, "margin": 0, "relative": 0.0}}
#: the toy run with Optuna's TPE (study.db), early-aborted candidates as pruned trials
OPTUNA = {**GA, "algorithm": "optuna", "optuna": {"sampler": "tpe", "population": 6, "generations": 4}}
#: generations.csv's columns that depend on timing
TIMED = ("eval_seconds", "wall_seconds")


class Stop(Exception):
    pass


def config(folder, data):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({**data, "runs_dir": str(folder / "runs")}, sort_keys=False))
    return tuning.load_run_config(path)


def whole_and_stopped(folder, data, generation=2, after=3):
    """The run of ``data`` played to its end, and the same run stopped after ``after`` evaluations
    of ``generation``."""
    with pytest.MonkeyPatch.context() as mp:
        toy_fitness.install(mp, noise=50.0)
        whole = tuning.tune(config(folder / "whole", data)).dir
        seen = []

        def stop(row):
            seen.append(row)
            if sum(r["generation"] == generation for r in seen) == after:
                raise Stop()

        with pytest.raises(Stop):
            tuning.tune(config(folder / "stopped", data), on_evaluation=stop)
    (stopped,) = (folder / "stopped" / "runs").iterdir()
    return whole, stopped


@pytest.fixture(scope="module")
def ga_runs(tmp_path_factory):
    return whole_and_stopped(tmp_path_factory.mktemp("ga"), GA)


@pytest.fixture(scope="module")
def optuna_runs(tmp_path_factory):
    pytest.importorskip("optuna")
    return whole_and_stopped(tmp_path_factory.mktemp("optuna"), OPTUNA)


@pytest.fixture
def toy(monkeypatch):
    return toy_fitness.install(monkeypatch, noise=50.0)


def copy_of(run, tmp_path):
    copy = tmp_path / run.name
    shutil.copytree(run, copy, symlinks=True)
    return copy


def run_main(*args):
    return run_cli.main([*map(str, args), "--quiet"])


def table(path, leave=()):
    with open(path, newline="") as f:
        return [{k: v for k, v in row.items() if k not in leave} for row in csv.DictReader(f)]


def end(run_dir):
    """What a run ends with, timing aside: evaluations.csv, generations.csv and best.yaml (its run's
    name and config file aside)."""
    best = yaml.safe_load((run_dir / "best.yaml").read_text())
    del best["meta"]["run"], best["meta"]["config"]
    return (table(run_dir / "evaluations.csv", ("seconds",)), table(run_dir / "generations.csv", TIMED), best)


def refused(capsys) -> str:
    """The one line on standard error, without its ``error: ``."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0][len("error: "):]


def untouched(run_dir):
    """The files a refused resume must leave as they were."""
    return {name: (run_dir / name).read_bytes() for name in ("checkpoint.npz", "evaluations.csv", "provenance.json")}


# ------------------------------------------------------------------------------------------------
# study.db


def not_a_study(path):
    path.unlink()
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.commit()
    connection.close()


def another_schema(path):
    connection = sqlite3.connect(path)
    connection.execute("UPDATE alembic_version SET version_num = 'v2.0.0'")
    connection.commit()
    connection.close()


def truncated(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def replaced(path, make):
    path.unlink()
    make(path)


STUDY_DAMAGE = {
    "random bytes": (lambda p: p.write_bytes(os.urandom(64 * 1024)),
                     "not a SQLite database (it does not begin with SQLite's header)"),
    "a folder": (lambda p: replaced(p, lambda q: q.mkdir()), "a folder, not a file"),
    "a link to /dev/zero": (lambda p: replaced(p, lambda q: q.symlink_to("/dev/zero")),
                            "not a regular file (a character device)"),
    "a link to nothing": (lambda p: replaced(p, lambda q: q.symlink_to(p.parent / "gone.db")),
                          "a symbolic link to nothing"),
    "another database": (not_a_study, "not an Optuna study (no table studies, study_directions, trials, trial_params, "
                                      "trial_values, trial_intermediate_values, version_info)"),
    "another schema": (another_schema, ("a study whose tables this version of Optuna cannot use (",)),
    # where SQLite first meets the cut depends on the file's layout: either of its two refusals
    "truncated": (truncated, ("not a readable SQLite database (", "a damaged SQLite database (")),
}


@pytest.mark.parametrize("damage", list(STUDY_DAMAGE))
def test_a_study_db_that_is_not_the_study_is_one_line(optuna_runs, tmp_path, capsys, toy, damage):
    run = copy_of(optuna_runs[1], tmp_path)
    make, problem = STUDY_DAMAGE[damage]
    path = run / "study.db"
    make(path)
    before = untouched(run)
    assert run_main("--resume", run) == 2
    line = refused(capsys)
    assert line.startswith(f"{path}: ") and line.endswith(f"; {STUDY_ADVICE}")
    if isinstance(problem, str):
        assert line == f"{path}: {problem}; {STUDY_ADVICE}"
    else:
        assert line.startswith(tuple(f"{path}: {start}" for start in problem))
    assert untouched(run) == before and toy.calls == []


def test_past_a_damaged_study_db_the_run_goes_on_as_the_message_says(optuna_runs, tmp_path, toy):
    """study.db and checkpoint.npz moved aside: the run starts over from evaluations.csv, every
    evaluation it holds read back, and ends as the run never stopped."""
    whole, stopped = optuna_runs
    run = copy_of(stopped, tmp_path)
    (run / "study.db").write_bytes(os.urandom(4096))
    (run / "study.db").rename(run / "study.db.bad")
    (run / "checkpoint.npz").rename(run / "checkpoint.npz.bad")
    written = {(r["generation"], r["index"]) for r in table(run / "evaluations.csv")}
    assert run_main("--resume", run) == 0
    assert end(run) == end(whole)
    assert len(written) == 15 and len(toy.calls) == sum(  # the others only: none of those simulated again
        r["cached"] == "False" for r in table(whole / "evaluations.csv") if (r["generation"], r["index"]) not in written)


@pytest.mark.parametrize("change, first", [
    ("UPDATE trial_values SET value = 1e308 WHERE trial_id = (SELECT trial_id FROM trials WHERE number = 8)", 6),
    ("UPDATE trial_params SET param_value = param_value / 2 WHERE trial_id = (SELECT trial_id FROM trials WHERE "
     "number = 3) AND param_name = 'evaluator.features.holes'", 0),
    ("UPDATE trials SET state = CASE state WHEN 'PRUNED' THEN 'COMPLETE' ELSE 'PRUNED' END WHERE number = 10", 6),
])
def test_a_told_trial_rewritten_in_study_db_is_refused(optuna_runs, tmp_path, capsys, toy, change, first):
    """The checkpoint's digest of each generation's told trials: a value, a parameter or a state
    rewritten would make the sampler learn from what the run never told it."""
    run = copy_of(optuna_runs[1], tmp_path)
    connection = sqlite3.connect(run / "study.db")
    assert connection.execute(change).rowcount == 1
    connection.commit()
    connection.close()
    assert run_main("--resume", run) == 2
    assert refused(capsys) == (f"{run / 'study.db'}: trials {first} to {first + 5} of the study {run.name!r} are not the "
                               f"ones the run told (a parameter, value or state was changed since); {STUDY_ADVICE}")
    assert toy.calls == []


def test_a_study_db_left_alone_resumes_to_the_end_of_the_run_never_stopped(optuna_runs, tmp_path, toy):
    whole, stopped = optuna_runs
    run = copy_of(stopped, tmp_path)
    assert run_main("--resume", run) == 0
    assert end(run) == end(whole)


# ------------------------------------------------------------------------------------------------
# evaluations.csv


def edit_rows(path, change):
    lines = path.read_text().splitlines(keepends=True)
    columns = lines[0].rstrip("\n").split(",")
    rows = [line.rstrip("\n").split(",") for line in lines[1:]]
    change(columns, rows)
    path.write_text(lines[0] + "".join(",".join(r) + "\n" for r in rows))


def set_fitness(value, which=lambda i, row: True):
    def change(columns, rows):
        for i, row in enumerate(rows):
            if which(i, row):
                row[columns.index("fitness")] = value
    return change


def test_every_fitness_nan_is_refused_naming_the_lines(ga_runs, tmp_path, capsys, toy):
    run = copy_of(ga_runs[1], tmp_path)
    path = run / "evaluations.csv"
    edit_rows(path, set_fitness("nan"))
    assert run_main("--resume", run) == 2
    assert refused(capsys) == (f"{path}: 12 of the evaluations the checkpoint counts in generations 0, 1 are not there "
                               "(unreadable lines 2, 3, 4, 5, 6, ...); restore the file, or move checkpoint.npz aside "
                               "to resume from the evaluations that remain")
    assert toy.calls == []


def test_an_infinite_fitness_is_a_damaged_line(ga_runs, tmp_path, capsys, toy):
    run = copy_of(ga_runs[1], tmp_path)
    path = run / "evaluations.csv"
    edit_rows(path, set_fitness("inf", lambda i, row: i == 7))  # line 9: generation 1's candidate 1
    assert run_main("--resume", run) == 2
    assert refused(capsys) == (f"{path}: 1 of the evaluations the checkpoint counts in generation 1 are not there "
                               "(unreadable line 9); restore the file, or move checkpoint.npz aside to resume from the "
                               "evaluations that remain")


def test_a_nan_in_the_generation_under_way_is_said_and_simulated_again(ga_runs, tmp_path, toy):
    whole, stopped = ga_runs
    run = copy_of(stopped, tmp_path)
    path = run / "evaluations.csv"
    edit_rows(path, set_fitness("nan", lambda i, row: i == 12))  # line 14: the first written of generation 2
    assert table(stopped / "evaluations.csv")[12]["generation"] == "2"
    assert run_main("--resume", run) == 0
    assert end(run) == end(whole)
    assert f"{path}: line 14 could not be read (dropped): their candidates are evaluated again" in (
        run / "run.log").read_text()


def test_a_row_written_twice_is_refused_naming_both_lines(ga_runs, tmp_path, capsys, toy):
    run = copy_of(ga_runs[1], tmp_path)
    path = run / "evaluations.csv"
    edit_rows(path, lambda columns, rows: rows.insert(9, list(rows[2])))  # generation 0's candidate 2 again, line 11
    assert run_main("--resume", run) == 2
    assert refused(capsys) == (f"{path}: lines 4 and 11 are both generation 0's candidate 2, whose row is written once; "
                               "remove the one the run did not write, or restore the file")


def test_a_candidate_the_generation_did_not_have_is_refused(ga_runs, tmp_path, capsys, toy):
    run = copy_of(ga_runs[1], tmp_path)
    path = run / "evaluations.csv"

    def renumber(columns, rows):
        rows[5][columns.index("index")] = "6"  # line 7: generation 0's candidate 5 as a 7th
    edit_rows(path, renumber)
    assert run_main("--resume", run) == 2
    assert refused(capsys) == (f"{path}: line 7 is generation 0's candidate 6, which the checkpoint does not count (the "
                               "generation had candidates 0 to 5); remove it, or restore the file")


def test_a_value_changed_in_a_finished_generation_is_refused_naming_it(ga_runs, tmp_path, capsys, toy):
    """A fitness of generation 1 that is not its best raised by one point: the generation's mean is
    no longer the checkpoint's (as generations.csv shows it, to three decimals)."""
    run = copy_of(ga_runs[1], tmp_path)
    path = run / "evaluations.csv"
    rows = table(path)
    mine = [r for r in rows if r["generation"] == "1"]
    low = min(mine, key=lambda r: float(r["fitness"]))
    edit_rows(path, set_fitness(repr(float(low["fitness"]) + 1),
                                lambda i, row: (row[0], row[1]) == (low["generation"], low["index"])))
    saved = table(run / "generations.csv")[1]
    mean = sum(float(r["fitness"]) for r in mine) / len(mine) + 1 / len(mine)
    assert run_main("--resume", run) == 2
    assert refused(capsys) == (f"{path}: generation 1's rows give a mean fitness of {mean:.3f} where the checkpoint's "
                               f"statistics say {saved['mean']}: a value was changed after the generation finished; "
                               "restore the file as the run wrote it")


# ------------------------------------------------------------------------------------------------
# curves.jsonl


@pytest.mark.parametrize("seed, generations", [(5, 5), (4, 6)])
def test_without_curves_jsonl_a_run_ends_as_the_one_never_stopped(tmp_path, toy, seed, generations):
    """The memo's curves lost: an evaluation the memo would reuse is simulated again when its
    config comes up again (an aborted one to its abort piece), so each candidate is a memo hit or
    a simulation as in the run never stopped (generations.csv's simulated and pieces with them).
    The second case takes an aborted candidate's curve back."""
    data = {**GA, "seed": seed, "ga": {**GA["ga"], "generations": generations}}
    whole, stopped = whole_and_stopped(tmp_path, data)
    (stopped / "curves.jsonl").unlink()
    written = [r for r in table(stopped / "evaluations.csv") if r["generation"] == "2"]
    toy.calls.clear()
    assert run_main("--resume", stopped) == 0
    assert end(stopped) == end(whole)
    log = (stopped / "run.log").read_text()
    assert (f"{stopped / 'curves.jsonl'}: the curves of " in log and "are lost (the file is damaged or removed): each is "
            "simulated again when its config comes up again, so the run ends as one never stopped" in log)
    again = log.count(": its curve simulated again (")
    later = sum(r["cached"] == "False" for r in table(whole / "evaluations.csv") if int(r["generation"]) >= 2)
    new = later - sum(r["cached"] == "False" for r in written)  # simulated by the resumed run never stopped too
    assert again >= 1 and len(toy.calls) == new + again
    assert len((stopped / "curves.jsonl").read_text().splitlines()) == new + again  # its curves back for a next resume


# ------------------------------------------------------------------------------------------------
# in-play/: a candidate's saved segment search


@pytest.fixture(scope="module")
def segment_runs(tmp_path_factory):
    """The segment run of tests/test_tuning.py, played to its end, and stopped in its third
    candidate's search (the first of generation 1, at piece index 40) with that search saved."""
    from solver.segment import Segment
    from test_tuning import SEGMENT_RUN, Interrupt, start

    tmp = tmp_path_factory.mktemp("segment")
    whole, _ = start(tmp / "a", data=SEGMENT_RUN)
    searches = []
    layer_stop = Segment.layer_stop

    def stop_in_the_third(self, t, *args):
        if t == 0 and self.checkpoint is not None and not self.warming:
            searches.append(self.checkpoint)
        if len(searches) == 3 and t == 40:
            raise Interrupt()
        return layer_stop(self, t, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Segment, "layer_stop", stop_in_the_third)
        with pytest.raises(Interrupt):
            start(tmp / "b", data=SEGMENT_RUN)
    (stopped,) = (tmp / "b" / "runs").iterdir()
    return whole, stopped


def flipped(data: bytes) -> bytes:
    """``data`` with 16 bytes in its middle inverted (inside a member: its inflating or its CRC fails)."""
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 16]) + data[middle + 16:]


@pytest.mark.slow
@pytest.mark.parametrize("damage, problem", [
    (lambda data: data[: len(data) // 3], "not a state file (not a zip archive)"),
    (lambda data: bytes(b ^ 0x5A for b in data), "not a state file (not a zip archive)"),
    (flipped, "damaged: "),
], ids=["truncated", "garbled", "a member damaged"])
def test_a_damaged_saved_search_is_discarded_and_the_candidate_played_again(segment_runs, tmp_path, capsys, damage,
                                                                             problem):
    whole, stopped = segment_runs
    run = copy_of(stopped, tmp_path)
    (path,) = (run / "in-play").iterdir()
    path.write_bytes(damage(path.read_bytes()))
    assert run_cli.main(["--resume", str(run)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f"{path}: ")]
    assert len(lines) == 1
    assert lines[0].startswith(f"{path}: the saved search cannot be read ({problem}")
    assert lines[0].endswith("); discarded: the candidate is played again from its first piece, to the result it "
                             "would have had")
    assert (run / "run.log").read_text().count(lines[0]) == 1
    assert end(run) == end(whole)
    assert not (run / "in-play").exists()
