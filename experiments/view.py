"""Watch a record: a self-contained HTML replay page, or the board at one piece as a PNG.

    python -m experiments.view FILE [--out replay.html] [--rules geek]
    python -m experiments.view FILE --png PIECE [--out board.png]

FILE is a record (plain, or either console line the contest accepted) or a solver ``summary.json``
(its ``record.txt`` beside it is replayed under the rules and seed of its ``config``). The record is
replayed by the engine (`engine.replay` with a trace) and every piece's board, lock, score and the
next piece are embedded in one HTML file (base64 of little-endian arrays; no network, no external
script): the board with the piece just locked highlighted, the next piece, score, piece counter,
lines cleared by kind, play/pause, speed, single steps, jump to a piece, a seek bar and the score
curve with the current piece marked. Keys: space play/pause, left/right one piece, Home/End;
``replay.html#500`` opens at piece 500.

"Piece n" is the game once n pieces have appeared and locked (piece 0: the empty board); its score
is the replayer's score after piece n. Exit status: 0 written, 1 invalid record, 2 bad input.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine import PRESETS, ReplayResult, Rules, get_rules, replay
from engine.rules import SHAPE_NAMES

from ._io import write_text

#: shape colours (I, L, J, T, O, S, Z), as in most Tetris games
COLOURS = ("#31c7ef", "#ef7921", "#5a65ad", "#ad4d9c", "#f7d308", "#42b642", "#ef2029")


class ViewError(Exception):
    """Bad input: the message names the file and the problem."""


class InvalidRecord(Exception):
    """A record the contest would reject: the message names the file and the reason."""


@dataclass(frozen=True)
class Game:
    """A replayed record with its trace: ``result`` (`engine.ReplayResult` with ``boards`` and
    ``locked``), the ``rules`` and ``sequence`` (shapes of pieces 1, 2, ..., one past the last
    played when the rules have one), ``name`` (what to call it) and ``claimed`` (the score a
    summary.json states, else None)."""

    name: str
    rules: Rules
    result: ReplayResult
    sequence: np.ndarray
    claimed: int | None = None

    @property
    def pieces(self) -> int:
        return self.result.bricks


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ViewError(f"{path}: cannot read: {reason}") from None


def load(path: str | Path, rules: str | None = None) -> Game:
    """Replay FILE (a record or a summary.json) with a trace. ``rules`` (a preset name) overrides
    the rules; a summary.json's own are used otherwise, geek for a bare record."""
    path = Path(path)
    text = _read(path)
    seed, claimed, name = None, None, str(path)
    if path.suffix == ".json":
        try:
            summary = json.loads(text)
        except json.JSONDecodeError as e:
            raise ViewError(f"{path}: not JSON: {e}") from None
        if not isinstance(summary, dict):
            raise ViewError(f"{path}: a solver summary.json is an object")
        config = summary.get("config") or {}
        rules = rules or config.get("rules") or "geek"
        seed = config.get("seed")
        claimed = summary.get("score")
        record_path = path.parent / "record.txt"
        if not record_path.exists():
            raise ViewError(f"{path}: no record.txt beside it (a solver writes both to one directory)")
        text = _read(record_path)
        name = str(record_path)
    rules = rules or "geek"
    if rules not in PRESETS:
        raise ViewError(f"{path}: rules: unknown preset {rules!r} (known: {', '.join(sorted(PRESETS))})")
    r = get_rules(rules)
    result = replay(text, r, seed=seed, trace=True)
    if not result.valid:
        raise InvalidRecord(f"{name}: invalid record: {result.error}")
    n = result.bricks + 1 if r.piece_limit is None else min(result.bricks + 1, r.piece_limit)
    return Game(name, r, result, r.sequence(max(n, 1), seed), claimed)


