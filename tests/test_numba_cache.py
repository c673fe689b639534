"""numba's cache follows what each kernel depends on: its module's imports, resolved name by name,
and the registrants of the tables it dispatches on; docstrings, comments and positions do not
count (`engine._jit.stamps`, `engine._jit.cache`)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine._jit import cache
from engine._jit.cache import ProjectLocator
from engine._jit.locks import CompileLocks
from engine._jit.stamps import ROOT, Sources, source_digest


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


#: a toy project: ``top/kernel.py`` takes ``tool`` through its package's re-export (from ``tools``), ``lib/table.py``
#: dispatches on what ``lib/entries.py`` registers; ``lib/other.py`` is re-exported but not used
TOY = {
    "lib/__init__.py": "from .tools import tool\nfrom .other import other\n",
    "lib/tools.py": '"""Tools."""\nfrom .base import helper\n\ndef tool(x):\n    return helper(x) + 1\n',
    "lib/base.py": "def helper(x):\n    return x\n",
    "lib/other.py": "def other(x):\n    return x * 2\n",
    "lib/table.py": "TABLE = {}\n",
    "lib/entries.py": "from .table import TABLE\nTABLE['a'] = 1\n",
    "top/__init__.py": "",
    "top/kernel.py": "from lib import tool\nfrom lib.table import TABLE\n\ndef kernel(x):\n    return tool(x)\n",
}


def toy(tmp_path: Path) -> Sources:
    write(tmp_path, TOY)
    return Sources(tmp_path, registrants={"lib/table.py": ("lib/entries.py",)})


def names(sources: Sources, module: str) -> list[str]:
    return sorted(p.relative_to(sources.root).as_posix() for p in sources.dependencies(sources.root / module))


def test_a_module_depends_on_what_it_imports_name_by_name_and_on_the_registrants_of_its_tables(tmp_path):
    sources = toy(tmp_path)
    assert names(sources, "top/kernel.py") == [
        "lib/base.py", "lib/entries.py", "lib/table.py", "lib/tools.py", "top/kernel.py"]
    assert names(sources, "lib/other.py") == ["lib/other.py"]


def stamps(tmp_path: Path) -> dict[str, str]:
    sources = Sources(tmp_path, registrants={"lib/table.py": ("lib/entries.py",)})
    return {m: sources.stamp((tmp_path / m).resolve()) for m in ("top/kernel.py", "lib/other.py", "lib/tools.py")}


def test_an_edit_changes_the_stamps_of_its_dependents_only_and_docstrings_comments_or_lines_none(tmp_path):
    toy(tmp_path)
    before = stamps(tmp_path)
    write(tmp_path, {"lib/base.py": '"""Helpers."""\n\n\n# the identity\ndef helper(x):\n    """Same."""\n    return x\n'})
    assert stamps(tmp_path) == before  # a docstring, a comment, blank lines
    write(tmp_path, {"lib/other.py": "def other(x):\n    return x * 3\n"})
    after = stamps(tmp_path)
    assert after["lib/other.py"] != before["lib/other.py"]
    assert after["top/kernel.py"] == before["top/kernel.py"]  # re-exported beside tool, not used
    write(tmp_path, {"lib/base.py": "def helper(x):\n    return -x\n"})
    edited = stamps(tmp_path)
    assert edited["top/kernel.py"] != before["top/kernel.py"] and edited["lib/tools.py"] != before["lib/tools.py"]
    assert edited["lib/other.py"] == after["lib/other.py"]
    write(tmp_path, {"lib/entries.py": "from .table import TABLE\nTABLE['a'] = 2\n"})  # a registrant
    assert stamps(tmp_path)["top/kernel.py"] != edited["top/kernel.py"]


def test_the_memo_is_reused_and_follows_an_edit(tmp_path):
    write(tmp_path, TOY)
    memo = tmp_path / "memo.json"
    first = Sources(tmp_path, memo).stamp((tmp_path / "top/kernel.py").resolve())
    assert memo.is_file()
    assert Sources(tmp_path, memo).stamp((tmp_path / "top/kernel.py").resolve()) == first
    write(tmp_path, {"lib/base.py": "def helper(x):\n    return x + 0\n"})
    assert Sources(tmp_path, memo).stamp((tmp_path / "top/kernel.py").resolve()) != first


def test_two_checkouts_share_the_memo_without_parsing_each_others_files_again(tmp_path):
    memo = tmp_path / "memo.json"
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, TOY)
    write(b, TOY)
    stamps = [Sources(root, memo).stamp((root / "top/kernel.py").resolve()) for root in (a, b)]
    assert stamps[0] == stamps[1]  # the same sources: the same stamp, wherever the checkout is
    again = Sources(a, memo)
    assert again.stamp((a / "top/kernel.py").resolve()) == stamps[0] and not again.dirty  # nothing parsed
    shutil.rmtree(b)  # a clone deleted: its entries leave the memo at the next write
    write(a, {"lib/base.py": "def helper(x):\n    return x + 0\n"})
    Sources(a, memo).stamp((a / "top/kernel.py").resolve())
    assert not any(key.startswith(b.as_posix()) for key in json.loads(memo.read_text()))


def test_the_project_kernels_depend_on_what_they_inline_and_not_on_their_neighbours():
    sources = cache.SOURCES
    beam = names(sources, "solver/beam/layers.py")
    assert {"engine/lock.py", "engine/movegen/generators.py", "evaluators/registry.py", "evaluators/features/board.py"} <= set(beam)
    assert not any(n.startswith("solver/segment/") for n in beam) and "solver/online/mcts.py" not in beam
    machinery = {"engine/_jit/stamps.py", "engine/_jit/cache.py", "engine/_jit/locks.py", "engine/_jit/codegen.py"}
    assert not machinery & set(beam)  # imported by the registries, inlined by nothing
    replay = names(sources, "engine/replay.py")
    assert "engine/lock.py" in replay and not any(n.startswith(("solver/", "evaluators/")) for n in replay)
    assert "solver/online/mcts.py" in names(sources, "solver/online/games.py")  # a registered policy


def test_numba_caches_the_project_kernels_with_this_locator():
    from engine.replay import replay_kernel

    locator = replay_kernel._cache._impl.locator
    assert isinstance(locator, ProjectLocator)
    stamp = cache.SOURCES.stamp((ROOT / "engine/replay.py").resolve())
    assert locator.get_source_stamp() == stamp
    assert Path(locator.get_cache_path()) == Path(cache.CACHE_DIR) / "engine" / stamp[:12]


FOLDER = "from engine._jit import cache; print(cache.CACHE_DIR)"


def test_the_cache_is_the_machines_outside_the_checkout_unless_numba_cache_dir_says(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache._cache_base() == tmp_path / "xdg" / "tetris-workbench" / "numba"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert cache._cache_base() == tmp_path / "mine"
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")  # no cache folder can be made under it: the checkout's
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert cache._cache_base() == ROOT / ".numba_cache"
    # a process takes the folder so chosen when it imports the engine
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", FOLDER], env={**env, "XDG_CACHE_HOME": str(tmp_path / "xdg2")},
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert Path(out.strip()) == tmp_path / "xdg2" / "tetris-workbench" / "numba"


STARTUP = ("import sys, engine, evaluators, solver, optimizers.run, experiments.run; "
           "print(sorted(set(sys.modules) & {'scipy.linalg', 'scipy.spatial', 'pyswarms', 'optuna', 'matplotlib'}))")


def test_a_command_starts_without_scipys_linear_algebra_pyswarms_optuna_or_matplotlib():
    """Every process of the workbench (a command, a pytest or tuning worker) imports these modules; the
    libraries named are imported only by what uses them (SciPy's linear algebra and spatial
    modules, which numba's BLAS probe and pyswarms would otherwise bring into each, cost about a
    quarter of a second; numba itself imports only SciPy's top package)."""
    out = subprocess.run([sys.executable, "-c", STARTUP], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pruning_keeps_the_newest_files_under_the_limit_and_drops_stale_empty_folders(tmp_path):
    base = tmp_path / "cache"
    for i, name in enumerate(["engine/aaaaaaaaaaaa/old.nbc", "engine/bbbbbbbbbbbb/new.nbc", "solver/cccccccccccc/newer.nbc"]):
        path = base / name
        path.parent.mkdir(parents=True)
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 + i, 1000 + i))
    (base / "solver" / "dddddddddddd").mkdir()  # a version nothing was compiled for, long ago
    os.utime(base / "solver" / "dddddddddddd", (0, 0))
    (base / "solver" / "eeeeeeeeeeee").mkdir()  # made just now: a process may be about to write into it
    (base / "locks").mkdir()
    for name, when in (("old.lock", 0), ("held.lock", None)):  # a compile's lock: long untouched, in use
        (base / "locks" / name).touch()
        if when is not None:
            os.utime(base / "locks" / name, (when, when))
    cache.prune(base, limit=250, every=3600)
    left = sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.name != ".pruned")
    # the oldest file went; its folder, emptied just now, goes at a later pruning
    assert left == ["engine", "engine/aaaaaaaaaaaa", "engine/bbbbbbbbbbbb", "engine/bbbbbbbbbbbb/new.nbc",
                    "locks", "locks/held.lock", "solver",
                    "solver/cccccccccccc", "solver/cccccccccccc/newer.nbc", "solver/eeeeeeeeeeee"]
    (base / "engine" / "bbbbbbbbbbbb" / "new.nbc").unlink()
    cache.prune(base, limit=0, every=3600)  # checked an hour ago at most: nothing is done
    assert (base / "solver" / "cccccccccccc" / "newer.nbc").exists()


