"""Does the splitting estimate rank players as their played games do? (run by hand; prints,
asserts nothing)

    python benchmarks/splitting_rank.py [--dir results/standard] [--height 20] [--min-games 40] [--json FILE]
    python benchmarks/splitting_rank.py --proxy-height 14 [--min-games 10]

Pairs every splitting estimate in DIR (``splitting-*.json``, written by ``bench_splitting.py
--json``, pooled with those of ``DIR/splitting-variants/`` made with the same settings by
`solver.online.splitting.combine`) with the played series of the same player on the same game
(``bench_standard.py games --json``), and prints each player's estimate, played mean and their
ratio, then, board by board, the Spearman and Kendall rank correlations between estimate and
played mean. With ``--proxy-height H`` the proxy is instead the player's played mean on the
smaller board 10 x H. In full: docs/benchmark-standard.md, "Does the estimate rank players as
played games do?".
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: the folder under DIR of further estimates, pooled with a player's main file where their settings match
VARIANTS = "splitting-variants"
sys.path.insert(0, str(ROOT))

from benchmarks.standard.players import UserError  # noqa: E402
from benchmarks.standard.series import load_series  # noqa: E402
from engine.files import MAX_JSON_BYTES, ReadError, read_json, write_json  # noqa: E402
from solver.online.intervals import chi2_sf, mean_ci95  # noqa: E402
from solver.online.splitting import combine  # noqa: E402
from experiments import description  # noqa: E402


def read_estimates(path: Path) -> dict:
    """A ``bench_splitting.py --json`` file, checked for what the table reads."""
    try:
        data = read_json(path, MAX_JSON_BYTES, "a splitting estimate")
        for e in data["estimates"]:
            float(e["pieces_per_game"]), float(e["rows0"]), float(e["pieces0"])
        game_of(data), dict(data["settings"])
    except (ReadError, KeyError, TypeError, ValueError) as e:
        raise UserError(f"{path}: not a bench_splitting.py --json file ({e})") from None
    return data


def game_of(data: dict) -> tuple[str, int, bool]:
    """(evaluator, board height, clear first) of a series or an estimate: ``standard_10x10`` and
    ``standard`` on 10 rows are one game."""
    rules = str(data["rules"])
    return str(data["evaluator"]), int(data["height"]), rules.startswith("standard_clear_first")


def player_name(evaluator: str) -> str:
    """A preset's name, or a player file's stem; a tuning run's export (``best.yaml``,
    ``recommendation.yaml`` in its folder) named with its run: ``cmaes_standard_dt-seed3-run/best``."""
    if not evaluator.endswith((".yaml", ".yml")):
        return evaluator
    path = Path(evaluator)
    return f"{path.parent.name}/{path.stem}" if path.stem in ("best", "recommendation") else path.stem


def proxies(series: dict, height: int | None, proxy_height: int, min_games: int, left_out: list) -> dict:
    """Each series' proxy (``table``'s estimate): the same player's played mean on 10 x
    ``proxy_height``, from a series of at least ``min_games`` games; the players without one are
    added to ``left_out``."""
    proxy = {}
    for (evaluator, h, clear_first), (name, games) in series.items():
        if h != proxy_height:
            continue
        if len(games) < min_games:
            left_out.append(f"{player_name(evaluator)} on 10 x {h}: {len(games)} played games (fewer than {min_games})")
            continue
        rows = [g["rows"] for g in games]
        proxy[evaluator, clear_first] = (name, sum(rows) / len(rows), list(mean_ci95(rows) or (math.nan, math.nan)),
                                         log_se(rows))
    found = {}
    for evaluator, h, clear_first in series:
        if h == proxy_height:
            continue
        if (evaluator, clear_first) in proxy:
            found[evaluator, h, clear_first] = proxy[evaluator, clear_first]
        elif (evaluator, proxy_height, clear_first) not in series and (height is None or h == height):
            left_out.append(f"{player_name(evaluator)} on 10 x {h}: no played series on 10 x {proxy_height}")
    return found


def table(folder: Path, height: int | None, min_games: int, proxy_height: int | None = None,
          min_proxy_games: int = 40) -> tuple[pd.DataFrame, list[str]]:
    """(one row per player with both an estimate and a long enough played series, the players left
    out with the reason). With ``proxy_height`` the estimate is the played mean on 10 x that."""
    estimates, series, left_out = {}, {}, []
    variants = [read_estimates(p) for p in sorted((folder / VARIANTS).glob("*.json"))]
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("splitting-"):
            data = read_estimates(path)
            # pooled with the variants' estimates of the same player, game and settings
            found = data["estimates"] + [e for v in variants if game_of(v) == game_of(data)
                                         and v["settings"] == data["settings"] for e in v["estimates"]]
            mean, ci = combine([SimpleNamespace(**e) for e in found])
            estimates[game_of(data)] = (f"{path.name} ({len(found)} estimates)", mean, list(ci or (math.nan, math.nan)),
                                        log_se([1.0 / float(e["pieces_per_game"]) for e in found]))
        else:
            data = load_series(path)
            key = game_of(data)
            if key not in series or len(data["games"]) > len(series[key][1]):
                series[key] = (path.name, data["games"])
    if proxy_height is not None:
        estimates = proxies(series, height, proxy_height, min_proxy_games, left_out)
    rows = []
    for key, (name, mean, ci, se) in estimates.items():
        evaluator, h, clear_first = key
        if height is not None and h != height:
            continue
        label = player_name(evaluator) + (" (clear first)" if clear_first else "")
        if key not in series:
            left_out.append(f"{label} on 10 x {h}: no played series")
            continue
        games = series[key][1]
        if len(games) < min_games:
            left_out.append(f"{label} on 10 x {h}: {len(games)} played games (fewer than {min_games})")
            continue
        rows_played = [g["rows"] for g in games]
        played = sum(rows_played) / len(rows_played)
        low, high = mean_ci95(rows_played) or (float("nan"), float("nan"))
        ratio_se = math.hypot(se, log_se(rows_played))
        rows.append({"player": label, "height": h, "estimate": mean, "estimate_ci95": list(ci), "played": played,
                     "played_ci95": [low, high], "games": len(games), "ratio": mean / played,
                     "log_ratio_se": ratio_se, "z": math.log(mean / played) / ratio_se,
                     "estimate_file": name, "series_file": series[key][0]})
    return pd.DataFrame(rows), left_out


def log_se(values) -> float:
    """The standard error of the log of the mean of ``values`` (the delta method: their coefficient
    of variation over the square root of their number); nan for fewer than 2."""
    v = np.asarray(values, np.float64)
    if len(v) < 2 or not v.mean() > 0:
        return math.nan
    return float(v.std(ddof=1) / v.mean() / math.sqrt(len(v)))


def agreement(board: pd.DataFrame) -> dict:
    """Do the estimates agree with the played means on one board, beyond their errors? Each player's
    log ratio (estimate / played) has the standard error ``log_ratio_se`` (both means' by the delta
    method, the estimate's from its rates of game ends). Returns: ``chi2`` (the sum of the squared
    z-scores: every ratio is 1) with its p-value on as many degrees of freedom as players; the
    common ratio (their inverse-variance weighted geometric mean) with its 95% interval; and
    Cochran's ``q`` with its p-value on one degree fewer (the ratios are one ratio: an error that
    depends on the player is what a small p-value here says). Players without a standard error
    (a single estimate or game) are left out; None for fewer than 2 left."""
    board = board[np.isfinite(board["log_ratio_se"]) & (board["log_ratio_se"] > 0)]
    if len(board) < 2:
        return None
    z, se, log_r = board["z"].to_numpy(), board["log_ratio_se"].to_numpy(), np.log(board["ratio"].to_numpy())
    w = 1.0 / se ** 2
    common = float((w * log_r).sum() / w.sum())
    half = 1.959963984540054 / math.sqrt(w.sum())
    chi2, q, k = float((z ** 2).sum()), float((w * (log_r - common) ** 2).sum()), len(board)
    return {"players_with_errors": k, "chi2": chi2, "chi2_p": chi2_sf(chi2, k), "common_ratio": math.exp(common),
            "common_ratio_ci95": [math.exp(common - half), math.exp(common + half)],
            "q": q, "q_p": chi2_sf(q, k - 1)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--dir", type=Path, default=ROOT / "results" / "standard")
    parser.add_argument("--height", type=int, default=20, help="board height (0: every board)")
    parser.add_argument("--min-games", type=int, default=40)
    parser.add_argument("--proxy-height", type=int, metavar="H",
                        help="the proxy is the played mean on 10 x H instead of the splitting estimate")
    parser.add_argument("--min-proxy-games", type=int, default=40, help="with --proxy-height (default: 40)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    try:
        df, left_out = table(args.dir, args.height or None, args.min_games, args.proxy_height, args.min_proxy_games)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if df.empty:
        print("no player has both an estimate and a long enough played series")
    else:
        what = f"10 x {args.proxy_height} played" if args.proxy_height else "estimate"
        for r in df.sort_values("played", ascending=False).itertuples():
            print(f"{r.player:28s} 10 x {r.height}: {what} {r.estimate:>13,.0f}   played {r.played:>13,.0f} "
                  f"({r.played_ci95[0]:,.0f} - {r.played_ci95[1]:,.0f}, {r.games} games)   "
                  + (f"growth x{1 / r.ratio:,.0f}" if args.proxy_height else f"ratio {r.ratio:.2f} (z {r.z:+.2f})"))
    correlations = {}
    for h, board in (df.groupby("height") if not df.empty else []):
        if len(board) >= 2:
            correlations[f"10x{h}"] = c = {
                "players": len(board), "spearman": float(board["estimate"].corr(board["played"], method="spearman")),
                "kendall": float(board["estimate"].corr(board["played"], method="kendall"))}
            print(f"10 x {h}, {c['players']} players: Spearman {c['spearman']:.3f}, Kendall {c['kendall']:.3f}")
            if not args.proxy_height and (a := agreement(board)) is not None:
                c.update(a)
                print(f"  every ratio 1: chi-square {c['chi2']:.2f} on {c['players_with_errors']} df, p = {c['chi2_p']:.3f}; common ratio "
                      f"{c['common_ratio']:.3f} ({c['common_ratio_ci95'][0]:.3f} - {c['common_ratio_ci95'][1]:.3f}); "
                      f"one ratio for all: Cochran's Q {c['q']:.2f} on {c['players_with_errors'] - 1} df, p = {c['q_p']:.3f}")
    for line in left_out:
        print(f"left out: {line}")
    if args.json:
        write_json(args.json, {"command": "python benchmarks/splitting_rank.py " + " ".join(
            re.sub(r"^.*/(results/)", r"\1", a) for a in (argv if argv is not None else sys.argv[1:])),
            "players": df.to_dict(orient="records"), "correlations": correlations,
            "left_out": left_out, "min_games": args.min_games, "proxy_height": args.proxy_height})
    return 0


if __name__ == "__main__":
    sys.exit(main())