def _b64(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def page_data(game: Game) -> dict:
    """What the page embeds: rules, shapes, and per piece board, lock, score and next shape."""
    r, res = game.rules, game.result
    return {
        "name": game.name, "width": r.width, "height": r.height, "pieces": res.bricks, "end": res.end,
        "score": res.score, "claimed": game.claimed, "rules": r.name, "cycle": r.spawn_state == "cycle",
        "shapes": list(SHAPE_NAMES), "colours": list(COLOURS), "cells": r.cells.tolist(),
        "boards": _b64(res.boards, "<u2"),           # (pieces + 1) x height rows
        "locked": _b64(res.locked, "<i2"),           # (pieces + 1) x (shape, state, x, y, rows)
        "scores": _b64(res.score_by_piece, "<i4"),   # pieces + 1
        "cleared": _b64(cleared_rows(res), "i1"),     # pieces + 1: rows a scoring clear removed
        "sequence": _b64(game.sequence, "i1"),       # shape of piece n + 1 at index n
    }


def cleared_rows(res: ReplayResult) -> np.ndarray:
    """Rows cleared by each piece's lock, counted as `engine.GameState` counts clears: 0 for a piece
    that never locked and for a lock that ended the game (it scores nothing)."""
    rows = np.where(res.locked[:, 0] >= 0, res.locked[:, 4], 0)
    if res.end in ("top_touched", "piece_limit") and len(rows) > 1:
        rows[-1] = 0
    return rows


def clear_kinds(res: ReplayResult, n: int) -> list[int]:
    """Clear events by rows cleared (1, 2, 3, 4) up to piece n."""
    return [int(v) for v in np.bincount(cleared_rows(res)[: n + 1], minlength=5)[1:5]]


def html(game: Game) -> str:
    """The self-contained replay page."""
    data = json.dumps(page_data(game), separators=(",", ":"))
    title = f"{Path(game.name).name}: {game.result.score:,} points"
    return (PAGE.replace("__TITLE__", _escape(title)).replace("__DATA__", data.replace("</", "<\\/")))


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def board_cells(game: Game, n: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The board after piece n as a (height, width) bool array, and the cells (x, y) of piece n
    still on it after its clear (empty when it never locked)."""
    r, res = game.rules, game.result
    board = res.boards[n]
    grid = ((board[:, None].astype(np.int64) >> np.arange(r.width)) & 1).astype(bool)
    shape, state, x, y, rows = (int(v) for v in res.locked[n])
    if shape < 0 or n == 0:
        return grid, []
    full = (1 << r.width) - 1
    before = res.boards[n - 1].astype(np.int64).copy()
    cells = [(x + int(dx), y + int(dy)) for dx, dy in r.cells[shape, state]]
    for cx, cy in cells:
        if 0 <= cy < r.height:
            before[cy] |= 1 << cx
    full_rows = np.flatnonzero(before == full)
    kept = [(cx, cy + int(np.count_nonzero(full_rows > cy))) for cx, cy in cells
            if 0 <= cy < r.height and cy not in full_rows]
    return grid, kept


def write_png(game: Game, n: int, out: Path) -> None:
    """The board after piece n as a PNG (matplotlib): the stack grey, piece n in its colour."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    r, res = game.rules, game.result
    grid, piece = board_cells(game, n)
    img = np.ones((r.height, r.width, 3)) * np.array(to_rgb("#16181d"))
    img[grid] = to_rgb("#8a8f98")
    shape = int(res.locked[n, 0])
    for cx, cy in piece:
        img[cy, cx] = to_rgb(COLOURS[shape])
    fig, ax = plt.subplots(figsize=(r.width * 0.32 + 0.6, r.height * 0.32 + 0.9), dpi=100)
    ax.imshow(img, interpolation="nearest")
    ax.set_xticks(np.arange(-0.5, r.width), minor=True)
    ax.set_yticks(np.arange(-0.5, r.height), minor=True)
    ax.grid(which="minor", color="#2b2f37", linewidth=0.6)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
    ax.set_title(f"piece {n:,} / {res.bricks:,}\nscore {int(res.score_by_piece[n]):,}", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.view", description=__doc__.splitlines()[0])
    parser.add_argument("file", metavar="FILE", help="a record (plain or a console line) or a solver summary.json")
    parser.add_argument("--out", type=Path, help="output file (default replay.html, or replay-PIECE.png with --png)")
    parser.add_argument("--png", type=int, metavar="PIECE", help="write the board after this piece as a PNG instead")
    parser.add_argument("--rules", choices=sorted(PRESETS),
                        help="rules preset (default: the summary's, else geek)")
    args = parser.parse_args(argv)
    try:
        game = load(args.file, args.rules)
        if args.png is not None and not 0 <= args.png <= game.pieces:
            raise ViewError(f"{args.file}: --png: piece {args.png} is outside 0..{game.pieces}")
    except ViewError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except InvalidRecord as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    res = game.result
    if game.claimed is not None and game.claimed != res.score:
        print(f"warning: {args.file} states score {game.claimed:,} but its record replays to {res.score:,}",
              file=sys.stderr)
    if args.png is not None:
        out = args.out or Path(f"replay-{args.png}.png")
        write_png(game, args.png, out)
    else:
        out = args.out or Path("replay.html")
        write_text(out, html(game))
        out.chmod(0o644)  # a page to share (write_text's temporary file is private)
    print(f"{out}: {game.name}: score {res.score:,}, {res.bricks:,} pieces, {res.end}")
    return 0


PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<style>
  :root { --bg: #0f1115; --panel: #181b21; --text: #e6e8eb; --dim: #8b919b; --accent: #4ea1ff; }
  * { box-sizing: border-box; }
  body { margin: 0; padding: 16px 20px; background: var(--bg); color: var(--text);
         font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
  h1 { font-size: 16px; font-weight: 600; margin: 0 0 12px; }
  h1 small { color: var(--dim); font-weight: 400; margin-left: 8px; }
  .main { display: flex; gap: 20px; align-items: flex-start; }
  #board { background: #16181d; border: 1px solid #2b2f37; border-radius: 4px; display: block; }
  .side { display: flex; flex-direction: column; gap: 12px; min-width: 230px; }
  .card { background: var(--panel); border: 1px solid #262a31; border-radius: 6px; padding: 10px 12px; }
  .label { color: var(--dim); font-size: 12px; text-transform: uppercase; letter-spacing: .05em; }
  .big { font-size: 26px; font-weight: 600; font-variant-numeric: tabular-nums; }
  .mid { font-size: 17px; font-variant-numeric: tabular-nums; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  td, th { padding: 2px 6px; text-align: right; }
  th { color: var(--dim); font-weight: 400; }
  td:first-child, th:first-child { text-align: left; }
  .controls { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-top: 12px; }
  button, select, input { background: #222730; color: var(--text); border: 1px solid #363c47;
          border-radius: 4px; padding: 4px 9px; font: inherit; }
  button:hover { border-color: var(--accent); }
  #play { min-width: 70px; }
  #jump { width: 80px; }
  #seek { width: 100%; margin-top: 10px; accent-color: var(--accent); }
  #curve { display: block; margin-top: 8px; background: var(--panel); border: 1px solid #262a31;
           border-radius: 6px; cursor: crosshair; }
  .hint { color: var(--dim); font-size: 12px; margin-top: 6px; }
</style>
</head>
<body>
<h1 id="title"></h1>
<div class="main">
  <canvas id="board"></canvas>
  <div class="side">
    <div class="card"><div class="label">Score</div><div class="big" id="score">0</div>
      <div class="hint" id="gain"></div></div>
    <div class="card"><div class="label">Piece</div>
      <div class="mid"><span id="piece">0</span> / <span id="total">0</span></div></div>
    <div class="card"><div class="label">Next</div><canvas id="next"></canvas></div>
    <div class="card"><div class="label">Lines cleared</div>
      <table><thead><tr><th>rows at once</th><th>clears</th><th>lines</th></tr></thead>
      <tbody id="clears"></tbody></table></div>
  </div>
</div>
<div class="controls">
  <button id="first" title="first piece (Home)">&laquo;</button>
  <button id="back" title="one piece back (Left)">&#x25C0;</button>
  <button id="play" title="play / pause (Space)">Play</button>
  <button id="forward" title="one piece forward (Right)">&#x25B6;</button>
  <button id="last" title="last piece (End)">&raquo;</button>
  <label>speed <select id="speed">
    <option value="1">1 piece/s</option><option value="4">4 /s</option><option value="10">10 /s</option>
    <option value="25" selected>25 /s</option><option value="60">60 /s</option>
    <option value="150">150 /s</option><option value="500">500 /s</option></select></label>
  <label>piece <input id="jump" type="number" min="0" step="1"></label>
  <button id="go">Jump</button>
</div>
<input id="seek" type="range" min="0" value="0" step="1">
<canvas id="curve"></canvas>
<div class="hint">Click the curve to jump. Keys: Space play/pause, &larr;/&rarr; one piece, Home/End.</div>
<script>
"use strict";
const D = __DATA__;
function bytes(s) { const b = atob(s), a = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) a[i] = b.charCodeAt(i); return a.buffer; }
const W = D.width, H = D.height, N = D.pieces, FULL = (1 << W) - 1;
const boards = new Uint16Array(bytes(D.boards)), locked = new Int16Array(bytes(D.locked));
const scores = new Int32Array(bytes(D.scores)), sequence = new Int8Array(bytes(D.sequence));
// clears by kind up to piece n: prefix sums of the lock's full rows
const cleared = new Int8Array(bytes(D.cleared)), kinds = [1, 2, 3, 4].map(() => new Int32Array(N + 1));
for (let n = 1; n <= N; n++) for (let k = 0; k < 4; k++) kinds[k][n] = kinds[k][n - 1] + (cleared[n] === k + 1 ? 1 : 0);
const fmt = v => v.toLocaleString("en-US");
const $ = id => document.getElementById(id);
$("title").innerHTML = "";
$("title").append(D.name);
const small = document.createElement("small");
small.textContent = `${fmt(D.score)} points, ${fmt(N)} pieces, ${D.end} (${D.rules} rules)` +
  (D.claimed !== null && D.claimed !== D.score ? ` - the summary states ${fmt(D.claimed)}!` : "");
$("title").append(small);
$("total").textContent = fmt(N);
$("seek").max = N; $("jump").max = N;

const CELL = Math.max(12, Math.min(26, Math.floor(560 / H)));
const board = $("board"), bctx = board.getContext("2d");
board.width = W * CELL; board.height = H * CELL;
const next = $("next"), nctx = next.getContext("2d");
next.width = 5 * 16; next.height = 5 * 16;

function pieceCells(n) {  // cells (x, y) of piece n on the board after its clear
  const s = locked[n * 5];
  if (n === 0 || s < 0) return [];
  const st = locked[n * 5 + 1], x = locked[n * 5 + 2], y = locked[n * 5 + 3];
  const before = boards.slice((n - 1) * H, n * H), cells = D.cells[s][st].map(([dx, dy]) => [x + dx, y + dy]);
  for (const [cx, cy] of cells) if (cy >= 0 && cy < H) before[cy] |= 1 << cx;
  const full = []; for (let r = 0; r < H; r++) if (before[r] === FULL) full.push(r);
  return cells.filter(([cx, cy]) => cy >= 0 && cy < H && !full.includes(cy))
              .map(([cx, cy]) => [cx, cy + full.filter(r => r > cy).length]);
}
function cell(ctx, x, y, size, colour) {
  ctx.fillStyle = colour; ctx.fillRect(x * size + 1, y * size + 1, size - 2, size - 2);
  ctx.fillStyle = "rgba(255,255,255,0.18)"; ctx.fillRect(x * size + 1, y * size + 1, size - 2, 3);
}
function drawBoard(n) {
  bctx.fillStyle = "#16181d"; bctx.fillRect(0, 0, board.width, board.height);
  bctx.strokeStyle = "#22262d"; bctx.lineWidth = 1;
  for (let x = 1; x < W; x++) { bctx.beginPath(); bctx.moveTo(x * CELL + .5, 0); bctx.lineTo(x * CELL + .5, H * CELL); bctx.stroke(); }
  for (let y = 1; y < H; y++) { bctx.beginPath(); bctx.moveTo(0, y * CELL + .5); bctx.lineTo(W * CELL, y * CELL + .5); bctx.stroke(); }
  for (let y = 0; y < H; y++) { const row = boards[n * H + y];
    for (let x = 0; x < W; x++) if ((row >> x) & 1) cell(bctx, x, y, CELL, "#6f7580"); }
  const s = locked[n * 5];
  for (const [x, y] of pieceCells(n)) cell(bctx, x, y, CELL, D.colours[s]);
}
function drawNext(n) {
  nctx.clearRect(0, 0, next.width, next.height);
  if (n >= sequence.length) return;
  const s = sequence[n], st = D.cycle ? n % 4 : 0, cs = D.cells[s][st];
  const xs = cs.map(c => c[0]), ys = cs.map(c => c[1]);
  const ox = (5 - (Math.max(...xs) - Math.min(...xs) + 1)) / 2 - Math.min(...xs);
  const oy = (5 - (Math.max(...ys) - Math.min(...ys) + 1)) / 2 - Math.min(...ys);
  for (const [dx, dy] of cs) cell(nctx, dx + ox, dy + oy, 16, D.colours[s]);
}
function drawClears(n) {
  let rows = "", total = 0, events = 0;
  for (let k = 0; k < 4; k++) { const c = kinds[k][n]; total += c * (k + 1); events += c;
    rows += `<tr><td>${k + 1}</td><td id="clears-${k + 1}">${fmt(c)}</td><td>${fmt(c * (k + 1))}</td></tr>`; }
  rows += `<tr><td>all</td><td>${fmt(events)}</td><td id="lines">${fmt(total)}</td></tr>`;
  $("clears").innerHTML = rows;
}

// the score curve: drawn once off screen, the marker on top
const curve = $("curve"), cctx = curve.getContext("2d");
const PAD = { l: 74, r: 16, t: 12, b: 32 };
function niceStep(max, n) {  // 1, 2 or 5 times a power of ten, about max / n
  const raw = Math.max(1, max) / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
const curveBg = document.createElement("canvas");
function layoutCurve() {
  curve.width = Math.max(480, Math.min(1000, document.body.clientWidth - 44));
  curve.height = 190; curveBg.width = curve.width; curveBg.height = curve.height;
  const c = curveBg.getContext("2d"), w = curve.width - PAD.l - PAD.r, h = curve.height - PAD.t - PAD.b;
  const top = Math.max(1, scores[N]);
  c.fillStyle = "#181b21"; c.fillRect(0, 0, curve.width, curve.height);
  c.strokeStyle = "#2b2f37"; c.fillStyle = "#8b919b"; c.font = "11px system-ui, sans-serif";
  c.textAlign = "right"; c.textBaseline = "middle";
  const ys = niceStep(top, 4), xs = niceStep(N, 6);
  for (let v = 0; v <= top; v += ys) { const y = PAD.t + h - h * v / top;
    c.beginPath(); c.moveTo(PAD.l, y + .5); c.lineTo(PAD.l + w, y + .5); c.stroke();
    c.fillText(fmt(v), PAD.l - 6, y); }
  c.textAlign = "center"; c.textBaseline = "top";
  for (let v = 0; v <= N; v += xs) c.fillText(fmt(v), PAD.l + w * v / Math.max(1, N), PAD.t + h + 5);
  c.fillText("piece", PAD.l + w / 2, PAD.t + h + 18);
  c.save(); c.translate(14, PAD.t + h / 2); c.rotate(-Math.PI / 2); c.fillText("score", 0, -6); c.restore();
  c.strokeStyle = "#4ea1ff"; c.lineWidth = 1.5; c.beginPath();
  const step = Math.max(1, Math.floor(N / (w * 2)));
  for (let n = 0; n <= N; n += step) { const x = PAD.l + w * n / Math.max(1, N), y = PAD.t + h - h * scores[n] / top;
    n === 0 ? c.moveTo(x, y) : c.lineTo(x, y); }
  c.lineTo(PAD.l + w, PAD.t + h - h * scores[N] / top); c.stroke();
}
function drawCurve(n) {
  cctx.drawImage(curveBg, 0, 0);
  const w = curve.width - PAD.l - PAD.r, h = curve.height - PAD.t - PAD.b, top = Math.max(1, scores[N]);
  const x = PAD.l + w * n / Math.max(1, N), y = PAD.t + h - h * scores[n] / top;
  cctx.strokeStyle = "#ffb347"; cctx.lineWidth = 1; cctx.beginPath();
  cctx.moveTo(x + .5, PAD.t); cctx.lineTo(x + .5, PAD.t + h); cctx.stroke();
  cctx.fillStyle = "#ffb347"; cctx.beginPath(); cctx.arc(x, y, 4, 0, 2 * Math.PI); cctx.fill();
}
curve.addEventListener("click", e => {
  const r = curve.getBoundingClientRect(), w = curve.width - PAD.l - PAD.r;
  show(Math.round((e.clientX - r.left - PAD.l) / w * N));
});

let current = 0, playing = false, last = 0, carry = 0;
function show(n) {
  current = Math.max(0, Math.min(N, n | 0));
  drawBoard(current); drawNext(current); drawClears(current); drawCurve(current);
  $("score").textContent = fmt(scores[current]);
  const gain = current > 0 ? scores[current] - scores[current - 1] : 0;
  $("gain").textContent = gain > 0 ? `+${fmt(gain)} (${cleared[current]} rows)` : "\u00a0";
  $("piece").textContent = fmt(current);
  $("seek").value = current;
  document.body.dataset.piece = current;
  if (current >= N) pause();
}
function frame(t) {
  if (!playing) return;
  carry += (t - last) / 1000 * Number($("speed").value); last = t;
  if (carry >= 1) { const k = Math.floor(carry); carry -= k; show(current + k); }
  if (playing) requestAnimationFrame(frame);
}
function play() { if (current >= N) show(0); playing = true; carry = 1; last = performance.now();
  $("play").textContent = "Pause"; requestAnimationFrame(frame); }
function pause() { playing = false; $("play").textContent = "Play"; }
$("play").onclick = () => playing ? pause() : play();
$("back").onclick = () => { pause(); show(current - 1); };
$("forward").onclick = () => { pause(); show(current + 1); };
$("first").onclick = () => { pause(); show(0); };
$("last").onclick = () => { pause(); show(N); };
$("go").onclick = () => { pause(); show(Number($("jump").value)); };
$("jump").addEventListener("keydown", e => { if (e.key === "Enter") $("go").click(); });
$("seek").addEventListener("input", () => show(Number($("seek").value)));
document.addEventListener("keydown", e => {
  if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
  if (e.key === " ") { e.preventDefault(); $("play").click(); }
  else if (e.key === "ArrowLeft") $("back").click();
  else if (e.key === "ArrowRight") $("forward").click();
  else if (e.key === "Home") $("first").click();
  else if (e.key === "End") $("last").click();
});
window.addEventListener("resize", () => { layoutCurve(); drawCurve(current); });
layoutCurve(); show(/^#\d+$/.test(location.hash) ? Number(location.hash.slice(1)) : 0);
</script>
</body>
</html>
"""


if __name__ == "__main__":
    sys.exit(main())
