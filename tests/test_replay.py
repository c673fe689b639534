"""Replay: the shared records' verdicts, each quirk of GEEK_RULES.md, each validation rule, and
random records against the plain-Python reference."""

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

import reference as ref
from engine import GEEK, encode, extract, final_board, parse, rejection, replay, replay_line, to_strings, upload_line
from engine.record import RecordError, piece_operations


def test_published_records(replays_dir):
    winner = replay((replays_dir / "geek-1395326.txt").read_text())
    assert (winner.valid, winner.score, winner.bricks, winner.end) == (True, 1_395_326, 9_999, "record_end")
    go = replay((replays_dir / "geek-881026.txt").read_text())
    assert (go.valid, go.score, go.bricks, go.end) == (True, 881_026, 10_000, "piece_limit")
    # the Go solver's own simulator scored the 10,000th piece: 881,136 is wrong
    assert go.score_by_piece[-1] == 881_026


def test_console_lines_round_trip(replays_dir):
    record = (replays_dir / "geek-1395326.txt").read_text().strip()
    assert extract(replay_line(record)) == record
    assert extract(upload_line(record, 1395326)) == record
    assert replay(upload_line(record, 1)).score == 1_395_326
    assert replay_line("N,D1") == "game.pause();game.playRecord('N,D1'.split(','));"
    assert upload_line("N,D1", 7) == "axios.post(`api/upload`, {record: 'N,D1', score: 7})"


# The first pieces of the sequence: Z, I, O, S, L, Z, S, I (spawn states 0, 1, 2, 3, 0, ...).

def test_piece_followed_by_n_vanishes():
    # piece 1 (Z) vanishes; piece 2 (I, state 1: horizontal) drops to the floor
    r = replay("N,N,D19")
    assert (r.score, r.bricks, r.end) == (0, 2, "record_end")
    board = to_strings(final_board("N,N,D19"))
    assert board[19] == "...####..." and all(row == ".........." for row in board[:19])


def test_record_ending_in_n_locks_at_spawn():
    board = to_strings(final_board("N,D18,N"))
    # piece 2 (I horizontal at spawn, centre (4, 0)) locks on row 0
    assert board[0] == "...####..."
    r = replay("N,D18,N")
    assert (r.bricks, r.end) == (2, "record_end")


def test_mid_air_lock_and_cells_above_top_discarded():
    # piece 1: Z in state 0 at spawn covers (4,0) (4,-1) (5,0) (3,-1): the two cells above vanish
    board = to_strings(final_board("N,L1,R1"))
    assert board[0] == "....##...." and board[1] == ".........."
    assert replay("N,L1,R1").end == "record_end"


def test_no_op_step_still_locks():
    # D1 that cannot move (I vertical at the bottom) still counts as an operation: the piece locks
    r = replay("N,N,C1,D18,D1")
    assert to_strings(final_board("N,N,C1,D18,D1"))[16:] == ["....#....."] * 4
    assert r.end == "record_end"


def test_top_touched_counted_before_clearing():
    # Fill every row with one cell in a column of vertical I pieces? Simpler: build a board where the
    # lock fills a row and also occupies the last empty row: the lock must end the game, not score.
    # Reference-built record: vertical I pieces stacked in column 0 reach row 0 after 5 pieces.
    seq = GEEK.sequence(200)
    ops = []
    stacked = 0
    for i, shape in enumerate(seq):
        ops.append("N")
        if shape == 0 and stacked < 5:
            # bring the I to vertical (state 0 or 2) and to column 0
            turns = (-(i % 4)) % 2
            if turns:
                ops.append(f"C{turns}")
            ops += ["L4", f"D{19 - 4 * stacked - 1}"]
            stacked += 1
        # every other piece vanishes
    text = ",".join(ops)
    got = replay(text)
    want = ref.replay(text)
    assert (got.score, got.bricks, got.end) == (want["score"], want["pieces"], want["end"])
    assert got.end == "top_touched"


