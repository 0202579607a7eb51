"""The seeded estimators of PLD and DLD above their exact limits.

Which originals are sampled (:func:`sample_plan`) and the half-width of the sampled share's confidence
interval (:func:`sample_bound`, the empirical Bernstein bound of Maurer, A. & Pontil, M.
(2009), Empirical Bernstein bounds and sample variance penalization, COLT 2009; without
replacement it only tightens: Bardenet, R. & Maillard, O.-A. (2015), Concentration
inequalities for sampling without replacement, Bernoulli 21(3)).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidParameterError

__all__ = ["PLD_CONFIDENCE", "sample_bound", "sample_plan"]

#: Confidence of the sampled PLD's (and DLD's) error bound.
PLD_CONFIDENCE = 0.95


def sample_bound(total: float, squares: float, m: int, confidence: float = PLD_CONFIDENCE) -> float:
    """Half-width (percentage points) of a sampled linkage share's confidence interval.

    The empirical Bernstein bound of Maurer & Pontil (2009, Theorem 4) for the mean of
    m credits in [0, 1] with sample variance V, two-sided at ``confidence``:
    100 * (sqrt(2 V ln(4/delta) / m) + 7 ln(4/delta) / (3 (m - 1))), delta = 1 -
    confidence. Sampling without replacement only tightens it (Bardenet & Maillard
    2015). ``total`` and ``squares`` are the sums of the credits and of their squares.

    >>> round(sample_bound(0.0, 0.0, 10_000), 4)
    0.1023
    """
    if m < 2:
        return 100.0
    delta = 1.0 - confidence
    var = max(0.0, (squares - total * total / m) / (m - 1))
    log = math.log(4.0 / delta)
    return 100.0 * min(1.0, math.sqrt(2.0 * var * log / m) + 7.0 * log / (3.0 * (m - 1)))


def sample_plan(what: str, n: int, exact_max: int, sample: int, seed: int) -> tuple[str, np.ndarray | None]:
    """``("exact", None)`` up to ``exact_max`` records, else ``("sampled", rows)``: the
    sorted originals of a seeded sample of ``sample`` drawn without replacement (the
    estimators of PLD and DLD, ``what``)."""
    if exact_max < 0 or sample < 2:
        raise InvalidParameterError(f"{what}_exact_max must be >= 0 and {what}_sample >= 2")
    if n <= exact_max:
        return "exact", None
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    return "sampled", np.sort(rng.choice(n, size=min(n, sample), replace=False))
