"""Machine code emitted once, in the kernels Python calls (`engine._jit.codegen`): a kernel only other
kernels call is linked into its callers and never emitted on its own; cached, it is saved as its
linkable module and a later process links it into a new caller; outside the project numba's cache
entries stay numba's own. Each check runs in fresh processes on a toy project with an empty cache."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine._jit.stamps import ROOT

KERNELS = textwrap.dedent('''
    from numba import njit, objmode
    from engine._jit.decorators import inner

    @inner
    def leaf(x):
        return x * 3 + 1

    @inner
    def clock():  # reads its environment (the objmode block) inside its callers' code
        with objmode(t="float64"):
            t = 2.5
        return t

    @njit(cache=True)
    def top_a(x):
        return leaf(x) + clock()

    @njit(cache=True)
    def top_b(x):
        return leaf(x) - clock()
''')

#: numba alone, no engine: a kernel without the CPython wrapper and its callers
FOREIGN = textwrap.dedent('''
    from numba import njit

    @njit(cache=True, no_cpython_wrapper=True)
    def leaf(x):
        return x * 3 + 1

    @njit(cache=True)
    def top_a(x):
        return leaf(x) + 1

    @njit(cache=True)
    def top_b(x):
        return leaf(x) - 1
''')

PROBE = textwrap.dedent('''
    import json, sys
    from numba.core import event

    compiled = []
    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__name__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", Listener())
    if sys.argv[1] == "engine":
        import engine  # noqa: F401  (installs the deferred code library)
    module = __import__(sys.argv[2])
    result = getattr(module, sys.argv[3])(2)
    emitted = {name: [not getattr(cres.library, "_deferred", False) for cres in getattr(module, name).overloads.values()]
               for name in ("leaf", "top_a", "top_b")}
    print(result, ",".join(sorted(set(compiled))), json.dumps(emitted), sep="|")
''')


def probe(tmp_path: Path, project: Path, which: str, module: str, kernel: str):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(project)}
    done = subprocess.run([sys.executable, "-c", PROBE, which, module, kernel], env=env, cwd=project,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    result, compiled, emitted = done.stdout.strip().split("|")
    return float(result), set(filter(None, compiled.split(","))), json.loads(emitted)


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the engine (the project's root is where `engine/_jit/stamps.py` finds it) and a kernel module."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "engine", root / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "toy.py").write_text(KERNELS)
    return root


@pytest.mark.slow
def test_a_callee_is_emitted_only_in_its_callers_and_links_from_the_cache_into_new_ones(tmp_path, project):
    result, compiled, emitted = probe(tmp_path, project, "engine", "toy", "top_a")
    assert result == 9.5 and compiled == {"leaf", "clock", "top_a"}
    assert emitted == {"leaf": [False], "top_a": [True], "top_b": []}  # the callee's code only in its caller's
    # a new caller in a new process: the callees come from the cache as linkable modules, and the
    # objmode block finds its environment
    result, compiled, emitted = probe(tmp_path, project, "engine", "toy", "top_b")
    assert result == 4.5 and compiled == {"top_b", "clock"}  # numba caches no function with an objmode block
    assert emitted["leaf"] == [False] and emitted["top_b"] == [True]
    result, compiled, _ = probe(tmp_path, project, "engine", "toy", "top_a")
    assert result == 9.5 and compiled == {"clock"}  # top_a and its callee leaf from the cache


@pytest.mark.slow
def test_outside_the_project_numba_caches_code_it_can_load_without_the_engine(tmp_path, project):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "foreign.py").write_text(FOREIGN)
    result, compiled, emitted = probe(tmp_path, outside, "engine", "foreign", "top_a")
    assert result == 8 and compiled == {"leaf", "top_a"} and emitted["leaf"] == [True]  # emitted to be saved
    # numba alone loads the callee (saved emitted, as numba saves it) and links it into a new caller
    result, compiled, _ = probe(tmp_path, outside, "numba", "foreign", "top_b")
    assert result == 6 and compiled == {"top_b"}
