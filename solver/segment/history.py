"""The segment search's history (every expanded or final state, append-only, from which the best
path is read back), and the search's state as a checkpoint keeps it (`SearchState`: its
`state_dict` and `from_state`, the table and the history in their saved forms)."""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass

import numpy as np

from engine.statefile import Fields

from ..layered import unpack
from .settings import SegmentSettings, Table, new_table

#: the checkpoint's format (a checkpoint of another format is refused) and what its file says it holds
CHECKPOINT_VERSION, CHECKPOINT_KIND = 3, "a segment search's checkpoint"


class History:
    """Every state taken from the table: its piece index, score, the id of the state it grew from
    and its segment's placements. Id 0 is the empty board at piece 0. Kept as one block per piece
    index (ids consecutive), so that adding costs the block alone however long the run."""

    def __init__(self):
        self.first = [0]  # the first id of each block
        self.blocks = [self._block(0, np.zeros(1, np.int64), np.full(1, -1, np.int64), np.zeros(1, np.int64),
                                   np.zeros((1, 1), np.int16))]
        self.dropped = 0  # states left out by `compacted` (a history read back from a checkpoint)

    @staticmethod
    def _block(i, score, parent, length, codes) -> dict:
        n = len(score)
        flat = np.concatenate([codes[j, :length[j]] for j in range(n)]) if n else np.zeros(0, np.int16)
        start = np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
        return {"index": i, "score": np.asarray(score, np.int64), "parent": np.asarray(parent, np.int64),
                "start": start, "length": np.asarray(length, np.int64), "codes": flat.astype(np.int16)}

    def __len__(self):
        return self.first[-1] + len(self.blocks[-1]["score"])

    @property
    def taken(self) -> int:
        """How many states were ever taken, the empty board included, kept or compacted away."""
        return len(self) + self.dropped

    def add(self, i, score, parent, length, codes) -> np.ndarray:
        """Append the states at piece index ``i``; returns their ids."""
        first = len(self)
        self.first.append(first)
        self.blocks.append(self._block(i, score, parent, length, codes))
        return np.arange(first, first + len(score), dtype=np.int64)

    def _at(self, state: int) -> tuple[dict, int]:
        k = bisect.bisect_right(self.first, state) - 1
        return self.blocks[k], state - self.first[k]

    def score(self, state: int) -> int:
        block, j = self._at(state)
        return int(block["score"][j])

    def reached(self, i: int) -> bool:
        """Whether a state at piece index ``i`` was taken."""
        return any(b["index"] == i and len(b["score"]) for b in self.blocks[::-1])

    def best(self) -> int:
        """The id of the best state: the highest score, then the later piece index, then the first."""
        best, key = 0, None
        for first, block in zip(self.first, self.blocks):
            if not len(block["score"]):
                continue
            j = int(np.argmax(block["score"]))  # the first of the block's best
            k = (int(block["score"][j]), block["index"])
            if key is None or k > key:
                best, key = first + j, k
        return best

    def placements(self, state: int) -> np.ndarray:
        """The (pieces, 3) placements (x, y, state) from the empty board to ``state``."""
        parts = []
        while state > 0:
            block, j = self._at(state)
            a = block["start"][j]
            parts.append(block["codes"][a:a + block["length"][j]])
            state = int(block["parent"][j])
        codes = np.concatenate(parts[::-1]) if parts else np.zeros(0, np.int16)
        out = np.zeros((len(codes), 3), np.int64)
        for t, c in enumerate(codes):
            out[t] = unpack(int(c))
        return out

    def compacted(self, live: np.ndarray) -> tuple["History", np.ndarray]:
        """A copy holding only what can still matter, and the ids' map (old id -> new id, -1 for a
        state left out). Kept: the states ``live`` (ids), the states taken last, the best state,
        and all their ancestors, in their order. The search goes on from the copy as from this
        history: a path is followed back only from a state in the table or from the best, and a
        state left out never becomes the best (no better than the best, and after it when equal).
        Most states lead nowhere: at record size under 1% are kept, and a saved search shrinks
        accordingly."""
        parent = np.concatenate([b["parent"] for b in self.blocks])
        keep = np.zeros(len(parent), bool)
        last = np.arange(self.first[-1], len(self), dtype=np.int64)
        for state in [*np.unique(np.concatenate([np.asarray(live, np.int64), last])).tolist(), self.best()]:
            while state >= 0 and not keep[state]:
                keep[state] = True
                state = int(parent[state])
        new_id = np.cumsum(keep, dtype=np.int64) - 1
        new_id[~keep] = -1
        out = History()
        out.first, out.blocks, out.dropped = [], [], self.dropped + int(len(keep) - keep.sum())
        for first, block in zip(self.first, self.blocks):
            j = np.flatnonzero(keep[first:first + len(block["score"])])
            if not len(j):
                continue
            length = block["length"][j]
            codes = [block["codes"][a:a + m] for a, m in zip(block["start"][j], length)]
            out.first.append(int(new_id[first + j[0]]))
            out.blocks.append({
                "index": block["index"], "score": block["score"][j].copy(),
                "parent": np.where(block["parent"][j] >= 0, new_id[block["parent"][j]], -1),
                "start": np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64), "length": length.copy(),
                "codes": np.concatenate(codes).astype(np.int16) if codes else np.zeros(0, np.int16)})
        return out, new_id

    def to_dict(self) -> dict:
        return {"first": self.first, "blocks": self.blocks, "dropped": self.dropped}

    @classmethod
    def from_dict(cls, data: dict) -> "History":
        h = cls()
        h.first, h.blocks = list(data["first"]), list(data["blocks"])
        h.dropped = int(data.get("dropped", 0))  # a checkpoint saved before compaction: every state
        return h


