"""An installed workbench (``pip install .``, not editable) has what its commands need: the bot's and
the terminal player's default configurations, and the shipped configs with the record they name."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "evaluators", "solver", "optimizers", "experiments", "configs")

CHECK = """
import sys
from pathlib import Path
import experiments, configs
assert Path(experiments.__file__).is_relative_to(Path(sys.argv[1])), experiments.__file__
from experiments.bot import DEFAULT_CONFIG
from experiments.tui import DEFAULT_AGENT
from solver import load_online_policy, load_solver_config
from optimizers import load_run_config
config, policy = load_online_policy(DEFAULT_CONFIG)
assert config.policy == "preview", config.policy
load_online_policy(DEFAULT_AGENT)
run = load_run_config("configs/ga_record.yaml")          # named as in a checkout, from another folder
assert run.early_abort.reference == "configs/records/geek-1395326.txt", run.early_abort.reference  # the project's
from optimizers.early_abort import reference_curve
assert reference_curve(run.early_abort.reference, run.solver.rules)[-1] == 1395326   # found from any folder
assert load_solver_config("solve/beam_full.yaml").beam.width == 9041   # or by its name
print("ok")
"""


@pytest.mark.slow
def test_an_installed_copy_has_what_its_commands_need(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", *PACKAGES):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("__pycache__", ".numba_cache"))
        else:
            shutil.copy(src, source / name)
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                          "--target", str(target), str(source)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", CHECK, str(target)], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_every_command_is_a_console_script_that_runs_its_main():
    """pyproject's [project.scripts]: a tetris-<name> for each command module of experiments (the
    ones with a main), each naming a function that takes no argument; once installed (pip install
    -e .) they are the environment's console scripts."""
    import importlib
    import importlib.metadata
    import inspect
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11 on)

    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    commands = sorted(p.stem for p in (root / "experiments").glob("*.py")
                      if not p.stem.startswith("_") and "\ndef main(" in p.read_text())
    assert sorted(name.removeprefix("tetris-") for name in scripts) == commands
    for name, target in scripts.items():
        module, func = target.split(":")
        assert module == f"experiments.{name.removeprefix('tetris-')}"
        fn = getattr(importlib.import_module(module), func)
        assert all(p.default is not p.empty for p in inspect.signature(fn).parameters.values())
    installed = {e.name: e.value for e in importlib.metadata.entry_points(group="console_scripts")
                 if e.name.startswith("tetris-")}
    assert installed == scripts, "reinstall: pip install -e ."
