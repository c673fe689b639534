"""benchmarks/segment_compute.py: a row's figures from a segment solve's summary, the table, and a
measurement kept row by row (read back, not run again; a failed row left out) with a stand-in
for the solve."""

import json

import pytest

from conftest import load_benchmark

sc = load_benchmark("segment_compute")


def summary(pieces=1200, score=5000):
    best = list(range(10, 10 * pieces + 1, 10))
    return {"score": score, "nodes": 123_456_789, "best_by_step": best,
            "segment": {"states": 4321, "seconds_total": 12.5, "cpu_seconds_total": 11.75, "peak_mib": 99.0}}


def test_figures_from_a_summary():
    row = sc.figures(summary())
    assert row == {"best_1000": 10_000, "best_end": 12_000, "score": 5000, "states": 4321, "boards": 123_456_789,
                   "search_s": 12.5, "search_cpu_s": 11.75, "peak_mib": 99.0}


def test_the_command_is_the_users_with_the_rows_overrides(tmp_path):
    cmd = sc.command(sc.ROWS["states-6-floating"], 2000, 1, tmp_path / "x")
    assert cmd[1:] == ["-m", "experiments.solve", "configs/solve/segment.yaml", "pieces=2000", "threads=1",
                       "segment.states=6", "floating=true", "--out", str(tmp_path / "x")]


def test_rows_are_kept_read_back_and_a_failure_is_left_out(tmp_path, monkeypatch, capsys):
    ran = []

    def fake(name, pieces, threads):
        ran.append(name)
        if name == "floating":
            raise sc.UserError("configs/solve/segment.yaml failed")
        return {**sc.figures(summary(score=len(ran))), "process_cpu_s": 20.0}

    monkeypatch.setattr(sc, "run_row", fake)
    out = tmp_path / "m.json"
    assert sc.main(["--pieces", "1200", "--rows", "base", "floating", "states-6", "--json", str(out)]) == 1
    kept = json.loads(out.read_text())
    assert (kept["pieces"], kept["threads"]) == (1200, 1) and set(kept["rows"]) == {"base", "states-6"}
    text = capsys.readouterr().out
    assert "floating: " in text and "failed: configs/solve/segment.yaml failed" in text
    assert "| (nodes 200, states 2) | 10,000 | 12,000 | 4,321 | 123 M | 12 s | 12 s | 20 s | 99 MiB |" in text
    assert "| `segment.states=6` |" in text and "`floating=true` |" not in text

    ran.clear()
    assert sc.main(["--pieces", "1200", "--rows", "base", "floating", "states-6", "--json", str(out)]) == 1
    assert ran == ["floating"]  # the two kept rows are read back
    assert "base: read back from" in capsys.readouterr().out


def test_a_file_of_other_settings_is_refused(tmp_path, monkeypatch):
    out = tmp_path / "m.json"
    sc.save(out, 2000, 1, {})
    monkeypatch.setattr(sc, "run_row", lambda *a: pytest.fail("nothing runs"))
    with pytest.raises(SystemExit, match=r"holds pieces=2000 threads=1, not pieces=1200 threads=1"):
        sc.main(["--pieces", "1200", "--json", str(out)])
    with pytest.raises(SystemExit):
        sc.main(["--pieces", "1000"])  # the first column is the best at 1,000
