"""Shared test helpers: the plain-Python reference rules are importable as ``reference``; a script of
benchmarks/ loads as a module with `load_benchmark`."""

import importlib.util
import os
import signal
import sys
from pathlib import Path

import pytest

from engine.files import writing

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))
# the benchmark scripts' shared modules import as ``benchmarks.standard`` (the checkout's root, after
# whatever else is on the path: the engine is imported as before)
sys.path.append(str(TESTS.parent))

# Ctrl-C as a terminal delivers it: a shell that starts pytest in the background (``cmd &`` without
# job control) hands it SIGINT ignored, which Python and every command it starts inherit, and the
# tests that interrupt a search with SIGINT would then see nothing arrive
signal.signal(signal.SIGINT, signal.default_int_handler)


# Where bytecode is not written (``PYTHONDONTWRITEBYTECODE``), pytest rewrites every test module's
# assertions from source in every process, about 3 s of each worker's start. The test processes
# write bytecode as Python does by default (into ``__pycache__`` folders, which git ignores); the
# commands the tests start follow the setting.
sys.dont_write_bytecode = False

# Writes stay atomic but are not fsynced (`engine.files.writing.DURABLE`): the suite's files are scratch,
# and its thousands of checkpoints and results would otherwise wait on the disk for several seconds
# in all. tests/test_files.py turns it back on where it tests the fsyncs.
writing.DURABLE = False

SHARED = TESTS.parents[1] / "shared"
BENCHMARKS = TESTS.parent / "benchmarks"


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (the default, in pyproject.toml): one worker per core this process may use, or
    none when the command names single tests (``file::test``), where starting the workers, each
    importing every test module, costs more than it saves."""
    if config.args and all("::" in arg for arg in config.args):
        return 0
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a fresh module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench():
    """``benchmarks/bench_standard.py`` as a module."""
    return load_benchmark("bench_standard")


@pytest.fixture(scope="session")
def replays_dir() -> Path:
    path = SHARED / "replays"
    if not path.is_dir():
        pytest.fail(f"the shared reference records are missing: {path} (shared/ must sit beside the checkout)")
    return path


def pytest_collection_finish(session):
    """The modules every test imports stay for the whole session: out of the garbage collector's
    sight (`gc.freeze`), its full collections scan only what the tests make."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_runtest_teardown(item, nextitem):
    """So too, after each test module, what its tests left that outlives them (kernels loaded from
    the cache, registries, fixtures' data): collected first, then frozen."""
    if nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None):
        import gc

        gc.collect()
        gc.freeze()