@dataclass
class SearchState:
    """Where a segment search stands between two piece indices: its ``table`` of states, its
    ``history``, the best score after each piece (``best_by_step``), the next piece index to expand
    (``next_index``; n + 1 once the final states are taken), the boards ``valued`` so far, the
    ``best`` score, and its ``sittings`` (each process that worked on it, `SittingCost`'s fields)."""

    table: Table
    history: History
    best_by_step: np.ndarray
    next_index: int
    valued: int
    best: int
    sittings: list

    @classmethod
    def new(cls, kcfg: SegmentSettings, height: int, n: int) -> "SearchState":
        """A search of ``n`` pieces that has expanded nothing."""
        return cls(new_table(kcfg, height), History(), np.zeros(n, np.int64), 0, 0, 0, [])

    def state_dict(self, fingerprint: str) -> dict:
        """The checkpoint's tree (`engine.statefile`): the history cut to the states the table's
        entries go back to (`History.compacted`), the table's parents mapped to its ids
        (`saved_table`), and the ``fingerprint`` of the search that made it."""
        compact, new_id = self.history.compacted(live_states(self.table))
        return {"version": CHECKPOINT_VERSION, "fingerprint": fingerprint, "next_index": self.next_index,
                "valued": self.valued, "best": self.best, "best_by_step": self.best_by_step,
                "table": saved_table(self.table, new_id), "history": compact.to_dict(), "sittings": self.sittings,
                "saved": time.strftime("%Y-%m-%d %H:%M:%S")}

    @classmethod
    def from_state(cls, f: Fields, kcfg: SegmentSettings, height: int, n: int) -> "SearchState":
        """The state of a checkpoint's tree ``f``, every array of the dtype and shape this search
        makes and every index within its range (a value out of range would be read out of bounds by
        the kernels); `StateError` naming the key otherwise. The version and fingerprint are the
        caller's to check."""
        blank = new_table(kcfg, height)
        t = f.sub("table")
        table = Table(**{k: t.array(k, a.dtype, shape=a.shape) for k, a in blank._asdict().items()})
        if table.count.min(initial=0) < 0 or table.count.max(initial=0) > kcfg.states:
            t.fail("table.count", f"bucket counts outside [0, {kcfg.states}]")
        h = f.sub("history")
        first = [h.int("first", 0, value=v) for v in h.list("first")]
        blocks, total = [], 0
        for k, b in enumerate(h.subs("blocks")):
            score = b.array("score", np.int64, ndim=1)
            m = len(score)
            block = {"index": b.int("index", 0, n), "score": score, "parent": b.array("parent", np.int64, shape=(m,)),
                     "start": b.array("start", np.int64, shape=(m,)), "length": b.array("length", np.int64, shape=(m,)),
                     "codes": b.array("codes", np.int16, ndim=1)}
            ends = block["start"] + block["length"]
            if m and (block["length"].min() < 0 or block["start"].min() < 0 or ends.max() > len(block["codes"])):
                b.fail(b.where, "a segment's placements lie outside its codes")
            if k >= len(first) or first[k] != total:
                h.fail("history.first", "not the first id of each block")
            if m and (block["parent"].min() < -1 or (block["parent"] >= total + np.arange(m)).any()):
                b.fail(b.name("parent"), "a state's parent is not a state taken before it")
            blocks.append(block)
            total += m
        if len(first) != len(blocks) or not blocks:
            h.fail("history", "blocks and their first ids do not match")
        history = History.from_dict({"first": first, "blocks": blocks, "dropped": h.int("dropped", 0)})
        used = used_slots(table)
        if (table.parent[used] < 0).any() or (table.parent[used] >= total).any():
            t.fail("table.parent", f"a state's parent is not in the history ({total} states)")
        if (table.length[used] < 0).any() or (table.length[used] > kcfg.max_depth).any():
            t.fail("table.length", f"segments longer than {kcfg.max_depth} placements")
        sittings = []
        for s in f.subs("sittings"):
            sittings.append({"started": s.str("started"), "first_index": s.int("first_index", 0),
                             "next_index": s.int("next_index", 0), "seconds": s.float("seconds"),
                             "cpu_seconds": s.float("cpu_seconds"), "peak_mib": s.float("peak_mib")})
        return cls(table, history, f.array("best_by_step", np.int64, shape=(n,)), f.int("next_index", 0, n + 1),
                   f.int("valued", 0), f.int("best", 0), sittings)


def saved_table(table: Table, new_id: np.ndarray) -> dict:
    """The table as a checkpoint keeps it: its entries' parents mapped to a compacted history's ids
    (`History.compacted`), and the slots past each bucket's count, which are never read, zeroed
    (so that the saved file compresses)."""
    used = used_slots(table)
    out = {"count": table.count.copy()}
    for name, a in table._asdict().items():
        if name != "count":
            out[name] = np.where(used.reshape(used.shape + (1,) * (a.ndim - 3)), a, 0).astype(a.dtype)
    out["parent"] = np.where(used, new_id[out["parent"]], 0)
    return out


def used_slots(table: Table) -> np.ndarray:
    """Which slots of each bucket hold an entry: (slots, keys, states) booleans."""
    return np.arange(table.parent.shape[2]) < table.count[..., None]


def live_states(table: Table) -> np.ndarray:
    """The history ids the table's entries grew from."""
    return table.parent[used_slots(table)]
