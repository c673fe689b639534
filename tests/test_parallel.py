"""`engine.parallel.Pool.beside`: tasks on the workers while the parent works, waited for on leaving."""

import random
import time
from pathlib import Path

import pytest

from engine.parallel import ParallelConfig, Pool


def write_after(task: dict) -> dict:
    """Write "done" to ``path``, once the file ``after`` exists when one is named (60 s at most)."""
    if task.get("after"):
        deadline = time.monotonic() + 60
        while not Path(task["after"]).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{task['after']} never came: the body did not run beside the task")
            time.sleep(0.01)
    if task.get("fail"):
        raise ValueError("the task failed")
    Path(task["path"]).write_text("done")
    return {}


def test_beside_runs_the_tasks_on_a_worker_while_the_body_runs(tmp_path):
    flag, go = tmp_path / "flag", tmp_path / "go"
    random.seed(5)
    expected = [random.random() for _ in range(2)]
    random.seed(5)
    with Pool(ParallelConfig(backend="loky", n_jobs=2)).beside(write_after, [{"path": str(flag), "after": str(go)}]):
        assert not flag.exists()  # the body does not wait for the task: the task waits for the body
        drawn = [random.random()]
        go.touch()
    assert flag.read_text() == "done"  # leaving does
    drawn.append(random.random())
    assert drawn == expected  # the body's draws are kept, the pool's hidden


def test_beside_in_process_runs_the_tasks_after_the_body(tmp_path):
    flag, seen = tmp_path / "flag", []
    with Pool(ParallelConfig(n_jobs=1)).beside(write_after, [{"path": str(flag)}]):
        seen.append(flag.exists())
    assert seen == [False] and flag.read_text() == "done"


def test_beside_raises_what_a_task_raised_and_a_failing_body_does_not_run_them(tmp_path):
    flag = tmp_path / "flag"
    pool = Pool(ParallelConfig(n_jobs=1))
    with pytest.raises(ValueError, match="the task failed"):
        with pool.beside(write_after, [{"path": str(flag), "fail": True}]):
            pass
    with pytest.raises(KeyError):
        with pool.beside(write_after, [{"path": str(flag)}]):
            raise KeyError("the body")
    assert not flag.exists()
