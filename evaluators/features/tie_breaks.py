"""The built-in tie-breaks: the order among placements of equal value, each ``f(x, state,
spawn_x, spawn_state)`` (`evaluators.registry.tie_break`).
"""

from __future__ import annotations

from ..registry import tie_break


@tie_break("none")
def no_tie_break(x, state, spawn_x, spawn_state):
    """Every placement ranks the same (ties go to the first generated)."""
    return 0


@tie_break("pd_priority")
def pd_priority(x, state, spawn_x, spawn_state):
    """Pierre Dellacherie's priority: 100 x columns moved from the spawn + rotations from the spawn
    state, lower first."""
    return 100 * abs(x - spawn_x) + ((state - spawn_state) & 3)


@tie_break("state_then_column")
def state_then_column(x, state, spawn_x, spawn_state):
    """The lowest state, then the leftmost x: under the ``standard`` rules (states and x are
    MdpTetris's orientations and columns) the first best action MdpTetris's players take."""
    return 256 * state + x + 64
