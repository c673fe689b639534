"""curves.jsonl as files a user's tools read (issue 60 item 5): plain integers pandas opens, and
an older version's encoded lines still read."""

import base64
import json
import zlib

import numpy as np
import pandas as pd
import yaml

from optimizers import run as tuning
from optimizers.store import RunStore, curve_of

import toy_fitness


def test_pandas_opens_the_curves_and_they_are_the_runs(tmp_path, monkeypatch):
    toy_fitness.install(monkeypatch, noise=0.0)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**toy_fitness.RUN, "runs_dir": str(tmp_path / "runs")}, sort_keys=False))
    run = tuning.tune(tuning.load_run_config(path))
    table = pd.read_json(run.dir / "curves.jsonl", lines=True)
    assert list(table.columns) == ["tag", "key", "curve"] and len(table) == 24
    evaluations = pd.read_csv(run.dir / "evaluations.csv")
    for row in table.itertuples():
        assert all(type(v) is int for v in row.curve) and len(row.curve) == toy_fitness.PIECES
        (score,) = evaluations[(evaluations.key == row.key) & (evaluations.generation == row.tag)].score
        assert row.curve[-1] == score  # the toy's curve climbs to its score
    assert RunStore(run.dir, []).read_curves()[(0, table.key[0])].tolist() == table.curve[0]


def test_an_older_versions_encoded_line_is_read_and_a_bad_one_skipped(tmp_path):
    curve = np.array([0, 3, 3, 9, 12], dtype=np.int64)
    text = base64.b64encode(zlib.compress(np.diff(curve, prepend=np.int64(0)).tobytes())).decode()
    assert curve_of(text).tolist() == curve.tolist() and curve_of([1, 2]).tolist() == [1, 2]
    lines = [{"tag": 0, "key": "old", "curve": text}, {"tag": 0, "key": "new", "curve": [1, 2, 5]},
             {"tag": 0, "key": "floats", "curve": [1.5, 2]}, {"tag": 0, "key": "junk", "curve": "@@@"}]
    (tmp_path / "curves.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    got = RunStore(tmp_path, []).read_curves()
    assert sorted(k for _, k in got) == ["new", "old"] and got[(0, "old")].tolist() == curve.tolist()
