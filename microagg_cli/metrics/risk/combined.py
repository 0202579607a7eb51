"""The combined figures of an evaluation: the disclosure risk DR and the score.

DR = 0.25 DLD + 0.25 PLD + 0.5 ID and the overall score = 0.5 IL_score + 0.5 DR (lower is better), weights
checked and the formula actually used stated (Domingo-Ferrer, J. & Torra, V. (2001), A
quantitative comparison of disclosure control methods for microdata, in
Confidentiality, Disclosure and Data Access, North-Holland, 111-134).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...errors import InvalidParameterError

__all__ = ["DEFAULT_DR_WEIGHTS", "DEFAULT_SCORE_WEIGHTS", "disclosure_risk", "overall_score"]

#: DR = 0.25 * DLD + 0.25 * PLD + 0.5 * ID.
DEFAULT_DR_WEIGHTS: dict[str, float] = {"dld": 0.25, "pld": 0.25, "id": 0.5}
#: score = 0.5 * IL_score + 0.5 * DR.
DEFAULT_SCORE_WEIGHTS: dict[str, float] = {"il": 0.5, "dr": 0.5}


def _check_weights(weights: Mapping[str, float] | None, default: Mapping[str, float],
                   what: str) -> dict[str, float]:
    w = dict(default)
    if weights:
        unknown = set(weights) - set(default)
        if unknown:
            raise InvalidParameterError(
                f"unknown {what} weight(s) {sorted(unknown)} (known: {', '.join(default)})"
            )
        for key, val in weights.items():
            val = float(val)
            if not np.isfinite(val) or val < 0:
                raise InvalidParameterError(f"{what} weight {key!r} must be a finite number >= 0")
            w[key] = val
    return w


def _formula(lhs: str, weights: Mapping[str, float], names: Mapping[str, str]) -> str:
    return f"{lhs} = " + " + ".join(f"{weights[key]:g} * {names[key]}" for key in weights)


def disclosure_risk(
    dld_value: float | None,
    pld_value: float | None,
    id_value: float | None,
    *,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """DR = w_dld * DLD + w_pld * PLD + w_id * ID (defaults 0.25, 0.25, 0.5).

    Returns ``{"value", "formula", "weights"}``; value None when a term with a
    non-zero weight is missing.

    >>> disclosure_risk(10.0, 20.0, 30.0)["value"]
    22.5
    >>> disclosure_risk(10.0, 20.0, 30.0)["formula"]
    'DR = 0.25 * DLD + 0.25 * PLD + 0.5 * ID'
    """
    w = _check_weights(weights, DEFAULT_DR_WEIGHTS, "DR")
    terms = {"dld": dld_value, "pld": pld_value, "id": id_value}
    missing = [key for key in w if w[key] != 0 and terms[key] is None]
    value = None if missing else float(sum(w[key] * (terms[key] or 0.0) for key in w))
    return {
        "value": value,
        "formula": _formula("DR", w, {"dld": "DLD", "pld": "PLD", "id": "ID"}),
        "weights": w,
    }


def overall_score(
    il_score_value: float | None,
    dr_value: float | None,
    *,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """score = w_il * IL_score + w_dr * DR (defaults 0.5, 0.5; lower is better).

    >>> overall_score(20.0, 30.0)
    {'value': 25.0, 'formula': 'score = 0.5 * IL_score + 0.5 * DR', 'weights': {'il': 0.5, 'dr': 0.5}}
    """
    w = _check_weights(weights, DEFAULT_SCORE_WEIGHTS, "score")
    terms = {"il": il_score_value, "dr": dr_value}
    missing = [key for key in w if w[key] != 0 and terms[key] is None]
    value = None if missing else float(sum(w[key] * (terms[key] or 0.0) for key in w))
    return {
        "value": value,
        "formula": _formula("score", w, {"il": "IL_score", "dr": "DR"}),
        "weights": w,
    }
