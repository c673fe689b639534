"""Ctrl-C (SIGINT) and kill (SIGTERM) in the commands (`experiments.run`, `experiments.solve`):
from a command's first line to its exit, at every stage, parsing included.

While a command works, its handler decides (`handled`): `raise_interrupt` stops it where it is, as
a KeyboardInterrupt that the command reports in one line (exit status 130), its files written
whole or not at all as at any other stop; a command can also hold a signal back while it
finishes writing (`experiments.solve.AfterTheSearch`). Once its exit status is decided, a further
signal ends the process at once with that status, or is ignored in its last moments (`exit_with`),
instead of interrupting its teardown (the workers' shutdown, the interpreter's exit) into a
traceback or another status.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading

#: the signals a command stops on
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def raise_interrupt(signum, frame) -> None:
    """Stop the command where it is (a kill like Ctrl-C): a KeyboardInterrupt."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def handled(handler, restore: bool = True):
    """``handler`` for SIGINT and SIGTERM while inside (main thread only: elsewhere nothing is
    changed; a signal the process ignores, as a background job ignores SIGINT, stays ignored). On
    leaving, the previous handlers are put back; without ``restore`` (a command's own process,
    about to exit) the handlers set inside stay."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        if restore:
            for sig, old in previous.items():
                signal.signal(sig, old)


@contextlib.contextmanager
def blocked():
    """SIGINT and SIGTERM held back while inside (main thread): one that comes meanwhile is not
    lost, it is delivered on leaving, to the handler set then."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def exit_with(status: int) -> None:
    """For a command's own process, its status decided and its files written: from now on a
    SIGINT or SIGTERM ends the process at once with exit status ``status`` (what it printed
    flushed), instead of interrupting the threads' shutdown into a traceback; once the
    interpreter's exit functions begin, both are ignored (Python would otherwise put their default
    actions back for its last moments, and a signal then would end the process by that signal).
    Main thread only; signals the process ignores stay ignored."""
    if threading.current_thread() is not threading.main_thread():
        return

    def end(signum, frame):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)

    def ignore():  # (registered last, run first of the exit functions)
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_IGN)

    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, end)
    atexit.register(ignore)
