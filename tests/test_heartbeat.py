"""The heartbeat (`optimizers.heartbeat`): what it says while a silent step goes on, and that a
step done before its first line says nothing."""

from optimizers.heartbeat import Heartbeat


def test_the_lines_say_what_goes_on_then_how_long_it_has_taken():
    said = []
    h = Heartbeat(said.append, "compiling the kernels", "compiling")
    assert h.line(2.1) == "compiling the kernels..."
    h.beats = 3
    assert h.line(17.4) == "  still compiling: 17 s"


def test_a_step_shorter_than_the_first_wait_says_nothing():
    said = []
    with Heartbeat(said.append, "compiling the kernels", "compiling", first=3600.0):
        pass
    assert said == []


def test_a_beat_said_is_followed_by_the_time_it_took():
    said = []
    with Heartbeat(said.append, "compiling the kernels", "compiling", first=3600.0) as h:
        h.beat()  # (as the thread does once FIRST seconds have passed)
    assert said[0] == "compiling the kernels..." and said[1].startswith("  compiling: done in ") and said[1].endswith(" s")
