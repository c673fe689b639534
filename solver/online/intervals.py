"""The 95% confidence interval of a series' mean (played games' scores, or estimates' rates of game
ends), which a series' summary reports beside its method (`CI_METHOD`)."""

from __future__ import annotations

import math

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
