"""The replay trace and the viewer: per-piece boards against independent replays, the page's data,
the PNG, bad input, and the page itself in a real headless Chromium (Selenium)."""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from engine import GEEK, final_board, replay
from experiments import view

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def record_text(replays_dir):
    return (replays_dir / "geek-1395326.txt").read_text()


@pytest.fixture(scope="module")
def game(replays_dir):
    return view.load(replays_dir / "geek-1395326.txt")


# ------------------------------------------------------------------------------------------------
# the engine's trace


def test_trace_boards_are_the_boards_of_truncated_replays(record_text):
    r = replay(record_text, trace=True)
    plain = replay(record_text)
    assert (r.score, r.bricks, r.end) == (1_395_326, 9_999, "record_end")
    assert np.array_equal(r.score_by_piece, plain.score_by_piece) and plain.boards is None
    assert r.boards.shape == (10_000, 20) and r.locked.shape == (10_000, 5)
    assert not r.boards[0].any() and r.locked[0, 0] == -1
    for n in (1, 2, 3, 137, 500, 4_321, 9_998, 9_999):
        assert np.array_equal(r.boards[n], final_board(record_text, pieces=n)), n
    # every piece locked; its shape is the sequence's
    assert np.array_equal(r.locked[1:, 0], GEEK.sequence(9_999))
    # the rows each lock cleared add up to the score's clears: a lock clearing f rows scores
    # cells x (0, 1, 3, 6, 10)[f]; pieces that cleared nothing gained nothing
    gains = np.diff(r.score_by_piece)
    f = r.locked[1:, 4]
    assert np.all((gains > 0) == (f > 0))
    assert np.all(gains[f > 0] % np.array([1, 1, 3, 6, 10])[f[f > 0]] == 0)


def test_trace_of_a_vanished_piece_and_a_mid_air_lock():
    # piece 1 is followed directly by N: it vanishes; piece 2 moves one left and locks mid-air
    r = replay("N,N,L1", trace=True)
    assert (r.bricks, r.score, r.end) == (2, 0, "record_end")
    assert r.locked[1].tolist() == [-1, 0, GEEK.spawn_x, GEEK.spawn_y, 0]
    assert not r.boards[1].any()
    shape = int(GEEK.sequence(2)[1])
    assert r.locked[2].tolist() == [shape, 1, GEEK.spawn_x - 1, GEEK.spawn_y, 0]
    cells = {(GEEK.spawn_x - 1 + int(dx), GEEK.spawn_y + int(dy)) for dx, dy in GEEK.cells[shape, 1]}
    drawn = {(x, y) for y in range(20) for x in range(10) if (int(r.boards[2][y]) >> x) & 1}
    assert drawn == {(x, y) for x, y in cells if y >= 0}


# ------------------------------------------------------------------------------------------------
# the viewer in Python


def test_clears_count_only_scoring_locks(replays_dir):
    # the 881,026 record ends at the piece limit: its 10,000th piece locks but scores nothing
    game = view.load(replays_dir / "geek-881026.txt")
    res = game.result
    assert (res.score, res.bricks, res.end) == (881_026, 10_000, "piece_limit")
    rows = view.cleared_rows(res)
    assert rows[-1] == 0 and rows[0] == 0
    assert np.array_equal(np.diff(res.score_by_piece) > 0, rows[1:] > 0)
    assert len(game.sequence) == 10_000  # no piece after the limit: the page shows no next piece


def test_piece_cells_follow_the_clear(game):
    res = game.result
    # a lock that cleared rows but left some of its cells on the board
    checked = 0
    for n in np.flatnonzero(view.cleared_rows(res) > 0)[:200]:
        grid, cells = view.board_cells(game, int(n))
        assert all(grid[y, x] for x, y in cells)
        assert len(cells) < 4  # a clearing piece always loses at least one cell to its full row
        checked += 1
    assert checked == 200
    grid, cells = view.board_cells(game, 500)
    assert len(cells) == 4 and all(grid[y, x] for x, y in cells)
    assert view.board_cells(game, 0)[1] == []
    assert view.clear_kinds(res, res.bricks) == [int(v) for v in np.bincount(res.locked[1:, 4], minlength=5)[1:]]


def test_page_is_self_contained_and_embeds_the_replay(game):
    page = view.html(game)
    assert "http://" not in page and "https://" not in page and "src=" not in page and "href=" not in page
    data = json.loads(page.split("const D = ", 1)[1].split(";\n", 1)[0])
    assert (data["pieces"], data["score"], data["end"]) == (9_999, 1_395_326, "record_end")
    import base64
    boards = np.frombuffer(base64.b64decode(data["boards"]), "<u2").reshape(-1, 20)
    scores = np.frombuffer(base64.b64decode(data["scores"]), "<i4")
    assert np.array_equal(boards, game.result.boards) and np.array_equal(scores, game.result.score_by_piece)


