"""Shared test helpers: the plain-Python reference rules are importable as ``reference``."""

import signal
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

# Ctrl-C as a terminal delivers it: a shell that starts pytest in the background (``cmd &`` without
# job control) hands it SIGINT ignored, which Python and every command it starts inherit, and the
# tests that interrupt a search with SIGINT would then see nothing arrive
signal.signal(signal.SIGINT, signal.default_int_handler)

SHARED = TESTS.parents[1] / "shared"


@pytest.fixture(scope="session")
def replays_dir() -> Path:
    path = SHARED / "replays"
    if not path.is_dir():
        pytest.fail(f"the shared reference records are missing: {path} (shared/ must sit beside the checkout)")
    return path
