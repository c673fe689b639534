"""A map over independent tasks: in process, on joblib's loky workers, or on a dask.distributed
cluster. The tuners evaluate a generation's candidates with it, the segment search a piece index's
states.

Tasks and results are plain dicts (no DEAP or pyswarms objects cross a process boundary). Results
come back in the order of the inputs; ``on_result(i, result)`` is called in the parent as each one
arrives (in completion order), so a run can write it down at once. Python's and numpy's global
random states are restored after every map (joblib disturbs them), so a run's randomness does not
depend on the backend. numba's on-disk cache (`engine._jit.cache`) is shared by every process of
the same sources, so workers load the kernels the parent compiled. A joblib worker exits when the
run's process dies, however it dies, from the moment it starts (`_worker_start`), and ignores
Ctrl-C: a terminal sends it to every process of the group, and the run's process decides (it
stops the workers). A dask scheduler that does not answer is given up after `CONNECT_SECONDS`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import sys
import threading
import time
import warnings
from typing import Callable, Literal, Sequence

import numpy as np
from pydantic import model_validator
from pydantic import Field, ValidationInfo

from .validation import Strict, runs_here


class ParallelConfig(Strict):
    """``parallel``: where independent tasks run (a tuning run's candidates, a segment search's
    states): in this process, on joblib's loky processes, or on a dask.distributed cluster."""

    backend: Literal["loky", "dask"] = Field("loky", description="joblib's loky processes, or a dask.distributed cluster")
    n_jobs: int = Field(1, ge=1, description="tasks at once (loky workers; dask LocalCluster workers); 1: in this process")
    scheduler: str | None = Field(None, description="dask: scheduler address (null: a LocalCluster of n_jobs workers)")
    threads: int | None = Field(None, ge=1, description="numba threads per task (default: 1 when n_jobs > 1, else all cores)")

    @model_validator(mode="after")
    def _fits_the_machine(self, info: ValidationInfo):
        """At most one worker per CPU of this machine, unless the workers are a named cluster's (or
        the configuration is one read back, `engine.validation.WRITTEN_ELSEWHERE`)."""
        if not runs_here(info):
            return self
        cpus = cpu_count()
        if not (self.backend == "dask" and self.scheduler) and self.n_jobs > cpus:
            raise ValueError(f"n_jobs: {self.n_jobs:,} workers, more than the {cpus} CPUs of this machine; "
                             "name a dask cluster (backend: dask, scheduler: its address) to use more")
        return self


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity; every CPU of the machine where unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: tasks joblib hands out ahead of the free workers: two per worker keeps every worker busy while
#: the parent writes results down, without queueing a whole generation at once
PRE_DISPATCH = "2*n_jobs"


@contextlib.contextmanager
def preserved_random_state():
    """Restore Python's and numpy's global random states on exit."""
    py, npy = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)


def _call(fn, index, task):
    return index, fn(task)