def test_page_is_the_packaged_template_filled_in(game):
    import fnmatch

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    template = view.page_template()
    assert template.count("__TITLE__") == 1 and template.count("__DATA__") == 1
    page = view.html(game)
    head, tail = template.split("__DATA__")
    title = "<title>geek-1395326.txt: 1,395,326 points</title>"
    assert page.startswith(head.replace("<title>__TITLE__</title>", title)) and page.endswith(tail)
    # every template file is package data (a non-editable install has them too)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["experiments"]
    for path in (ROOT / "experiments" / "templates").iterdir():
        assert any(fnmatch.fnmatch(f"templates/{path.name}", p) for p in patterns), path


def test_view_cli_summary_png_and_errors(tmp_path, record_text, capsys):
    solve_dir = tmp_path / "solve"
    solve_dir.mkdir()
    (solve_dir / "record.txt").write_text(record_text)
    summary = json.loads((ROOT / "results" / "beam-w100" / "summary.json").read_text())  # (a solve's, as written)
    (solve_dir / "summary.json").write_text(json.dumps({**summary, "score": 1_395_326}))
    out = tmp_path / "r.html"
    assert view.main([str(solve_dir / "summary.json"), "--out", str(out)]) == 0
    assert "1,395,326 points" in out.read_text()
    capsys.readouterr()
    assert view.main([str(solve_dir / "summary.json")]) == 0  # no --out: beside the summary, and said so
    assert (solve_dir / "replay.html").read_text() == out.read_text()
    assert capsys.readouterr().out.startswith(f"wrote {solve_dir / 'replay.html'}: ")
    png = tmp_path / "b.png"
    assert view.main([str(solve_dir / "summary.json"), "--png", "500", "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # bad input: exit 2 naming the file; an invalid record: exit 1
    (tmp_path / "lonely").mkdir()
    (tmp_path / "lonely" / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "bad.txt").write_text("L1,N")
    cases = [([str(tmp_path / "lonely" / "summary.json")], 2, "no record.txt beside it"),
             ([str(tmp_path / "missing.txt")], 2, "missing.txt: file not found"),
             ([str(solve_dir / "record.txt"), "--png", "10000"], 2, "outside 0..9999"),
             ([str(tmp_path / "bad.txt")], 1, "must start with N")]
    capsys.readouterr()
    for argv, status, message in cases[1:]:  # in this process; the first from the command line below
        assert view.main([*argv, "--out", str(tmp_path / "x")]) == status, argv
        err = capsys.readouterr().err
        assert message in err and err.startswith("error: ")
    (argv, status, message) = cases[0]
    p = subprocess.run([sys.executable, "-m", "experiments.view", *argv, "--out", str(tmp_path / "x")],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == status, (argv, p.stderr)
    assert message in p.stderr and p.stderr.startswith("error: ") and "Traceback" not in p.stderr


# ------------------------------------------------------------------------------------------------
# the page in a real browser


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.skip("no Chromium here: /usr/bin/chromium and /usr/bin/chromedriver come from Debian's "
                    "chromium and chromium-driver packages (.ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="view-test-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1000,900",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_page_in_headless_chromium(browser, game, tmp_path):
    from selenium.webdriver.common.by import By

    page = tmp_path / "replay.html"
    page.write_text(view.html(game))
    browser.get(page.as_uri())
    text = lambda id_: browser.find_element(By.ID, id_).text
    number = lambda id_: int(text(id_).replace(",", ""))
    assert number("piece") == 0 and number("score") == 0 and number("total") == 9_999
    # jump to piece 500: the score shown is the replayer's score after piece 500
    box = browser.find_element(By.ID, "jump")
    box.clear()
    box.send_keys("500")
    browser.find_element(By.ID, "go").click()
    assert number("piece") == 500
    assert number("score") == int(game.result.score_by_piece[500]) == 64_624
    kinds = view.clear_kinds(game.result, 500)
    assert [number(f"clears-{k}") for k in (1, 2, 3, 4)] == kinds
    assert number("lines") == sum(k * c for k, c in zip((1, 2, 3, 4), kinds))
    # the page draws piece 500 where Python puts it, and the seek bar follows
    js_cells = browser.execute_script("return pieceCells(500);")
    assert sorted(map(tuple, js_cells)) == sorted(view.board_cells(game, 500)[1])
    assert browser.find_element(By.ID, "seek").get_attribute("value") == "500"
    # a step forward, then play a few steps at 25 pieces/s and pause
    browser.find_element(By.ID, "forward").click()
    assert number("piece") == 501 and number("score") == int(game.result.score_by_piece[501])
    browser.find_element(By.ID, "play").click()
    deadline = time.monotonic() + 10
    while number("piece") < 505 and time.monotonic() < deadline:
        time.sleep(0.05)
    browser.find_element(By.ID, "play").click()
    shown = number("piece")
    assert shown >= 505
    assert number("score") == int(game.result.score_by_piece[shown])
    time.sleep(0.3)
    assert number("piece") == shown  # paused
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
