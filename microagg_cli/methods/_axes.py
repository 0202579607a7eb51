"""Sorting axes shared by the sorted, projected and k-Ward methods.

An *order* string names a one-dimensional axis of a z-scored block:

- ``"sz"``: the sum of z-scores of each record;
- ``"fpc"``: the first principal component of the z-scored block, its sign fixed so
  that the loading of largest magnitude is positive (first such loading on ties);
- ``"pv:J"``: the values of column J (an integer position in the block). The API
  resolves the user's ``pv:COLUMN_NAME`` to ``pv:J`` before calling a method.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["projection_axis", "first_principal_component", "sort_order"]


def first_principal_component(Z: np.ndarray) -> np.ndarray:
    """Unit loading vector of the first principal component of ``Z`` (centred inside).

    Sign convention: the largest-magnitude loading is positive (first on ties), so
    the axis does not depend on the platform's eigen-solver.
    """
    Z = np.asarray(Z, dtype=np.float64)
    C = np.cov(Z, rowvar=False, bias=True) if Z.shape[1] > 1 else np.array([[1.0]])
    C = np.atleast_2d(C)
    w, V = np.linalg.eigh(C)
    v = V[:, int(np.argmax(w))]
    j = int(np.argmax(np.abs(v)))
    return v if v[j] > 0 else -v


def projection_axis(Z: np.ndarray, order: str) -> np.ndarray:
    """Values of every record on the axis named by ``order`` (see module doc)."""
    Z = np.asarray(Z, dtype=np.float64)
    if order == "sz":
        return Z.sum(axis=1)
    if order == "fpc":
        Zc = Z - Z.mean(axis=0)
        return Zc @ first_principal_component(Z)
    if order.startswith("pv:"):
        try:
            j = int(order[3:])
        except ValueError:
            raise InvalidParameterError(
                f"order {order!r}: pv: needs a column of the block"
            ) from None
        if not 0 <= j < Z.shape[1]:
            raise InvalidParameterError(f"order {order!r}: column {j} is not in the block")
        return Z[:, j].copy()
    raise InvalidParameterError(f"unknown order {order!r} (use sz, fpc or pv:COLUMN)")


def sort_order(values: np.ndarray, *, descending: bool = False) -> np.ndarray:
    """Stable sort permutation of ``values`` (ties by input order, both directions)."""
    values = np.asarray(values, dtype=np.float64)
    return np.argsort(-values if descending else values, kind="stable")
