"""The 95% confidence interval of a series' mean (played games' scores, or estimates' rates of game
ends), which a series' summary reports beside its method (`CI_METHOD`); and the mean of a series
whose games were capped, by a survival model (`survival_mean`)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

#: how `mean_ci95` computes the interval (written beside it in every series' summary)
CI_METHOD = "Student t: mean +- t(0.975, n - 1) x s / sqrt(n), s the sample standard deviation (n - 1)"
#: t(0.975, df) for df = 1 .. 30; beyond, `t975`'s Cornish-Fisher expansion (error under 1e-4)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (3 decimals up to 30; then
    the Cornish-Fisher expansion around the normal quantile 1.959964)."""
    if df < 1:
        raise ValueError("t975: df must be at least 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def mean_ci95(scores) -> tuple[float, float] | None:
    """The 95% confidence interval of the mean of ``scores`` (one value per game): the Student t
    interval (`CI_METHOD`), None for fewer than 2 values. Scores per game are far from normal (rows
    per game under the standard rules are roughly exponential), but their mean over n games is
    close to normal for n of 10 or more; for fewer games the interval is a rough one."""
    v = np.asarray(scores, np.float64)
    n = len(v)
    if n < 2:
        return None
    half = t975(n - 1) * float(np.std(v, ddof=1)) / math.sqrt(n)
    m = float(np.mean(v))
    return m - half, m + half


#: how `survival_mean` computes its estimate and interval (written beside them in a summary)
SURVIVAL_METHOD = ("censored exponential: mean pieces a game = all pieces played / games that ended, times the "
                   "score per piece; 95% interval 2T / chi2(0.975, 2d + 2) .. 2T / chi2(0.025, 2d) (T pieces, "
                   "d games ended)")


def chi2_sf(x: float, k: int) -> float:
    """P(X > ``x``) for X chi-square with ``k`` degrees of freedom (a positive integer), in closed
    form: for even k the Poisson sum ``exp(-x/2) sum_{i < k/2} (x/2)^i / i!``; for odd k
    ``erfc(sqrt(x/2)) + exp(-x/2) sqrt(2x/pi) sum_{i=1}^{(k-1)/2} x^(i-1) / (1 x 3 x ... x (2i - 1))``.
    Its terms are summed as they are: tested to 1e-9 against scipy up to k = 200, the range
    `chi2_quantile` uses it in (beyond, that solves the Wilson-Hilferty cube instead)."""
    if k <= 0:
        raise ValueError("chi2_sf: k must be a positive integer")
    if x <= 0.0:
        return 1.0
    if k % 2 == 0:
        term = total = math.exp(-x / 2.0)
        for i in range(1, k // 2):
            term *= (x / 2.0) / i
            total += term
        return min(total, 1.0)
    total = math.erfc(math.sqrt(x / 2.0))
    term = math.exp(-x / 2.0) * math.sqrt(2.0 * x / math.pi)
    for i in range(1, (k + 1) // 2):
        total += term
        term *= x / (2 * i + 1)
    return min(total, 1.0)


def chi2_quantile(p: float, k: int) -> float:
    """The ``p`` quantile of the chi-square distribution with ``k`` degrees of freedom (a positive
    integer): exact up to k = 200 (`chi2_sf` solved by bisection), beyond by the Wilson-Hilferty
    cube (relative error under 1e-4 there)."""
    if k <= 0:
        raise ValueError("chi2_quantile: k must be a positive integer")
    if not 0.0 < p < 1.0:
        raise ValueError("chi2_quantile: p must be in (0, 1)")
    if k > 200:
        z = NormalDist().inv_cdf(p)
        c = 2.0 / (9.0 * k)
        return k * (1.0 - c + z * math.sqrt(c)) ** 3
    lo, hi = 0.0, k + 40.0 * math.sqrt(k) + 100.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if 1.0 - chi2_sf(mid, k) < p else (lo, mid)
    return (lo + hi) / 2.0


def survival_mean(scores, pieces, ended) -> tuple[float, tuple[float, float]]:
    """The mean score a game of a series whose games may have been stopped at a cap (``ended[i]``
    False: game i was capped after ``pieces[i]`` pieces), under the model that a game's length in
    pieces is exponential (a good player's is: once its stack has settled, it tops out at a steady
    rate) and its score grows by a steady amount a piece: the length's maximum-likelihood mean with
    the capped games censored, all pieces played over the games that ended, times the series' score
    per piece; and its 95% interval, chi-square on the games that ended (`SURVIVAL_METHOD`: exact
    when the number of games that end is fixed in advance, approximate under a cap, where 300
    synthetic series of 400 games, half capped, gave a coverage of 0.94). With no game capped the mean is the
    plain mean of the scores. With none ended it is inf (the interval's lower end is still a bound)."""
    scores = np.asarray(scores, np.float64)
    pieces = np.asarray(pieces, np.float64)
    ended = np.asarray(ended, bool)
    if len(scores) == 0:
        raise ValueError("survival_mean: no games")
    total = float(pieces.sum())
    per_piece = float(scores.sum()) / total if total else 0.0
    d = int(ended.sum())
    low = 2.0 * total / chi2_quantile(0.975, 2 * d + 2) * per_piece
    if d == 0:
        return math.inf, (low, math.inf)
    high = 2.0 * total / chi2_quantile(0.025, 2 * d) * per_piece
    return total / d * per_piece, (low, high)


def survival_summary(scores, pieces, ended) -> dict:
    """`survival_mean` as a series' summary writes it: mean and interval rounded, None for an
    unbounded end (JSON has no infinity), and the method."""
    mean, (low, high) = survival_mean(scores, pieces, ended)
    rounded = lambda v: None if math.isinf(v) else round(v, 1)  # noqa: E731
    return {"mean": rounded(mean), "ci95": [rounded(low), rounded(high)], "method": SURVIVAL_METHOD}
