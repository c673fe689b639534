"""Beam search over whole boards: the design behind the 1,395,326 record.

One layer per piece. Every node of the layer is expanded with every placement of the piece
(``placements: all``) or the lowest of each (state, column) (``lowest``); children are dropped when
they break a hard rule:
- the lock touches the top (every row occupied: the game would end), or, with ``top_row_free``,
  occupies the top row at all (before clearing), as the 1,395,326 solver's shortcut did;
- it clears 1-4 rows while the parent stack is lower than ``clear_min_height[rows - 1]`` rows or
  holds fewer than ``clear_min_cells[rows - 1]`` cells (clearing early wastes the multiplier),
  except in the last ``endgame_pieces`` pieces played, when no later clear needs the cells;
- its top ``sky_rows`` occupied rows each hold at most ``sky_max_cells`` cells (a branch reaching
  into the sky).
Children with the same board are merged (the higher score wins, then fewer clears, then the first
generated). Nodes more than ``score_gap`` points below the layer's best, or whose stack is more
than ``height_gap`` rows lower than the tallest, are dropped. The rest is cut back to ``width``:
``score_share`` of it by the score ranking, the rest by the quality ranking (the evaluator's value
of the board), each pick subject to quotas — at most a share of the picks per occupied height and
per ancestor 1, 2, 3, 4 generations up — so the beam keeps its diversity. Nodes tied on a ranking
are ordered by a tie order (`TIE_ORDERS`: ``hash``, a hash of the board's bits; ``board``, the
board's rows themselves, the 1,395,326 solver's order: a stack reaching a higher group of four rows
comes first), then by generation order; with ``keep_ties`` the nodes tied with a ranking's last pick
are kept too, as that solver does. The record ends on the best child of any layer, kept or cut: the
higher score, then the later piece (the score ranking is by score per clear, so a layer's highest
score can be cut).

The whole layer loop runs in numba (`run_layers`): a layer is arrays (boards, scores, clears,
heights, cells, ancestors), children are generated and valued over parents (in parallel with
numba's threads when there are several, each parent's children at fixed positions, so the result
does not depend on the number of threads), equal boards are merged through a hash table, and each
ranking sorts only the prefix of the nodes its walk can reach. Python runs once per chunk of layers
(progress, Ctrl-C), never per node or per piece.

The package's rooms: `bundles` (the constants and the kernels' bundles), `expansion` (a layer's
children: tie orders, placements, locks, values, equal boards merged), `ranking` (sorting and
picking under quotas), `layers` (the layer loop in numba), `driver` (the policy).
"""

from .bundles import BeamSettings, BeamState, Children, Parents, board_words, occupied_height
from .driver import Beam, initial_state, settings
from .expansion import LOCK_NODES, NODE_PLACEMENTS, PLACE_NODES, TIE_ORDERS, VALUE_KEPT, node_placements
from .layers import next_layer, run_layers, trace_back
from .ranking import Picks, pack_rows, pick

__all__ = ["Beam", "BeamSettings", "BeamState", "Children", "LOCK_NODES", "NODE_PLACEMENTS", "PLACE_NODES", "Parents",
           "Picks", "TIE_ORDERS", "VALUE_KEPT", "board_words", "initial_state", "next_layer", "node_placements",
           "occupied_height", "pack_rows", "pick", "run_layers", "settings", "trace_back"]
