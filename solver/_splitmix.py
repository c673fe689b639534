"""splitmix64 (Steele, Lea and Flood 2014): the 64-bit mixer behind the hash slots of the profile DP
and the random draws of MCTS; numba kernels, no global state."""

from __future__ import annotations

import numpy as np

from engine._jit.decorators import inlined, inner

#: the increment of the generator's state (2^64 / golden ratio, odd)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@inlined
def mix64(z):
    """splitmix64's output function: a bijective scramble of the 64-bit value ``z``."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@inner
def next_random(state):
    """The next output of the generator whose state is ``state[0]`` (a uint64 array, advanced in
    place)."""
    state[0] += GOLDEN
    return mix64(state[0])
