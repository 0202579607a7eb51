"""Compiled kernels of :mod:`microagg_cli.metrics.keyrisk` (read that package first)."""

from __future__ import annotations

import math


from .._jit import njit


@njit(cache=True, nogil=True)
def negbin_exact_risk(f, p, out):  # pragma: no cover - compiled
    """E[1 / F | f] for F - f ~ NegBin(f, p), per entry: ``p * I_f`` with
    ``I_f = int_0^1 s^(f-1) / (p + (1-p) s) ds`` (the Benedetti-Franconi integral after
    the substitution s = p t / (1 - (1-p) t)).

    * p >= 1/2: the series ``I_f = sum_j q^j (f-1)! j! / (f+j)!`` (ratio <= q <= 1/2);
    * p < 1/2: the forward recurrence ``I_1 = log(1/p) / q``,
      ``I_{s+1} = (1/s - p I_s) / q``, whose rounding errors shrink by p/q < 1 a step.

    O(f) per entry; p >= 1 gives 1/f.
    """
    for i in range(f.size):
        fi = f[i]
        pi = p[i]
        if pi >= 1.0:
            out[i] = 1.0 / fi
            continue
        q = 1.0 - pi
        if pi >= 0.5:
            term = 1.0 / fi
            total = term
            j = 0
            while term > 1e-18 * total:
                term *= q * (j + 1) / (fi + j + 1)
                total += term
                j += 1
            out[i] = pi * total
        else:
            I = math.log(1.0 / pi) / q
            for s in range(1, fi):
                I = (1.0 / s - pi * I) / q
            out[i] = pi * I

