"""The game-state API, and children built by `lock_copy` against `GameState.apply`."""

import numpy as np

from engine import CLASSIC, GEEK, GameEnd, GameState, encode, from_strings, lock_copy, placements, replay, scratch


def state_on(board_text, shapes, piece=0, rules=GEEK):
    board = from_strings(board_text, rules.width, rules.height)
    return GameState(rules, np.array(shapes, np.int8), board, piece=piece)


def test_top_touched_is_counted_before_clearing():
    # Rows 0..18 hold a cell in column 0; a vertical I fills row 19 and every row is occupied at
    # the lock: the game ends, the piece scores nothing although it completes a row.
    rows = ["#........."] * 19 + ["#########."]
    g = state_on("\n".join(rows), [0])
    t = g.apply((9, 18, 0))
    assert (t.over, t.points, t.lines, t.state.end, t.state.score) == (True, 0, 0, "top_touched", 0)


def test_score_is_cells_times_table():
    # Row 19 misses column 9; rows 17-18 hold 3 more cells. A vertical I at x = 9 fills row 19:
    # cells on the board after the lock = 9 + 3 + 4 = 16, one row -> 16 x 1; 6 cells remain.
    g = state_on("#.........\n##........\n#########.", [0])
    t = g.apply((9, 18, 0))
    assert (t.points, t.lines) == (16, 1)
    s = t.state
    assert (s.score, s.clears, s.lines, s.clear_kinds, s.cells, s.piece) == (16, 1, 1, (0, 1, 0, 0, 0), 6, 1)
    assert s.end == "sequence_end"


def test_two_counts_named_apart():
    # Four rows missing column 9 and a vertical I: one clear event of four lines, 10 x cells.
    g = state_on("\n".join(["#########."] * 4), [0, 0])
    t = g.apply((9, 18, 0))
    assert (t.lines, t.points) == (4, 40 * 10)
    assert (t.state.clears, t.state.lines, t.state.clear_kinds) == (1, 4, (0, 0, 0, 0, 1))


def test_piece_limit_in_state():
    g = GameState.new(GEEK)
    g = GameState(GEEK, g.sequence, g.board, piece=9_999)
    placement = g.placements()[0]
    t = g.apply(placement)
    assert (t.over, t.points, t.state.end) == (True, 0, "piece_limit")


def test_apply_rejects_unreachable():
    g = GameState.new(GEEK)
    try:
        g.apply((0, 5, 0))
    except ValueError as e:
        assert "not a placement" in str(e)
    else:
        raise AssertionError("an unreachable placement was accepted")


def test_state_is_immutable_and_game_replays():
    g0 = GameState.new(GEEK, pieces=200)
    g = g0
    routes = []
    while not g.over:
        p = g.placements()
        pick = p[np.lexsort((p[:, 0], -p[:, 1]))[0]]  # lowest, then leftmost
        routes.append(g.route(pick))
        g = g.apply(pick).state
    assert g0.board.sum() == 0 and g0.piece == 0
    r = replay(encode(routes))
    assert (r.score, r.bricks) == (g.score, g.piece)
    assert r.end == ("top_touched" if g.end == "top_touched" else "record_end")


def children(boards, rules, shape, state, number):
    """Every child of every board for piece ``number`` (1-based) of ``shape`` spawning in
    ``state``: (parent index, placement, locked, cleared, `LockResult`), parents in order, each
    parent's children in `placements` order (the order the beam expands them in)."""
    sc = scratch(rules)
    out = []
    for i, parent in enumerate(boards):
        for p in placements(parent, rules, shape, state, sc):
            x, y, s = (int(v) for v in p)
            before = parent.copy()
            locked = np.zeros_like(parent)
            cleared = np.zeros_like(parent)
            lock = lock_copy(parent, rules.kernel, shape, s, x, y, number, locked, cleared)
            assert (parent == before).all(), "lock_copy changed its parent"
            out.append((i, p, locked, cleared, lock))
    return out


def test_children_match_apply():
    rng = np.random.default_rng(1)
    boards = np.zeros((7, 20), np.uint16)
    for i in range(6):
        for y in range(12 + i, 20):
            boards[i, y] = rng.integers(0, 1023)
    # board 6: rows 2..19 hold nine cells each; every T rests across rows 0 and 1 and touches the top
    boards[6] = from_strings("\n".join(["#########."] * 18))
    kids = children(boards, GEEK, 3, 1, 2)
    assert [i for i, *_ in kids] == sorted(i for i, *_ in kids)
    seen = {"going_on": 0, "cleared": 0, "top_touched": 0}
    k = 0
    for i in range(7):
        g = GameState(GEEK, np.array([3, 3, 3], np.int8), boards[i], piece=1)
        ps = placements(boards[i], GEEK, 3, 1)
        assert [tuple(p) for _, p, *_ in kids[k:k + len(ps)]] == [tuple(p) for p in ps]
        for p in ps:
            parent, placement, locked, cleared, lock = kids[k]
            assert parent == i and (placement == p).all()
            t = g.apply(p, check=False)
            piece = boards[i].copy()
            for dx, dy in GEEK.cells[3, p[2]]:
                if p[1] + dy >= 0:
                    piece[p[1] + dy] |= 1 << (p[0] + dx)
            assert (locked == piece).all()                      # the board before the clear
            assert (cleared == t.state.board).all()             # the board after it
            assert lock.points == t.points and lock.over == t.over
            assert (GameEnd(lock.end).label if lock.over else None) == (t.state.end if t.over else None)
            assert lock.cells == sum(bin(int(r)).count("1") for r in piece)
            assert lock.occupied_rows == int((piece != 0).sum())
            if lock.over:
                assert t.lines == 0 and lock.points == 0
                seen["top_touched"] += 1
            else:
                assert lock.lines == t.lines == int((piece == GEEK.full_row).sum())
                seen["cleared" if lock.lines else "going_on"] += 1
            k += 1
    assert k == len(kids)
    assert all(seen.values()), seen                             # every kind of lock was compared


def test_classic_rules_play():
    g = GameState.new(CLASSIC, pieces=50, seed=3)
    assert g.board.shape == (26,) and g.spawn_state == 0
    assert (g.sequence == CLASSIC.sequence(50, seed=3)).all()
    while not g.over:
        p = g.placements()
        g = g.apply(p[np.argmax(p[:, 1])], check=False).state
    assert g.end in ("spawn_blocked", "sequence_end")
    assert g.score % 5 == 0
