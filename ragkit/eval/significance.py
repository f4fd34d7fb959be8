"""Is run B better than run A on these queries, or is the difference noise? Paired tests
over per-query metrics, as IR papers report them (Smucker, Allan and Carterette, "A
comparison of statistical significance tests for information retrieval evaluation",
CIKM 2007):

- **Fisher's randomization test** (paired, two-sided): if A and B were the same system,
  each query's difference would be as likely to have either sign. The p-value is the
  share of random sign flips whose mean difference is at least as large (in absolute
  value) as the one observed: every one of the 2ⁿ flips when there are at most
  ``permutations`` of them (n ≤ 13 at the default), otherwise ``permutations`` random ones
  drawn with a fixed ``seed``, counted as (hits + 1) / (permutations + 1). This is the
  test the significance column uses.
- **Student's paired t-test** (``scipy.stats.ttest_rel``), which assumes the differences
  are normal; reported beside it.

Implemented with numpy rather than taken from ranx: ranx's wheel brings numba, llvmlite,
ir_datasets, fastparquet and seaborn, and compiles its functions on first use; the test
is a matrix of ±1 times the vector of differences.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

LEVEL = 0.05            # a difference is significant when p < LEVEL
PERMUTATIONS = 10_000
_CHUNK = 2_000          # random sign flips drawn at a time (memory: chunk × queries floats)
_TIE = 1e-12            # a flipped mean this close to the observed one counts as reaching it


def randomization_test(a: Sequence[float], b: Sequence[float], permutations: int = PERMUTATIONS,
                       seed: int = 0) -> float:
    """Two-sided p-value of Fisher's paired randomization (sign-flip) test of mean(b − a).

    >>> randomization_test([0.1, 0.5, 0.3], [0.1, 0.5, 0.3])
    1.0
    >>> randomization_test([0, 0, 0, 0, 0], [1, 1, 1, 1, 1])     # exact: 2 of the 32 flips reach 1
    0.0625
    """
    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(diff)
    if n == 0 or not diff.any():
        return 1.0
    observed = abs(diff.mean()) - _TIE
    if is_exact(n, permutations):
        signs = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
        return float(np.count_nonzero(np.abs(signs @ diff) / n >= observed) / 2 ** n)
    rng = np.random.default_rng(seed)
    reached = 0
    for start in range(0, permutations, _CHUNK):
        signs = rng.integers(0, 2, size=(min(_CHUNK, permutations - start), n)) * 2 - 1
        reached += int(np.count_nonzero(np.abs(signs @ diff) / n >= observed))
    return (reached + 1) / (permutations + 1)


def is_exact(queries: int, permutations: int = PERMUTATIONS) -> bool:
    """Whether ``randomization_test`` tries every one of the 2ⁿ sign flips of ``queries``
    differences (there are no more of them than ``permutations``) rather than a sample."""
    return queries < 63 and 2 ** queries <= permutations


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Student's paired t-test of b against a; None for fewer than two
    queries. Equal differences (no variance) give 1 when they are all zero, 0 otherwise.

    >>> paired_t_test([0.1, 0.5, 0.3], [0.1, 0.5, 0.3])
    1.0
    """
    from scipy.stats import ttest_rel

    diff = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(diff) < 2:
        return None
    if np.ptp(diff) == 0:
        return 1.0 if diff[0] == 0 else 0.0
    return float(ttest_rel(b, a).pvalue)


@dataclass(frozen=True)
class PairedComparison:
    """One metric of run B against run A over the same queries."""

    metric: str
    queries: int
    mean_a: float
    mean_b: float
    delta: float                 # mean_b − mean_a
    p_randomization: float
    p_ttest: float | None
    significant: bool            # p_randomization < LEVEL

    def to_dict(self) -> dict:
        return asdict(self)


def compare_metric(metric: str, a: Sequence[float], b: Sequence[float], permutations: int = PERMUTATIONS,
                   seed: int = 0) -> PairedComparison:
    """Run B against run A on one metric, from the two runs' values on the same queries (in
    the same order). Means are rounded to 5 places as ``evaluate_run`` rounds them, p-values
    to 4.

    >>> c = compare_metric("hit@1", [0, 0, 0, 0, 0], [1, 1, 1, 1, 1])
    >>> (c.delta, c.p_randomization, c.significant)
    (1.0, 0.0625, False)
    """
    if len(a) != len(b):
        raise ValueError(f"{metric}: {len(a)} values for run A, {len(b)} for run B; they must pair up")
    n = len(a)
    mean_a, mean_b = (sum(a) / n, sum(b) / n) if n else (0.0, 0.0)
    p = randomization_test(a, b, permutations, seed)
    t = paired_t_test(a, b)
    return PairedComparison(metric, n, round(mean_a, 5), round(mean_b, 5), round(mean_b - mean_a, 5),
                            round(p, 4), None if t is None else round(t, 4), p < LEVEL)
