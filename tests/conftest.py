"""Shared test helpers: the plain-Python reference rules are importable as ``reference``."""

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

SHARED = TESTS.parents[1] / "shared"


@pytest.fixture(scope="session")
def replays_dir() -> Path:
    path = SHARED / "replays"
    if not path.is_dir():
        pytest.fail(f"the shared reference records are missing: {path} (shared/ must sit beside the checkout)")
    return path
