"""engine.config: dotted overrides on the command line."""

import pytest

from engine.config import ConfigError, apply_overrides

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


def test_override_values_read_as_yaml_12():
    out = apply_overrides(BASE, ["beam.score_gap=1e3", "beam.name=1e", "beam.list=[1, -2.5e-1]", "beam.empty="])
    assert out["beam"]["score_gap"] == 1000.0 and out["beam"]["name"] == "1e"
    assert out["beam"]["list"] == [1, -0.25] and out["beam"]["empty"] == ""


def test_config_files_are_mappings_and_problems_name_the_file(tmp_path):
    from engine.config import load_mapping

    path = tmp_path / "c.yaml"
    path.write_text("beam: {width: 1e2}\n")
    assert load_mapping(path) == {"beam": {"width": 100.0}}
    for empty in ("", "# only a comment\n"):
        path.write_text(empty)
        with pytest.raises(ConfigError) as e:
            load_mapping(path)
        assert str(e.value) == f"{path}: the file is empty (no keys); write {{}} to mean every default"
    path.write_text("{}\n")
    assert load_mapping(path) == {}
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError) as e:
        load_mapping(path)
    assert str(e.value) == f"{path}: the file must hold a mapping of keys, not list"
    path.write_text("beam: [1,\n")
    with pytest.raises(ConfigError) as e:
        load_mapping(path)
    assert str(e.value).startswith(f"{path}: invalid YAML: line 2, column 1: ")
    with pytest.raises(ConfigError) as e:
        load_mapping(tmp_path / "none.yaml")
    assert str(e.value) == f"{tmp_path / 'none.yaml'}: file not found"


def test_holder_finds_the_mapping_of_a_dotted_key():
    from engine.config import holder

    data = {"beam": {"width": 3}, "space": [{"path": "x"}]}
    assert holder(data, "beam.width") == (data["beam"], "width")
    assert holder(data, "evaluator") == (data, "evaluator")
    assert holder(data, "lookahead.evaluator") == (None, "evaluator")
    assert holder(data, "beam.width.x") == (None, "x")
    assert holder(data, "space.0.path") == (data["space"][0], "path")


def test_validation_problems_are_one_line_with_the_dotted_key():
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    from engine.config import validate

    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid")
        width: int = Field(1, ge=1)

    class Outer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        beam: Inner = Inner()
        low: int = 0
        high: int = 1

        @model_validator(mode="after")
        def _order(self):
            if self.low > self.high:
                raise ValueError("low: must not exceed high")
            return self

    cases = [({"beam": {"width": 0}}, "f.yaml: solver.beam.width: Input should be greater than or equal to 1"),
             ({"beam": {"widht": 2}}, "f.yaml: solver.beam.widht: unknown key (did you mean 'width'?) (known: width)"),
             ({"low": 3}, "f.yaml: solver.low: must not exceed high"),
             ([1], "f.yaml: solver: Input should be a valid dictionary or instance of Outer")]
    for data, message in cases:
        with pytest.raises(ConfigError) as e:
            validate(Outer, data, "f.yaml", prefix="solver")
        assert str(e.value) == message


def test_every_shipped_configuration_loads_and_lives_in_its_folder():
    """The tuning runs (they name an ``algorithm``) are the YAML files of configs/, the solver
    configurations those of configs/solve/, each named in one style (words joined by ``_``); each
    validates as what it is, the space of a run resolved against its solver."""
    import re
    from pathlib import Path

    from engine.files import load_yaml
    from optimizers import load_run_config
    from optimizers.run_loop import make_space
    from solver import load_solver_config

    root = Path(__file__).resolve().parents[1] / "configs"
    runs, solves = sorted(root.glob("*.yaml")), sorted((root / "solve").glob("*.yaml"))
    for path in [*runs, *solves]:
        assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*\.yaml", path.name), path.name
    for path in runs:
        assert "algorithm" in load_yaml(path), f"{path.name}: a solver configuration, which belongs in configs/solve/"
        config = load_run_config(path)
        assert make_space(config).init_values, path.name
        # named as the project names it, whatever the folder it was read from (best.yaml says it)
        assert config.meta["resolved_from"]["run_config"] == f"configs/{path.name}"
    for path in solves:
        assert "algorithm" not in load_yaml(path), f"solve/{path.name}: a tuning run, which belongs in configs/"
        load_solver_config(path)
    assert len(runs) >= 10 and len(solves) >= 10


