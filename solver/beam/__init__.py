"""Beam search over whole boards: the design behind the 1,395,326 record.

One layer per piece: every node is expanded with the piece's placements (``placements``: ``all``,
or the ``lowest`` of each state and column), children that break a hard rule (the lock touches the
top, an early clear, a branch into the sky) are dropped, equal boards merged, and the rest cut back
to ``width`` by score and by the quality evaluator under height and ancestor quotas, ties ordered by
a tie order (`TIE_ORDERS`). The record ends on the best child of any layer, kept or cut. The whole
layer loop runs in numba (`run_layers`); Python runs once per chunk of layers, and the result does
not depend on the number of threads. In full: docs/policies.md, "The beam (`beam`)".

The package's rooms: `bundles` (the constants and the kernels' bundles), `expansion` (a layer's
children: tie orders, placements, locks, values, equal boards merged), `ranking` (sorting and
picking under quotas), `layers` (the layer loop in numba), `driver` (the policy)."""

from .bundles import BeamSettings, BeamState, Children, Parents, board_words, occupied_height
from .driver import Beam, initial_state, settings
from .expansion import LOCK_NODES, NODE_PLACEMENTS, PLACE_NODES, TIE_ORDERS, VALUE_KEPT, node_placements
from .layers import next_layer, run_layers, trace_back
from .ranking import Picks, pack_rows, pick

__all__ = ["Beam", "BeamSettings", "BeamState", "Children", "LOCK_NODES", "NODE_PLACEMENTS", "PLACE_NODES", "Parents",
           "Picks", "TIE_ORDERS", "VALUE_KEPT", "board_words", "initial_state", "next_layer", "node_placements",
           "occupied_height", "pack_rows", "pick", "run_layers", "settings", "trace_back"]
