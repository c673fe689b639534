"""One compile per machine: a lock per kernel and signature across processes (`CompileLocks`),
installed by `engine._jit.cache` around numba's cache lookup, its save and the dispatcher's compile.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from numba.core import caching


class CompileLocks:
    """Processes that need the same kernel at the same signature compile it once between them.

    numba looks a signature up in the on-disk cache, compiles it on a miss and saves it. Two
    processes that miss at once (pytest's workers, a tuning run's, a segment search's) both
    compile, and on a cold start that doubled much of the compile work. Here a miss takes a lock
    file of its own for that function and signature (``fcntl.flock``, in ``locks/`` of the cache
    folder) and looks again once it holds it: a process that waited finds what the holder saved
    and loads it; the holder compiles, and releases the lock when the compile ends, saved or not
    (a compile that raises included). The lock of a process that dies goes with it (the kernel
    drops an ``flock`` with its last descriptor). Locks are taken only in the order compiles nest
    (a kernel before the callees its compile meets), which the call graph, having no cycles,
    keeps free of deadlock; one a process already holds is not taken again.

    ``wait`` bounds how long a process waits for another's compile before compiling itself.
    """

    #: seconds a process waits for another's compile of the same signature before compiling itself
    wait = 900.0
    #: seconds between two tries of a held lock
    poll = 0.02

    def __init__(self, folder: Path):
        self.folder = folder
        self.held: dict[str, int] = {}  # lock name -> descriptor, in this process

    def name(self, cache, sig) -> str:
        text = f"{cache._cache_path}\0{cache._cache_file._index_name}\0{sig}"
        return hashlib.sha1(text.encode()).hexdigest()[:24]

    def acquire(self, name: str) -> bool:
        """Take the lock ``name`` (waiting up to `wait`); False when it could not be had."""
        import fcntl

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # (a link planted as the lock is not followed: O_NOFOLLOW fails, and the compile goes on unlocked)
            fd = os.open(self.folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError:
            return False
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    return False
                time.sleep(self.poll)
            except OSError:
                os.close(fd)
                return False
        with contextlib.suppress(OSError):
            os.utime(fd)  # in use: pruning leaves a recent lock file alone
        self.held[name] = fd
        return True

    def release(self, name: str) -> None:
        fd = self.held.pop(name, None)
        if fd is not None:
            os.close(fd)  # drops the flock

    def install(self) -> None:
        """Wrap numba's cache lookup, its save and the dispatcher's compile (once per process)."""
        from numba.core import dispatcher

        if getattr(caching.Cache.load_overload, "_compile_locks", False):
            return
        load, save, compile_ = caching.Cache.load_overload, caching.Cache.save_overload, dispatcher.Dispatcher.compile
        locks = self

        def load_overload(cache, sig, target_context):
            found = load(cache, sig, target_context)
            if found is not None or not cache._enabled:
                return found
            name = locks.name(cache, sig)
            if name in locks.held or not locks.acquire(name):
                return found
            found = load(cache, sig, target_context)  # saved by the process the lock waited for?
            if found is not None:
                locks.release(name)
            return found

        def save_overload(cache, sig, data):
            try:
                save(cache, sig, data)
            finally:
                locks.release(locks.name(cache, sig))

        def compile(disp, sig):
            try:
                return compile_(disp, sig)
            finally:  # a compile that raised, or a result numba would not save: the lock goes too
                cache = disp._cache
                if locks.held and isinstance(cache, caching.Cache):
                    locks.release(locks.name(cache, sig))

        load_overload._compile_locks = True
        caching.Cache.load_overload, caching.Cache.save_overload = load_overload, save_overload
        dispatcher.Dispatcher.compile = compile