# ------------------------------------------------------------------------------------------------
# a misspelt name is answered with the closest one; a config of the other kind with its command


def test_a_misspelt_key_feature_preset_or_choice_is_answered_with_the_closest(tmp_path):
    from engine.config import ConfigError
    from optimizers.run import load_run_config
    from solver import load_evaluators, load_solver_config

    with pytest.raises(ConfigError, match=r"ga\.generatons: unknown key \(did you mean 'generations'\?\) \(known: "):
        load_run_config("configs/ga.yaml", ["ga.generatons=3"])
    with pytest.raises(ConfigError, match=r"algorithm: Input should be .* \(did you mean 'cmaes'\?\)"):
        load_run_config("configs/ga.yaml", ["algorithm=cmaees"])
    solver = tmp_path / "s.yaml"
    solver.write_text("policy: one_ply\nrules: standard_10x10\npieces: 10\nevaluator: {name: x, features: {holse: -1}}\n")
    with pytest.raises(ConfigError, match=r"features\.holse: unknown feature \(did you mean 'holes'\?\) \(known: "):
        load_evaluators(load_solver_config(solver), str(solver))
    with pytest.raises(ConfigError, match=r"dellachery: no such file or preset \(did you mean 'dellacherie'\?\)"):
        load_evaluators(load_solver_config(solver, ["evaluator=dellachery"]), str(solver))
    with pytest.raises(ConfigError, match=r"rules: .* \(did you mean 'standard'\?\)"):
        load_solver_config(solver, ["rules=standart"])
    # nothing close: no guess
    with pytest.raises(ConfigError) as e:
        load_run_config("configs/ga.yaml", ["ga.zzz=3"])
    assert "did you mean" not in str(e.value)


def test_a_config_not_found_is_answered_with_the_shipped_one_of_that_name(tmp_path, monkeypatch):
    from engine.config import ConfigError
    from optimizers.run import load_run_config
    from solver import load_solver_config

    monkeypatch.chdir(tmp_path)  # (the shipped copies: from any folder)
    with pytest.raises(ConfigError, match=r"^configs/segment-record\.yaml: file not found \(did you mean "
                                          r"'configs/solve/segment_record\.yaml'\?\)$"):
        load_solver_config("configs/segment-record.yaml")  # the name before solver configs had their folder
    with pytest.raises(ConfigError, match=r"^ga-record\.yaml: file not found \(did you mean 'ga_record\.yaml'\?\)$"):
        load_run_config("ga-record.yaml")
    with pytest.raises(ConfigError, match=r"\(did you mean 'configs/solve/segment_tuned\.yaml'\?\)$"):
        load_solver_config("configs/segmnt_tuned.yaml")  # misspelt
    with pytest.raises(ConfigError) as e:
        load_solver_config("configs/nothing_like_it.yaml")
    assert str(e.value) == "configs/nothing_like_it.yaml: file not found"


def test_a_config_of_the_other_kind_is_answered_with_the_command_that_takes_it():
    from engine.config import ConfigError
    from optimizers.run import load_run_config
    from solver import load_solver_config

    with pytest.raises(ConfigError, match=r"configs/solve/beam\.yaml: a solver config \(it has policy and no space\), not "
                                          r"a tuning run's: play it with  python -m experiments\.solve configs/solve/beam\.yaml"):
        load_run_config("configs/solve/beam.yaml")
    with pytest.raises(ConfigError, match=r"configs/ga\.yaml: a tuning run's config \(it has space\), not a solver "
                                          r"config: run it with  python -m experiments\.run configs/ga\.yaml"):
        load_solver_config("configs/ga.yaml")