def test_the_digest_of_all_kernel_sources_follows_every_one_of_them(tmp_path):
    for name in ("engine/board.py", "evaluators/registry.py", "solver/beam.py", "solver/online/mcts.py"):
        write(tmp_path, {name: "x = 1\n"})
    before = source_digest(tmp_path)
    write(tmp_path, {"solver/online/mcts.py": "x = 2\n"})
    assert source_digest(tmp_path) != before


PROBE = """
import os, sys, time
from pathlib import Path
from numba.core import event

compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        if ev.kind == "numba:compile":
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
from engine import replay
if len(sys.argv) > 1:  # a gate: wait for the other process, so that both miss the cache together
    gate = Path(sys.argv[1])
    (gate / f"ready-{os.getpid()}").touch()
    while len(list(gate.glob("ready-*"))) < 2:
        time.sleep(0.005)
assert replay("N,D19,N").valid
print(",".join(sorted(compiled)))
"""


@pytest.mark.slow
def test_a_kernel_compiled_once_by_two_processes_loads_in_the_next_until_what_it_inlines_changes(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "engine", project / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(project)}

    def compiled() -> set[str]:
        out = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True,
                             check=True).stdout
        return set(filter(None, out.strip().split(",")))

    # cold, two processes at once (`CompileLocks`): each kernel compiled by one of them, the other
    # waiting for it and loading it from the cache
    gate = tmp_path / "gate"
    gate.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", PROBE, str(gate)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    lists = [list(filter(None, out.strip().split(","))) for out, _ in outs]
    assert sum(names.count("replay_kernel") for names in lists) == 1, lists
    assert not set(lists[0]) & set(lists[1]), lists
    assert list((tmp_path / "cache" / "locks").glob("*.lock"))
    assert compiled() == set()  # every kernel from the cache
    lock = project / "engine/lock.py"
    lock.write_text('"""A new docstring."""\n# and a comment\n' + lock.read_text().split('"""', 2)[2])
    assert "replay_kernel" not in compiled()  # what moved in lock.py compiles again, replay does not
    board = project / "engine/board.py"
    original = board.read_text()
    board.write_text(original + "\n\nEXTRA = 1\n")  # code that replay's kernels inline
    assert "replay_kernel" in compiled()
    board.write_text(original)  # back to the first version (a checkout of an older commit):
    assert compiled() == set()  # cached beside the other, not replaced by it


def test_a_compile_that_fails_releases_its_lock(tmp_path, monkeypatch):
    import numba
    from numba.core import caching

    locks = CompileLocks(tmp_path / "locks")
    names = []
    acquire = locks.acquire
    monkeypatch.setattr(locks, "acquire", lambda name: names.append(name) or acquire(name))
    saved = caching.Cache.load_overload, caching.Cache.save_overload, numba.core.dispatcher.Dispatcher.compile
    try:
        monkeypatch.setattr(caching.Cache.load_overload, "_compile_locks", False, raising=False)
        locks.install()
        module = tmp_path / "failing_kernel.py"
        module.write_text("from numba import njit\n\n@njit(cache=True)\ndef bad(x):\n    return x.no_such_attribute\n")
        sys.path.insert(0, str(tmp_path))
        try:
            import failing_kernel
            with pytest.raises(numba.core.errors.TypingError):
                failing_kernel.bad(1)
        finally:
            sys.path.remove(str(tmp_path))
            sys.modules.pop("failing_kernel", None)
        assert names and locks.held == {}  # taken on the miss, released when the compile raised
    finally:
        caching.Cache.load_overload, caching.Cache.save_overload, numba.core.dispatcher.Dispatcher.compile = saved