#: how often a worker checks that the process that started it is still there (seconds)
PARENT_CHECK_SECONDS = 0.5
#: exit status of a worker whose parent is gone
ORPHANED = 70
_watching = False
#: prctl(2)'s option: the signal a process gets when the thread that made it ends (Linux)
PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int) -> None:
    """Make this worker process exit when its parent, the process ``parent``, dies (``kill -9`` of
    the run included): a daemon thread checks every `PARENT_CHECK_SECONDS` that the parent is still
    that process (an orphan is adopted by another). It acts between kernel calls: a numba kernel
    holds the interpreter while it runs, so a worker ends at the latest when its current kernel
    call returns. Once per process."""
    global _watching
    if _watching:
        return
    _watching = True

    def watch():
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(ORPHANED)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this process (SIGKILL) when the thread that started it ends,
    at once, even inside a kernel call (prctl's ``PR_SET_PDEATHSIG``); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _worker_start(parent: int, deathsig: bool) -> None:
    """A loky worker's initializer, run before it takes a task: it ignores SIGINT from now on (it
    was started with SIGINT blocked, `_spawning`, so one sent meanwhile is dropped now), dies with
    the process ``parent`` that started the pool (with ``deathsig``, by the kernel's parent-death
    signal too: the pool was started from the parent's main thread, which ends only with it), and
    exits at once when that process is already gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if deathsig:
        _die_with_parent()
    if os.getppid() != parent:  # died before the watch could start
        os._exit(ORPHANED)
    _watch_parent(parent)


@contextlib.contextmanager
def _spawning():
    """While inside, SIGINT is blocked in this thread, so the worker processes started meanwhile
    start with it blocked (a signal mask is inherited) until their initializer ignores it: a
    Ctrl-C during their start-up does not interrupt their imports. Here, one that comes meanwhile
    is delivered on leaving. (multiprocessing's resource tracker, which loky starts with the first
    worker, is started first: starting, it unblocks SIGINT in the thread that starts it.)"""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


#: seconds to reach a dask scheduler, and for its workers to answer the start-up check
CONNECT_SECONDS = 10
#: what a dask worker evaluates at start-up: the digest of the project's kernel sources it imports
#: (a builtin, ``eval``, carries it, so a worker that cannot import the project can still answer)
_PROBE = "__import__('engine._jit.stamps', fromlist=['source_digest']).source_digest()"


class ParallelError(RuntimeError):
    """A cluster that cannot run the evaluations; the message is one line naming the scheduler or
    the worker and the problem."""


def _client_class():
    """dask's Client, its start-up bounded as a whole: dask bounds the connection, but not the wait
    for the scheduler's handshake, so a scheduler that accepts the connection and never answers
    would hold it forever."""
    from dask.distributed import Client

    class BoundedClient(Client):
        def start(self, **kwargs):
            kwargs.setdefault("callback_timeout", kwargs.get("timeout"))
            try:
                super().start(**kwargs)
            except BaseException:
                with contextlib.suppress(Exception):
                    self.close(timeout=1)
                raise

    return BoundedClient


def connect(address: str, key: str = "parallel"):
    """A dask Client of the scheduler at ``address``; `ParallelError` when it cannot be reached, or
    does not answer, within `CONNECT_SECONDS` (naming the configuration's ``key``)."""
    try:
        return _client_class()(address, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        if type(e) is TimeoutError:  # the bound on the whole start-up: no connection, or no answer on it
            reason = "no answer"
        raise ParallelError(f"{key}.scheduler: cannot reach {address} in {CONNECT_SECONDS} s ({reason})") from None


def check_workers(client, key: str = "parallel") -> None:
    """`ParallelError` unless the cluster has a worker and every worker imports this project, of
    the same sources as this process (the digest of the kernel sources: a worker on other code would
    give other results); names the first worker that does not."""
    from engine._jit.stamps import source_digest

    ours = source_digest()
    try:
        client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        answers = client.run(eval, _PROBE, on_error="return", callback_timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError) as e:
        raise ParallelError(f"{key}.scheduler: no worker answered in {CONNECT_SECONDS} s ({e})") from None
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            raise ParallelError(f"{key}.scheduler: worker {worker} cannot import the project "
                                f"({type(answer).__name__}: {str(answer).splitlines()[0] if str(answer) else ''})")
        if answer != ours:
            raise ParallelError(f"{key}.scheduler: worker {worker} runs other sources of the project (kernel "
                                f"digest {answer}, here {ours}); install the same version there")


def check_scheduler(settings: ParallelConfig, key: str = "parallel") -> None:
    """With a dask scheduler named in ``settings``: that it answers and that every worker imports
    this project, of the same sources (`connect`, `check_workers`: `ParallelError` otherwise, one
    line naming ``key``), within `CONNECT_SECONDS` each. Nothing without one."""
    if settings.backend != "dask" or not settings.scheduler:
        return
    client = connect(settings.scheduler, key)
    try:
        check_workers(client, key)
    finally:
        client.close()


def _quietly_closed(results):
    """joblib's results, read through; closed early (an interrupted run), the tasks still on the
    workers are dropped without joblib's warning about them."""
    try:
        for result in results:
            yield result
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*adjusting the input task iterator", category=UserWarning)
            results.close()


def _completed(futures):
    """dask futures' results in completion order; the ones not read are cancelled on closing."""
    from dask.distributed import as_completed

    try:
        for future in as_completed(futures):
            yield future.result()
    finally:
        for f in futures:
            f.cancel()


class Pool:
    """The workers of one run (of a tuner, of a search), as ``settings`` say (``key``: where they are
    in the configuration, for messages). ``close()`` (or a ``with`` block) releases a dask cluster
    it started."""

    def __init__(self, settings: ParallelConfig, key: str = "parallel"):
        self.settings, self.key = settings, key
        self.n_jobs = settings.n_jobs
        self._client = None
        self._cluster = None

    @property
    def threads(self) -> int | None:
        """numba threads per task (None: numba's default, all cores)."""
        if self.settings.threads:
            return self.settings.threads
        return 1 if self.n_jobs > 1 or self.settings.backend == "dask" else None

    def _dask_client(self):
        if self._client is None:
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                raise ParallelError(f"{self.key}.backend: dask is not installed (pip install -e \".[dask]\")") from None

            if self.settings.scheduler:
                self._client = connect(self.settings.scheduler, self.key)
                check_workers(self._client, self.key)
            else:
                self._cluster = LocalCluster(n_workers=self.n_jobs, threads_per_worker=1, processes=True,
                                             dashboard_address=None, silence_logs=logging.ERROR)
                self._client = Client(self._cluster)
        return self._client

    def map(self, fn: Callable[[dict], dict], tasks: Sequence[dict],
            on_result: Callable[[int, dict], None] | None = None) -> list[dict]:
        out: list = [None] * len(tasks)
        if not tasks:
            return out
        with preserved_random_state():
            for i, result in self._start(fn, list(tasks)):
                out[i] = result
                if on_result is not None:
                    on_result(i, result)
        return out

    @contextlib.contextmanager
    def beside(self, fn: Callable[[dict], dict], tasks: Sequence[dict]):
        """``fn`` over ``tasks`` on the workers while the ``with`` body runs in this process; leaving
        waits for them and raises what one of them raised. Without workers (one job in process)
        they run here when the body is done. Their results are dropped: this is for work whose
        effect another process shares, such as compiling kernels into numba's on-disk cache
        (`optimizers.run_loop.RunLoop.warm_up`). As in `map`, handing the tasks out and taking them back
        leave Python's and numpy's global random states as they were."""
        tasks = list(tasks)
        if not tasks:
            yield
            return
        with preserved_random_state():
            running = self._start(fn, tasks)
        try:
            yield
        except BaseException:
            with contextlib.suppress(BaseException):
                running.close()  # a joblib call aborts, dask futures are cancelled
            raise
        with preserved_random_state():
            for _ in running:
                pass

    def _start(self, fn, tasks):
        """The (index, result) pairs of ``tasks``, in completion order; on workers the tasks are
        handed out at once (a joblib call dispatches as it is made), in process as it is read."""
        backend = self.settings.backend
        if backend == "dask":
            client = self._dask_client()
            return _completed([client.submit(_call, fn, i, t, pure=False) for i, t in enumerate(tasks)])
        if self.n_jobs == 1:
            return (_call(fn, i, t) for i, t in enumerate(tasks))
        from joblib import Parallel, delayed, parallel_config

        main = threading.current_thread() is threading.main_thread()
        with parallel_config(backend=backend, initializer=_worker_start, initargs=(os.getpid(), main)):
            parallel = Parallel(n_jobs=self.n_jobs, return_as="generator_unordered", batch_size=1,
                                pre_dispatch=PRE_DISPATCH)
        with _spawning():
            return _quietly_closed(parallel(delayed(_call)(fn, i, t) for i, t in enumerate(tasks)))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
