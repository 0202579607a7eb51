"""Selection for the compiled kernels: quickselect (Hoare's FIND) and the k nearest so far.

Hoare 1961, Algorithm 65, Communications of the ACM 4(7): the cone index of the fast MDAV
(:mod:`microagg_cli.methods._cones`) and DLD's k-d trees
(:mod:`microagg_cli.metrics._kd_kernels`) select their medians with it.
:func:`insert_nearest` keeps a sorted list of the k nearest candidates seen: the mixed
MDAV kernels and local search (:mod:`microagg_cli.methods._mixed_kernels`) and DLD's
search (:mod:`microagg_cli.metrics._risk_kernels`). It lives below both packages so
that neither imports the other.
"""

from __future__ import annotations

from ._jit import njit

__all__ = ["select", "insert_nearest"]


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


@njit(cache=True, nogil=True, _nrt=False, no_cpython_wrapper=True)
def insert_nearest(bd, bi, nb, cap, d, i):
    """Keep the ``cap`` nearest so far: ``bd[:nb]`` their distances (ascending), ``bi[:nb]``
    their records; (d, i) goes in when there is room or it is nearer than the last, after
    any equal distance (ties: the earlier candidate first). Returns the new ``nb``."""
    if nb < cap or d < bd[nb - 1]:
        pos = nb if nb < cap else cap - 1
        while pos > 0 and bd[pos - 1] > d:
            bd[pos] = bd[pos - 1]
            bi[pos] = bi[pos - 1]
            pos -= 1
        bd[pos] = d
        bi[pos] = i
        if nb < cap:
            nb += 1
    return nb