def test_piece_limit_scores_nothing(replays_dir):
    r = replay((replays_dir / "geek-881026.txt").read_text())
    before = r.score_by_piece[9_999]
    assert r.score == before  # the 10,000th piece scored nothing
    # 10,001 bare N: the 10,000th piece vanishes; the next N ends the game at the limit
    r = replay(",".join(["N"] * 10_001))
    assert (r.bricks, r.end, r.score) == (10_000, "piece_limit", 0)


def test_spawn_blocked_counts_the_piece():
    # piece 1 (Z) locks at spawn covering (4,0), (5,0); piece 2 (I horizontal) spawns on row 0: blocked
    r = replay("N,D1,N")
    assert (r.bricks, r.end) == (2, "spawn_blocked")


@pytest.mark.parametrize("record, reason", [
    ("D1,N", "must start with N"),
    ("N3,D1", "N takes no number"),
    ("N,D0", "D needs a number of at least 1"),
    ("N,L", "L needs a number of at least 1"),
    ("N,d19", "is not N, L<k>, R<k>, D<k> or C<k>"),
    ("N,X3", "is not N, L<k>, R<k>, D<k> or C<k>"),
    ("N,L-1", "is not N, L<k>, R<k>, D<k> or C<k>"),
    ("N,D1.5", "is not N, L<k>, R<k>, D<k> or C<k>"),
    ("N,D50,L50,R1", "add up to 101, more than 100"),
    ("N,D1,", "is not N, L<k>, R<k>, D<k> or C<k>"),
    ("", "is not N, L<k>, R<k>, D<k> or C<k>"),
])
def test_validation_reasons(record, reason):
    error = rejection(record)
    assert error is not None and reason in error
    result = replay(record)
    assert not result.valid and result.error == error and result.end is None
    assert ref.rejection(ref.parse_record(record)) is not None


def test_valid_forms():
    assert rejection("N,D019") is None  # leading zeros
    assert parse("N, D019 ,\tL2\n").counts.tolist() == [0, 19, 2]  # trimmed
    assert rejection("N,D50,L50,N,R100") is None  # the limit is per piece
    assert rejection("\ufeffN,D1") is None  # JavaScript's trim() removes a byte-order mark
    with pytest.raises(RecordError):
        parse("N,D٣")  # only ASCII digits


def test_encode():
    assert piece_operations([3, 3, 0, 0, 0, 2, 2]) == ["C2", "L3", "D2"]
    assert piece_operations([]) == ["D1"]
    assert encode([[2] * 19, [1, 2]]) == "N,D19,N,R1,D1"


