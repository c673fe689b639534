"""The numba cache directory follows every kernel source, subpackages included."""

from engine._numba_cache import CACHE_DIR, source_digest


def test_digest_follows_every_kernel_source(tmp_path):
    for name in ("engine/board.py", "evaluators/registry.py", "solver/beam.py", "solver/online/mcts.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    before = source_digest(tmp_path)
    assert source_digest(tmp_path) == before
    (tmp_path / "solver/online/mcts.py").write_text("x = 2\n")  # a kernel in a subpackage edited
    edited = source_digest(tmp_path)
    assert edited != before
    (tmp_path / "solver/online/mcts.py").rename(tmp_path / "solver/online/tree.py")  # or renamed
    assert source_digest(tmp_path) not in (before, edited)
    (tmp_path / "README.md").write_text("not a kernel source\n")
    (tmp_path / "solver/online/tree.py").rename(tmp_path / "solver/online/mcts.py")
    assert source_digest(tmp_path) == edited


def test_this_process_uses_the_directory_of_these_sources():
    if CACHE_DIR is not None:  # (None: NUMBA_CACHE_DIR set by the user, left alone)
        assert CACHE_DIR.endswith(source_digest())
