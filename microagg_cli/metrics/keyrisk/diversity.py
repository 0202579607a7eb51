"""l-diversity of sensitive variables over the key classes (Machanavajjhala et al. 2007).

A class of records sharing every key value (exact classes: a missing key value is one
more category, as in sdcMicro's ``ldiversity``) is *distinct l-diverse* when its
sensitive variable takes at least l distinct values: an intruder who places a target
in the class learns the sensitive value with certainty when l = 1. The *entropy l*
is exp(-sum_v p_v log p_v) over the class's value shares (entropy l-diversity holds
for l when it is >= l). A missing sensitive value is no value: it adds to neither.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .frequencies import group_codes

__all__ = ["l_diversity"]


def l_diversity(keys: np.ndarray, sensitive: np.ndarray, *, l: int = 2) -> dict[str, Any]:  # noqa: E741
    """Distinct and entropy l of one sensitive variable over the key classes.

    Parameters
    ----------
    keys : (n, q) key codes (-1 missing).
    sensitive : (n,) integer codes of the sensitive variable (-1 missing).
    l : the threshold: records and classes with distinct l below it are counted.

    Returns
    -------
    dict with ``per_record`` ((n,) distinct l of each record's class), ``min_l``,
    ``classes``, ``classes_below``, ``records_below``, ``share_below``,
    ``entropy_min_l`` and ``distribution`` ({l: records} for l = 1, 2, ... up to 10,
    then ">10").

    Examples
    --------
    >>> r = l_diversity([[0], [0], [1], [1]], [5, 6, 7, 7], l=2)
    >>> r["per_record"].tolist(), r["records_below"], r["classes_below"]
    ([2, 2, 1, 1], 2, 1)
    """
    cls, m = group_codes(keys)
    s = np.asarray(sensitive, dtype=np.int64).reshape(-1)
    n = cls.shape[0]
    ok = s >= 0
    if ok.any():
        _, sv = np.unique(s[ok], return_inverse=True)
        sv = sv.reshape(-1).astype(np.int64)
        nv = int(sv.max()) + 1
        pair = cls[ok] * nv + sv
        pairs, counts = np.unique(pair, return_counts=True)
        pc = pairs // nv
        distinct = np.bincount(pc, minlength=m)
        size = np.bincount(pc, weights=counts, minlength=m)
        share = counts / size[pc]
        entropy = np.bincount(pc, weights=-share * np.log(share), minlength=m)
        entropy_l = np.exp(entropy)
        entropy_l[distinct == 0] = 0.0
    else:
        distinct = np.zeros(m, dtype=np.int64)
        entropy_l = np.zeros(m)
    per_record = distinct[cls].astype(np.int64)
    below = per_record < l
    dist: dict[str, int] = {}
    if n:
        vals, cnt = np.unique(np.minimum(per_record, 11), return_counts=True)
        dist = {(">10" if v == 11 else str(int(v))): int(c) for v, c in zip(vals, cnt)}
    return {
        "l": int(l),
        "per_record": per_record,
        "min_l": int(per_record.min()) if n else None,
        "classes": int(m),
        "classes_below": int((distinct < l).sum()),
        "records_below": int(below.sum()),
        "share_below": float(below.mean()) if n else 0.0,
        "entropy_min_l": float(entropy_l.min()) if m else None,
        "distribution": dist,
    }
