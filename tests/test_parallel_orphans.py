"""Workers end when the run's process dies, even by kill -9 (no cleanup of its own can run then)."""

import os
import signal
import subprocess
import sys
import time

import pytest

DRIVER = """
import sys, time
from optimizers.config import ParallelConfig
from engine.parallel import Pool

def task(t):
    import os
    print(os.getpid(), flush=True)   # the worker's pid, to the driver's stdout
    time.sleep(t["seconds"])         # a long evaluation
    return {}

Pool(ParallelConfig(backend="loky", n_jobs=2)).map(task, [{"seconds": 120}] * 2)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone too
        return f.read().split(") ")[-1][0] != "Z"


@pytest.mark.slow
def test_workers_end_when_the_run_is_killed(tmp_path):
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    workers = {int(driver.stdout.readline()), int(driver.stdout.readline())}
    assert all(alive(p) for p in workers)
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=10)
    driver.stdout.close()
    deadline = time.monotonic() + 10
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in workers), "workers outlived the run by 10 s"
