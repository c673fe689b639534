"""experiments.config: dotted overrides on the command line."""

import pytest

from experiments.config import ConfigError, apply_overrides

BASE = {"beam": {"width": 30, "clear_min_height": [16, 16, 17, 17]},
        "space": [{"path": "beam.score_gap", "low": 500, "high": 5000}]}


def test_overrides_set_nested_keys_and_make_missing_mappings():
    out = apply_overrides(BASE, ["beam.width=100", "lookahead.depth=3", "meta=null"])
    assert out["beam"]["width"] == 100
    assert out["lookahead"] == {"depth": 3}
    assert out["meta"] is None
    assert BASE["beam"]["width"] == 30  # the input is left alone


def test_overrides_index_lists_by_position():
    out = apply_overrides(BASE, ["space.0.low=100", "beam.clear_min_height.2=18"])
    assert out["space"][0] == {"path": "beam.score_gap", "low": 100, "high": 5000}
    assert out["beam"]["clear_min_height"] == [16, 16, 18, 17]


@pytest.mark.parametrize("override, message", [
    ("space.3.low=1", "command line: space.3: the list has 1 items (0 to 0)"),
    ("space.low=1", "command line: space: is a list, index it by position (0 to 0), not 'low'"),
    ("beam.width.x=1", "command line: beam.width: is not a mapping or list, cannot set beam.width.x"),
    ("beam.width", "command line: 'beam.width': an override is dotted.key=value"),
    ("beam..width=3", "command line: 'beam..width=3': an override is dotted.key=value"),
])
def test_bad_overrides_name_the_key_and_the_problem(override, message):
    with pytest.raises(ConfigError) as e:
        apply_overrides(BASE, [override])
    assert str(e.value) == message
