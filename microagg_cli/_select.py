"""Quickselect for the compiled kernels (Hoare's FIND).

Hoare 1961, Algorithm 65, Communications of the ACM 4(7): the cone index of the fast MDAV
(:mod:`microagg_cli.methods._cones`) and DLD's k-d trees
(:mod:`microagg_cli.metrics._kd_kernels`) select their medians with it. It lives below
both packages so that neither imports the other.
"""

from __future__ import annotations

from ._jit import njit

__all__ = ["select"]


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def select(key, perm, s, e, kth):
    """Quickselect on ``key[s:e]`` (``perm`` moved alike): position ``kth`` ends with
    the kth smallest key, none larger before it, none smaller after."""
    lo = s
    hi = e - 1
    while hi > lo:
        a = key[lo]
        b = key[(lo + hi) // 2]
        c = key[hi]
        # the median of three, written out (min and max compile a routine each)
        ab_lo = a if a <= b else b
        ab_hi = a if a >= b else b
        m2 = ab_hi if ab_hi <= c else c
        pv = ab_lo if ab_lo >= m2 else m2
        i = lo
        j = hi
        while i <= j:
            while key[i] < pv:
                i += 1
            while key[j] > pv:
                j -= 1
            if i <= j:
                key[i], key[j] = key[j], key[i]
                perm[i], perm[j] = perm[j], perm[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            return
