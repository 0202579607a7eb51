"""The disclosure risk of one table over its categorical keys (``sdc risk``).

Reads the key, weight, household and sensitive columns of a :class:`~microagg_cli.io.Table`,
checks them (one-line errors: exit code 2 for a bad option, 3 for bad data), codes the
keys and calls :func:`microagg_cli.metrics.keyrisk.key_risk`. The report holds counts,
shares, risks and row numbers; the key values of the riskiest records only with
``internal`` (never the values of a sensitive or any other column).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .errors import DataError, InvalidParameterError
from .io import Table, column_values, missing_mask
from .request import RiskRequest

__all__ = ["RISK_SCHEMA_VERSION", "key_codes", "table_key_risk", "risk_gates"]

#: ``schema_version`` of the ``sdc risk`` report (see microagg_cli/schemas/risk.json).
RISK_SCHEMA_VERSION = "1.0"


def _check_columns(table: Table, names: Sequence[str], option: str) -> None:
    have = set(table.columns)
    for c in names:
        if c not in have:
            raise DataError(f"{option}: no column {c!r} in {table.path.name if table.path else 'the input'} "
                            f"(columns: {', '.join(table.columns[:12])}{'...' if len(table.columns) > 12 else ''})")


def key_codes(table: Table, name: str, missing_codes: Sequence[str] = ()) -> tuple[np.ndarray, list[str]]:
    """The codes of column ``name`` (0.. in sorted order of the text; -1 for a missing cell
    or one of ``missing_codes``) and the categories' text."""
    miss = missing_mask(table, name)
    text = table.pandas_column(name).astype("string").fillna("").str.strip().to_numpy(dtype=object)
    if missing_codes:
        miss = miss | np.isin(text, list(missing_codes))
    codes = np.full(text.shape[0], -1, dtype=np.int64)
    cats, inv = np.unique(text[~miss].astype(str), return_inverse=True)
    codes[~miss] = inv.reshape(-1)
    return codes, [str(c) for c in cats]


def _weights(table: Table, name: str) -> np.ndarray:
    w, bad = column_values(table, name)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"--weights: column {name!r} is not numeric (row {row + 1}: {table.cell_text(name, row)!r})")
    if np.isnan(w).any():
        raise DataError(f"--weights: column {name!r} has {int(np.isnan(w).sum())} missing value(s) "
                        f"(first at row {int(np.flatnonzero(np.isnan(w))[0]) + 1}); every record needs its weight")
    if not np.isfinite(w).all() or (w <= 0).any():
        row = int(np.flatnonzero(~(np.isfinite(w) & (w > 0)))[0])
        raise DataError(f"--weights: column {name!r} must be > 0 in every record (row {row + 1}: {w[row]!r})")
    return w


def _households(table: Table, name: str, weights: np.ndarray | None) -> np.ndarray:
    miss = missing_mask(table, name)
    if miss.any():
        raise DataError(f"--household-id: column {name!r} has {int(miss.sum())} missing value(s) "
                        f"(first at row {int(np.flatnonzero(miss)[0]) + 1})")
    text = table.pandas_column(name).astype("string").fillna("").str.strip().to_numpy(dtype=object).astype(str)
    _, hh = np.unique(text, return_inverse=True)
    hh = hh.reshape(-1)
    if weights is not None:
        # a household is sampled as one unit: one sampling weight for all its members;
        # an id whose "households" mix weights groups records of different units
        lo = np.full(hh.max() + 1, np.inf)
        hi = np.full(hh.max() + 1, -np.inf)
        np.minimum.at(lo, hh, weights)
        np.maximum.at(hi, hh, weights)
        split = np.flatnonzero(hi > lo * (1 + 1e-12))
        if split.size:
            first = int(np.flatnonzero(hh == split[0])[0])
            raise DataError(f"--household-id: household {table.cell_text(name, first)!r} mixes sampling weights "
                            f"({lo[split[0]]:g} to {hi[split[0]]:g}; {split.size} such households): a household "
                            "id must name one sampled unit")
    return hh


def _sensitive_codes(table: Table, name: str) -> np.ndarray:
    return key_codes(table, name)[0]


