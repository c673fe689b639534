"""Move generation: every resting position a piece can reach from its spawn, and a route to each.

- a *step* is one single L, R, D or C move (codes 0..3, `tables.STEP_L` ...); a step whose result
  is invalid is not an edge of the search (the replay consumes it without moving);
- a position is *resting* when one more D step would be invalid;
- a *placement* is a distinct set of cells of a resting position reachable from the spawn in at
  most ``max_steps`` steps (the contest allows 100 per piece). States with identical offsets (I, S
  and Z states 0/2 and 1/3, O's four) give the same cells and count once, under the lowest state.

Modules: `tables` (the scratch arrays and the fit tables), `search` (the bit-parallel search),
`drop` (drop-only rules' placements), `generators` (the placements the rules choose, mid-air
clears included) and `routes` (a shortest route to a placement). Kernels take the rules as the
`KernelRules` bundle (`Rules.kernel`) and their scratch as one `MoveScratch`.
"""

from .generators import placements
from .routes import route
from .tables import MoveScratch, capacity, scratch

__all__ = ["MoveScratch", "capacity", "placements", "route", "scratch"]
