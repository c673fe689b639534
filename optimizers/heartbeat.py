"""A line every few seconds while a long silent step goes on (`Heartbeat`): the kernels' first
compilation on a cold cache, which takes tens of seconds before a run's first generation and
would otherwise look like a hang."""

from __future__ import annotations

import threading
import time
from typing import Callable

#: seconds before the first line (a warm cache loads the kernels in less), and between two lines
FIRST, EVERY = 2.0, 5.0


class Heartbeat:
    """``with Heartbeat(say, what, verb):`` says ``what`` once the block has taken `FIRST` seconds,
    then "still <verb>" and how long it has taken every `EVERY` seconds, and at the end how long it
    took (only if it said anything): ``say`` is called from a thread of its own."""

    def __init__(self, say: Callable[[str], None], what: str, verb: str, first: float = FIRST, every: float = EVERY):
        self.say, self.what, self.verb, self.first, self.every = say, what, verb, first, every
        self.beats = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0

    def line(self, elapsed: float) -> str:
        """The line of beat ``self.beats`` (0: the first) after ``elapsed`` seconds."""
        return f"{self.what}..." if self.beats == 0 else f"  still {self.verb}: {elapsed:.0f} s"

    def beat(self) -> None:
        self.say(self.line(time.monotonic() - self._started))
        self.beats += 1

    def _run(self) -> None:
        wait = self.first
        while not self._stop.wait(wait):
            self.beat()
            wait = self.every

    def __enter__(self) -> "Heartbeat":
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.beats and exc[0] is None:
            self.say(f"  {self.verb}: done in {time.monotonic() - self._started:.0f} s")