ops = st.one_of(
    st.just("N"),
    st.builds(lambda k, n: f"{k}{n}", st.sampled_from("LRDC"), st.integers(1, 25)),
    st.builds(lambda n: f"D{n}", st.integers(1, 20)),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(tail=st.lists(ops, min_size=0, max_size=400))
def test_random_records_match_reference(tail):
    text = ",".join(["N"] + tail)
    got = replay(text)
    want = ref.replay(text)
    assert got.valid == want["valid"]
    if got.valid:
        assert (got.score, got.bricks, got.end) == (want["score"], want["pieces"], want["end"])


def test_replay_cli(tmp_path, replays_dir, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("N,D0")
    good = replays_dir / "geek-881026.txt"
    out = subprocess.run([sys.executable, "-m", "experiments.replay", "--json", str(good), str(bad)],
                         capture_output=True, text=True)
    assert out.returncode == 1
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0] == {"file": str(good), "valid": True, "score": 881026, "bricks": 10000,
                        "end": "piece_limit", "error": None}
    assert lines[1]["valid"] is False and "D needs a number" in lines[1]["error"]
    assert set(lines[1]) == {"file", "valid", "score", "bricks", "end", "error"}
    # the human form and the user's errors, through the command's main in this process (a process
    # start each spared)
    from experiments.replay import main

    assert main([str(good)]) == 0
    assert "score 881,026, 10,000 pieces, piece_limit" in capsys.readouterr().out
    assert main([str(good), str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt" in capsys.readouterr().err
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00")
    assert main([str(binary)]) == 2


@pytest.mark.parametrize("count", ["99999999999999999999", "1" + "0" * 5000, "0" * 6000 + "7"])
def test_a_huge_count_is_an_invalid_record_not_a_crash(count):
    """A count too big for an int64, or for Python's int() (over 4,300 digits), is a piece whose
    numbers add up to more than 100; leading zeros alone are allowed, however many."""
    text = f"N,D{count}"
    result = replay(text)
    if count.lstrip("0") == "7":
        assert result.valid and result.bricks == 1
        return
    assert not result.valid
    assert result.error.startswith("operation 2 ('D") and result.error.endswith("add up to more than 100")
    assert len(result.error) < 200  # the count is cut in the message


def test_a_record_longer_than_any_game_needs_is_refused():
    """Written without leading zeros, 10,000 pieces of 100 single steps take 3,020,000 characters
    (N, then 100 operations like ,L1, each piece, the commas between); longer texts are refused
    before they are read as operations."""
    from engine.record import MAX_RECORD_CHARS

    longest = ",".join(["N" + ",L1" * 100] * 10_000)
    assert len(longest) == 3_019_999 < MAX_RECORD_CHARS
    assert rejection(longest) is None
    result = replay("N," * (MAX_RECORD_CHARS // 2 + 1))
    assert not result.valid and result.error == (
        f"the record is {MAX_RECORD_CHARS + 2:,} characters long, more than the {MAX_RECORD_CHARS:,} any record "
        "of 10,000 pieces needs")


@pytest.mark.slow
def test_replay_cli_batch_goes_on_after_bad_records_and_bounds_its_input(tmp_path, replays_dir):
    huge = tmp_path / "a.txt"
    huge.write_text("N,D99999999999999999999")
    digits = tmp_path / "d20.txt"
    digits.write_text("N,D" + "9" * 5000)
    long = tmp_path / "long.txt"
    long.write_text("N," * 25_000_000)  # 50 MB
    good = replays_dir / "geek-881026.txt"
    out = subprocess.run([sys.executable, "-m", "experiments.replay", "--json", str(huge), str(digits), str(long),
                          str(good)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and out.stderr == ""
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(line["file"], line["valid"]) for line in lines] == [
        (str(huge), False), (str(digits), False), (str(long), False), (str(good), True)]
    assert lines[0]["error"].endswith("add up to more than 100")
    assert "more than the 4,000,000" in lines[2]["error"]
    assert lines[3]["score"] == 881026
    # an endless input on standard input is read only as far as the bound; as a file, a device is not read
    peak = "[line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')][0]"
    with open("/dev/zero", "rb") as endless:
        zero = subprocess.run([sys.executable, "-c", "import sys; from experiments.replay import main; "
                               f"code = main(['-', '/dev/zero']); print({peak}); sys.exit(code)"],
                              stdin=endless, capture_output=True, text=True, timeout=60)
    assert zero.returncode == 2
    assert "-: invalid record: the file holds more than" in zero.stdout
    assert zero.stderr == "error: /dev/zero: not a regular file (a character device)\n"
    assert int(zero.stdout.split()[-1]) < 300_000  # KiB (about 110 MB): the bound, not the endless input


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.just("N"), st.just(" N"), st.just("N1"), st.just("D"), st.just("L0"),
                          st.builds(lambda letter, zeros, k: f"{letter}{'0' * zeros}{k}",
                                    st.sampled_from("LRDCX"), st.integers(0, 2), st.integers(1, 1200))),
                min_size=1, max_size=40))
def test_the_plain_fast_path_reads_records_as_the_rule_loop_does(ops):
    """`parse` reads a plain record without its per-operation loop; whatever the record, the result
    (arrays, or the error) is the loop's."""
    import engine.record as R

    text = ",".join(ops)
    fast = R._parse_plain(text)
    try:
        slow, error = R._parse_checked(text), None
    except RecordError as e:
        slow, error = None, str(e)
    if fast is not None:
        assert error is None
        assert fast.kinds.tolist() == slow.kinds.tolist() and fast.counts.tolist() == slow.counts.tolist()
    try:
        got = parse(text)
        assert error is None and got.kinds.tolist() == slow.kinds.tolist()
    except RecordError as e:
        assert str(e) == error