def table_key_risk(table: Table, request: RiskRequest, *, rda: Any = None) -> dict[str, Any]:
    """The ``sdc risk`` report body of ``table`` (no tool/audit header: the caller adds it)."""
    from .metrics.keyrisk import KeyRiskOptions, key_risk

    r = request
    roles = rda.roles() if rda is not None else {}
    rda_missing = rda.missing_codes() if rda is not None else {}
    keys = list(r.keys) if r.keys else [c for c, role in roles.items() if role == "categorical"]
    if not keys:
        raise InvalidParameterError("no key variables: give --keys (or --metadata with <RECODABLE> variables)")
    weights_col = r.weights
    if weights_col is None and rda is not None:
        w = [c for c, role in roles.items() if role == "weight" and c not in keys]
        weights_col = w[0] if w else None
    _check_columns(table, keys, "--keys")
    for opt_name, col in (("--weights", weights_col), ("--household-id", r.household_id)):
        if col is not None:
            _check_columns(table, [col], opt_name)
    _check_columns(table, list(r.sensitive or []), "--sensitive")
    if weights_col is not None and weights_col in keys:
        raise InvalidParameterError(f"the weight column {weights_col!r} is also a key")
    coded = [key_codes(table, c, rda_missing.get(c, ())) for c in keys]
    codes = np.column_stack([c for c, _ in coded]) if coded else np.zeros((table.n_rows, 0), np.int64)
    w = _weights(table, weights_col) if weights_col is not None else None
    hh = _households(table, r.household_id, w) if r.household_id is not None else None
    sens = {c: _sensitive_codes(table, c) for c in (r.sensitive or [])}
    size = r.max_combination_size
    levels = {c: lv for c, lv in (rda.idlevels() if rda is not None else {}).items() if c in keys}
    if size is None and levels:  # mu-ARGUS identification levels: a key of level L joins combinations of up to L keys
        size = max(levels.values())
    options = KeyRiskOptions(k=r.k, l=r.l, risk_method=r.risk_method, max_combination_size=size,
                             suda=r.suda, suda_max_size=r.suda_max_size, dis_fraction=r.dis_fraction, top=r.top)
    out = key_risk(codes, keys, weights=w, household=hh, sensitive=sens, options=options)
    rec = out.pop("records")
    out["parameters"].update({"keys": keys, "weights": weights_col, "household_id": r.household_id,
                              "sensitive": list(r.sensitive or []), "top": r.top,
                              "metadata": getattr(rda, "name", None),
                              "combination_size_from": ("--max-combination-size" if r.max_combination_size is not None
                                                        else "the .rda <IDLEVEL>" if levels else "default")})
    out["per_key"] = [{"key": name, "categories": len(cats), "missing": int((codes[:, j] < 0).sum())}
                      for j, (name, (_c, cats)) in enumerate(zip(keys, coded))]
    out["top_records"] = _top_records(rec, codes, [cats for _c, cats in coded], keys, r.top, r.internal)
    out["gates"] = risk_gates(out, r)
    return out


def _top_records(rec: dict[str, Any], codes: np.ndarray, cats: list[list[str]], keys: list[str],
                 top: int, internal: bool) -> list[dict[str, Any]]:
    """The ``top`` riskiest records: by risk, then SUDA score, then row (deterministic)."""
    risk = rec["risk"]
    suda = rec["suda_score"] if rec["suda_score"] is not None else np.zeros_like(risk)
    order = np.lexsort((np.arange(risk.size), -suda, -risk))[:top]
    rows = []
    for i in order.tolist():
        row: dict[str, Any] = {"row": i + 1, "fk": int(rec["fk"][i]), "Fk": float(rec["Fk"][i]),
                               "risk": float(risk[i])}
        for name in ("household_risk", "suda_score", "dis_score"):
            row[name] = float(rec[name][i]) if rec[name] is not None else None
        if internal:
            row["keys"] = {k: (cats[j][codes[i, j]] if codes[i, j] >= 0 else None) for j, k in enumerate(keys)}
        rows.append(row)
    return rows


def risk_gates(rep: dict[str, Any], request: RiskRequest) -> dict[str, Any]:
    """``{"checks": [{"gate", "limit", "value", "passed"}], "passed"}`` of the request's gates."""
    checks = []
    if request.max_global_risk is not None:
        v = rep["global"]["share"]
        checks.append({"gate": "max_global_risk", "limit": float(request.max_global_risk), "value": v,
                       "passed": bool(v <= request.max_global_risk)})
    if request.max_violations is not None:
        v = next(x["records"] for x in rep["violations"] if x["k"] == request.k)
        checks.append({"gate": "max_violations", "limit": int(request.max_violations), "value": v,
                       "passed": bool(v <= request.max_violations)})
    return {"checks": checks, "passed": all(c["passed"] for c in checks)}


def gate_message(gates: dict[str, Any], k: int) -> str:
    """One line naming every failed gate."""
    parts = []
    for c in gates["checks"]:
        if c["passed"]:
            continue
        if c["gate"] == "max_global_risk":
            parts.append(f"global risk {100 * c['value']:.4g} % (expected re-identifications per record) "
                         f"> --max-global-risk {100 * c['limit']:.4g} %")
        else:
            parts.append(f"{c['value']} records violate {k}-anonymity > --max-violations {c['limit']}")
    return "; ".join(parts)
