"""Which protected record belongs to which original record, and the proof of it.

``sdc evaluate`` compares every original record with *its* protected record; paired
wrongly (a release whose rows were shuffled or re-sorted, an unrelated file with the
same header), every figure is wrong and nothing in the figures shows it: a shuffled
release looks almost risk-free. So the pairing is established first and proven before
any figure is computed:

* :func:`pair_records`: by position (the default), by key columns present in both
  files (``--key COL[,COL]``, unique per record), or by the private pairing file that
  ``sdc protect --shuffle-rows --pairing-file FILE`` writes (:func:`write_pairing`).
* :func:`check_pairing`: the released values must be class statistics of the paired
  originals. In each evaluated column, the records sharing one released value form a
  class; its released value must lie within the range of the class's original values.
  Every statistic ``sdc protect`` releases satisfies this (the mean, the weighted mean,
  the median, the trimmed mean and the one-step estimate of a group, and of any union
  of groups with the same value: multivariate groups, individual ranking, strata, key
  columns), so a correct pairing always passes. A wrong pairing puts records of other
  groups into a class and fails almost surely (each class of k records is one more
  chance). Released blanks (missing cells, suppressed strata, records left out of the
  grouping) are not in any class; missing original cells do not count in a class's
  range. A cell blanked after grouping (an original value, a blank release) took a
  member out of one class: as many classes as there are such cells may lie within
  range only once the blanked originals count. A column in which nearly every class
  whose originals differ equals their mean (90 %, at least 5 classes) is a mean
  release: there every other class must be another group statistic of its originals
  (a trimmed mean, the median, the one-step estimate, or a weighted mean with a column
  of both files that is unchanged and positive, as ``--weights`` releases it), which
  catches a few swapped records. The report names each column ``mean`` (every class
  equals its mean) or ``range``.

The tolerance is ``1e-9`` times the column's largest magnitude (the rounding of a
mean) plus, for a value read back from text, half a unit in the last digit the text
shows (a release written with 2 decimals or 6 significant digits). A release whose
values are not class statistics (added noise, ``mic1d``, perturbed values) cannot be proven
this way: evaluate it with ``check=False`` (``--no-pairing-check``), which the report
records.

Nothing here prints; :mod:`microagg_cli.evaluation` calls this module once, before
measuring.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .errors import DataError, InvalidParameterError
from .io import Table, column_values

__all__ = ["PAIRING_HEADER", "pair_records", "check_pairing", "unshared_columns", "weight_candidates",
           "write_pairing", "read_pairing", "pairing_text", "key_columns"]

log = logging.getLogger("microagg_cli")

#: The header line of a pairing file (one line per released row follows).
PAIRING_HEADER = "original_row"

#: Relative rounding tolerance of a class statistic (times the column's largest magnitude).
REL_TOL = 1e-9

#: A column whose classes of differing originals meet their means at least this often (and
#: at least MIN_INFORMATIVE of them) is a mean release: every other class must be another
#: group statistic of its originals.
NEAR_MEAN_SHARE = 0.9
MIN_INFORMATIVE = 5

#: What the check requires, in the report.
RULE = ("in every evaluated column, each class of records sharing a released value holds that value "
        "within the range of its records' original values (every group statistic does: mean, weighted "
        "mean, median, trimmed mean, one-step); where nearly every class holds its mean, every class holds "
        "one of these statistics of its records")


def key_columns(key: str | Sequence[str] | None) -> list[str]:
    """``--key`` as a list of column names (a library caller may give one name as a string)."""
    if key is None:
        return []
    return [key] if isinstance(key, str) else list(key)


# ----------------------------------------------------------------- pairing the rows


def _key_strings(table: Table, key: str, numeric: bool) -> np.ndarray:
    """The key column as comparable strings (numbers normalised when both sides are numeric)."""
    if numeric:
        values, _ = column_values(table, key)
        return np.array([format(v, ".17g") for v in values], dtype=object)
    col = table.pandas_column(key)
    return np.array([("" if v is None else str(v)).strip() for v in col.tolist()], dtype=object)


def _all_numeric(table: Table, key: str) -> bool:
    values, bad = column_values(table, key)
    return not bad.any() and not np.isnan(values).any()


def _record_keys(table: Table, keys: list[str], numeric: list[bool], what: str, shown: str) -> np.ndarray:
    parts = [_key_strings(table, c, num) for c, num in zip(keys, numeric)]
    for part in parts:
        empty = np.flatnonzero(part == "")
        if empty.size:
            raise DataError(f"--key {shown}: row {int(empty[0]) + 1} of the {what} file has no key")
    if len(parts) == 1:
        return parts[0]
    return np.array(["\x1f".join(t) for t in zip(*parts)], dtype=object)


def _show_key(value: str) -> str:
    return repr(tuple(value.split("\x1f"))) if "\x1f" in value else repr(value)


def _pair_by_key(orig: Table, prot: Table, keys: list[str]) -> np.ndarray:
    import pandas as pd  # only to pair rows by a key

    shown = repr(keys[0]) if len(keys) == 1 else repr(",".join(keys))
    if len(set(keys)) != len(keys):
        raise InvalidParameterError(f"--key {shown}: a column is named twice")
    for table, what in ((orig, "original"), (prot, "protected")):
        for key in keys:
            if key not in table.columns:
                raise DataError(f"--key: no column {key!r} in the {what} file")
    numeric = [_all_numeric(orig, c) and _all_numeric(prot, c) for c in keys]
    keys_o = _record_keys(orig, keys, numeric, "original", shown)
    keys_p = _record_keys(prot, keys, numeric, "protected", shown)
    for values, what in ((keys_o, "original"), (keys_p, "protected")):
        index = pd.Index(values)
        if not index.is_unique:
            dup = index[index.duplicated()][0]
            count = int((values == dup).sum())
            raise DataError(f"--key {shown}: key {_show_key(dup)} occurs {count} times in the {what} file; "
                            "keys must be unique")
    pos = pd.Index(keys_p).get_indexer(keys_o)
    missing = np.flatnonzero(pos < 0)
    if missing.size:
        raise DataError(f"--key {shown}: {missing.size} record(s) of the original have no match in the protected "
                        f"file (first: key {_show_key(keys_o[missing[0]])})")
    if prot.n_rows > orig.n_rows:
        extra = np.setdiff1d(np.arange(prot.n_rows), pos)
        raise DataError(f"--key {shown}: {extra.size} record(s) of the protected file have no match in the "
                        f"original (first: key {_show_key(keys_p[extra[0]])})")
    return pos.astype(np.int64)


def read_pairing(path: str | Path, n_original: int, n_protected: int) -> np.ndarray:
    """The positions in the protected file of the original's rows, from a pairing file.

    The file (:func:`write_pairing`) holds the header :data:`PAIRING_HEADER` and, for
    each released row in order, the 1-based number of its row in the original; every
    original row appears once.
    """
    name = Path(path).name
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"--pairing-file {name}: cannot read it ({exc.__class__.__name__}: "
                        f"{getattr(exc, 'strerror', None) or exc})") from None
    lines = text.splitlines()
    if not lines or lines[0].strip() != PAIRING_HEADER:
        raise DataError(f"--pairing-file {name}: not a pairing file (its first line must be {PAIRING_HEADER!r}, "
                        "as sdc protect --pairing-file writes it)")
    body = lines[1:]
    if len(body) != n_protected:
        raise DataError(f"--pairing-file {name}: {len(body)} row(s), but the protected file has {n_protected}")
    if n_original != n_protected:
        raise DataError(f"--pairing-file {name}: the original has {n_original} rows and the protected file "
                        f"{n_protected}; a pairing file pairs every row of both")
    rows = np.empty(len(body), dtype=np.int64)
    for i, line in enumerate(body):
        try:
            rows[i] = int(line.strip())
        except ValueError:
            raise DataError(f"--pairing-file {name}: line {i + 2} is not a row number") from None
    if rows.size and (rows.min() < 1 or rows.max() > n_original):
        bad = int(np.flatnonzero((rows < 1) | (rows > n_original))[0])
        raise DataError(f"--pairing-file {name}: line {bad + 2} names row {rows[bad]}, outside 1..{n_original}")
    pos = np.full(n_original, -1, dtype=np.int64)
    pos[rows - 1] = np.arange(rows.size)
    if (pos < 0).any():
        counts = np.bincount(rows - 1, minlength=n_original)
        dup = int(np.flatnonzero(counts > 1)[0]) + 1
        raise DataError(f"--pairing-file {name}: original row {dup} is named {int(counts[dup - 1])} times")
    return pos


def pairing_text(original_rows: np.ndarray) -> str:
    """A pairing file's text: the header, then the 1-based original row of each released row."""
    return PAIRING_HEADER + "\n" + "".join(f"{int(r) + 1}\n" for r in original_rows)


def write_pairing(original_rows: np.ndarray) -> Any:
    """A writer for :meth:`microagg_cli.io.OutputSet.add_file` (binary; add the file as private)."""
    data = pairing_text(original_rows).encode("utf-8")
    return lambda fh: fh.write(data)


def pair_records(orig: Table, prot: Table, *, key: str | Sequence[str] | None = None,
                 pairing_file: str | os.PathLike[str] | None = None) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Positions of the protected rows paired with the original's rows (None = the same
    order) and the report's ``matching`` entry, before the proof (:func:`check_pairing`)."""
    keys = key_columns(key)
    if keys and pairing_file is not None:
        raise InvalidParameterError("--key and --pairing-file both pair the records; give one of them")
    if pairing_file is not None:
        pos = read_pairing(pairing_file, orig.n_rows, prot.n_rows)
        return pos, {"by": "pairing file", "pairing_file": Path(pairing_file).name}
    if keys:
        return _pair_by_key(orig, prot, keys), {"by": "key", "key": keys[0] if len(keys) == 1 else keys}
    if orig.n_rows != prot.n_rows:
        raise DataError(
            f"the original has {orig.n_rows} rows and the protected file {prot.n_rows}; rows are matched by "
            "order, so the counts must agree (or match them by an identifier with --key COL)"
        )
    return None, {"by": "order"}


def unshared_columns(orig: Table, prot: Table, exclude: Sequence[str] = ()) -> dict[str, list[str]]:
    """Columns of one file that the other lacks (by exact name), each list in file order;
    named on stderr (a renamed column is not evaluated)."""
    o, p = set(orig.columns), set(prot.columns)
    out = {"only_in_original": [c for c in orig.columns if c not in p and c not in exclude],
           "only_in_protected": [c for c in prot.columns if c not in o and c not in exclude]}
    out = {k: v for k, v in out.items() if v}
    if out:
        parts = [f"{'only in the original' if k == 'only_in_original' else 'only in the protected file'}: "
                 + ", ".join(repr(c) for c in v) for k, v in out.items()]
        log.warning("columns not in both files are not evaluated (%s)", "; ".join(parts))
    return out


# ----------------------------------------------------------------- the proof


def weight_candidates(orig: Table, prot: Table, order: np.ndarray | None, exclude: Sequence[str]) -> list[np.ndarray]:
    """Columns that may be the sampling weights of a weighted-mean release: numeric in both
    files, not evaluated, equal in both under the pairing, every value finite and > 0
    (``sdc protect --weights`` releases its weight column unchanged). Original row order."""
    out = []
    for name in orig.columns:
        if name in exclude or name not in prot.columns:
            continue
        a, bad_a = column_values(orig, name)
        if bad_a.any() or not (np.isfinite(a).all() and (a > 0).all()):
            continue
        b, bad_b = column_values(prot, name)
        if bad_b.any():
            continue
        if order is not None:
            b = b[order]
        if np.array_equal(a, b):
            out.append(a)
    return out


def _text_quantum(values: np.ndarray) -> np.ndarray:
    """Half a unit in the last decimal place each value shows (``45500.0`` -> 50,
    ``12.34`` -> 0.005, ``91416.33333333333`` -> 5e-11): the rounding of a value
    written with fewer digits. Zero shows no digit of its own: the finest of the others;
    non-finite values and values finer than 1e-17: 0.

    Vectorised over the decimal places tried, coarse to fine (40 passes at most)."""
    v = np.asarray(values, dtype=np.float64)
    out = np.zeros(v.size)
    todo = np.flatnonzero(np.isfinite(v) & (v != 0.0))
    for d in range(-22, 18):
        if todo.size == 0:
            break
        vv = v[todo]
        with np.errstate(over="ignore", invalid="ignore"):
            hit = np.abs(np.round(vv, d) - vv) <= 4 * np.finfo(np.float64).eps * np.abs(vv)
        out[todo[hit]] = 0.5 * 10.0 ** (-d)
        todo = todo[~hit]
    nonzero = out[out > 0]
    if nonzero.size:
        out[v == 0.0] = nonzero.min()
    return out


def _classes(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray] | None:
    """The classes of identical released values ``y`` of one column: released value,
    size, first row, and the count, sum, min and max of the originals ``x``."""
    rows = np.flatnonzero(np.isfinite(y))
    if rows.size == 0:
        return None
    yv, xv = y[rows], x[rows]
    order = np.argsort(yv, kind="stable")  # stable: a class's first entry is its first row
    ys, xs = yv[order], xv[order]
    new = np.empty(ys.size, dtype=bool)
    new[0] = True
    np.not_equal(ys[1:], ys[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    known = np.isfinite(xs)
    with np.errstate(invalid="ignore"):
        count = np.add.reduceat(known.astype(np.int64), starts)
        total = np.add.reduceat(np.where(known, xs, 0.0), starts)
        lo = np.fmin.reduceat(np.where(known, xs, np.nan), starts)
        hi = np.fmax.reduceat(np.where(known, xs, np.nan), starts)
    return {"value": ys[starts], "size": np.diff(np.append(starts, ys.size)), "first": rows[order[starts]],
            "count": count, "mean": np.divide(total, np.maximum(count, 1)), "lo": lo, "hi": hi,
            "starts": starts, "members": rows[order], "originals": xs}


def _single_precision(values: np.ndarray) -> bool:
    return bool(values.size) and bool(np.array_equal(values, values.astype(np.float32).astype(np.float64)))


def _check_column(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """One column's classes and verdict: the first class outside its range (``off_range``,
    None when none), the classes off their mean, the tolerance and the blanked cells."""
    cls = _classes(x, y)
    if cls is None:
        return {"classes": 0, "checked": 0, "off_range": None, "off_mean": 0, "cls": None}
    xf, yf = x[np.isfinite(x)], y[np.isfinite(y)]
    finite = np.concatenate([np.abs(xf), np.abs(yf)])
    tol = REL_TOL * (float(finite.max()) if finite.size else 0.0)
    if _single_precision(yf) and not _single_precision(xf):  # a release stored as float32
        tol = max(tol, 2.0 ** -23 * float(np.abs(yf).max()))
    v, checked = cls["value"], cls["count"] > 0
    in_range = ~checked | ((v >= cls["lo"] - tol) & (v <= cls["hi"] + tol))
    at_mean = ~checked | (np.abs(cls["mean"] - v) <= tol)
    loose = ~in_range | ~at_mean
    if loose.any():  # values read back from text: half a unit in the last digit shown
        idx = np.flatnonzero(loose)
        q = tol + _text_quantum(v[idx])
        in_range[idx] = ~checked[idx] | ((v[idx] >= cls["lo"][idx] - q) & (v[idx] <= cls["hi"][idx] + q))
        at_mean[idx] = ~checked[idx] | (np.abs(cls["mean"][idx] - v[idx]) <= q)
    bad = np.flatnonzero(~in_range)
    # a released blank over an original value (a cell suppressed after grouping) took one member
    # out of one class: up to that many classes may lie within range once those originals count
    blanked = np.isnan(y) & np.isfinite(x)
    if bad.size and blanked.any() and bad.size <= int(blanked.sum()):
        lo_b, hi_b = float(x[blanked].min()), float(x[blanked].max())
        q = tol + _text_quantum(v[bad])
        lo = np.fmin(cls["lo"][bad], lo_b)
        hi = np.fmax(cls["hi"][bad], hi_b)
        bad = bad[~((v[bad] >= lo - q) & (v[bad] <= hi + q))]
    first_bad = None
    if bad.size:
        first_bad = int(bad[np.argmin(cls["first"][bad])])
    informative = checked & (cls["lo"] < cls["hi"])  # classes whose originals differ
    return {"classes": int(v.size), "checked": int(checked.sum()), "off_range": first_bad,
            "off_mean": int((~at_mean & checked).sum()), "informative": int(informative.sum()),
            "informative_at_mean": int((at_mean & informative).sum()), "cls": cls,
            "off_mean_classes": np.flatnonzero(~at_mean & checked), "tol": tol, "blanked": int(blanked.sum())}


def _explained(originals: np.ndarray, members: np.ndarray, value: float, q: float,
               weights: Sequence[np.ndarray]) -> bool:
    """Whether a class's released value is another group statistic of its originals: a
    trimmed mean (any cut), the median, the one-step estimate, or a weighted mean with one
    of the candidate ``weights`` (columns of both files, unchanged and positive)."""
    from .partition import onestep  # the statistic sdc protect releases

    known = np.isfinite(originals)
    srt = np.sort(originals[known])
    m = srt.size
    candidates = [float(np.median(srt)), onestep(srt)] + [float(srt[c:m - c].mean()) for c in range(1, (m + 1) // 2)]
    for w in weights:
        ww = w[members][known]
        candidates.append(float(np.sum(ww * originals[known]) / np.sum(ww)))
    return any(abs(c - value) <= q for c in candidates)


def _failure(name: str, cls: dict[str, np.ndarray], i: int, by: str, rows_of: np.ndarray | None,
             mean: tuple[int, int] | None = None) -> str:
    size = int(cls["size"][i])
    first = int(cls["first"][i])
    row = first if rows_of is None else int(rows_of[first])
    where = (f"the released value shared by {size} records (the first in row {row + 1} of the protected file)"
             if size > 1 else f"the released value in row {row + 1} of the protected file")
    if by == "order":
        how = ("rows are paired by position: if the protected file's rows were shuffled or re-sorted, pair them "
               "with --key COL (a column in both files identifying each record) or --pairing-file FILE (from "
               "sdc protect --shuffle-rows)")
    elif by == "key":
        how = ("records are paired by --key: is it an identifier kept unchanged in both files "
               "(--regenerate-ids replaces it)?")
    else:
        how = "records are paired by --pairing-file: is it the one written with this protected file?"
    if mean is None:
        what = "is outside the range of the paired original values, which no group statistic gives"
    else:
        what = (f"is no group statistic of the paired original values, though {mean[0]} of the {mean[1]} classes "
                "of differing values hold their mean")
    return (f"the records are not paired right: in column {name!r} {where} {what}; {how}; for a release that is "
            "not made of group statistics (noise, mic1d) use --no-pairing-check")


def check_pairing(X: np.ndarray, Xp: np.ndarray, names: Sequence[str], matching: dict[str, Any], *,
                  check: bool = True, rows_of: np.ndarray | None = None,
                  candidate_weights: Callable[[], Sequence[np.ndarray]] | None = None) -> dict[str, Any]:
    """Prove the pairing of ``X`` (originals) and ``Xp`` (protected, paired row by row) on
    the evaluated columns ``names``; return ``matching`` with its ``check`` entry.

    Raises :class:`DataError` naming the first class (in column order, then by its first
    row) whose released value lies outside its originals' range. ``rows_of``: the row in
    the protected file of each paired row (when paired by key or pairing file), for the
    message. ``check=False`` skips the proof and records that it was skipped.

    Notes
    -----
    One stable sort per column: O(n p log n) time, O(n) extra memory.
    """
    if not check:
        return {**matching, "check": {"passed": None, "skipped": "--no-pairing-check: the pairing was not proven"}}
    columns: dict[str, str] = {}
    near_mean: list[str] = []
    weights: list[np.ndarray] | None = None
    classes = checked = 0
    for j, name in enumerate(names):
        res = _check_column(np.asarray(X[:, j], dtype=np.float64), np.asarray(Xp[:, j], dtype=np.float64))
        if res["off_range"] is not None:
            raise DataError(_failure(name, res["cls"], res["off_range"], matching["by"], rows_of))
        classes += res["classes"]
        checked += res["checked"]
        if res["checked"] == 0:
            columns[name] = "blank"
        elif res["off_mean"] == 0:
            columns[name] = "mean"
        else:
            columns[name] = "range"
            if (res["informative"] >= MIN_INFORMATIVE
                    and res["informative_at_mean"] >= NEAR_MEAN_SHARE * res["informative"]):
                if weights is None:
                    weights = list(candidate_weights()) if candidate_weights is not None else []
                _check_mean_release(name, res, weights, matching["by"], rows_of)
                near_mean.append(f"{name!r} ({res['off_mean']} of {res['checked']} classes)")
    if checked == 0:
        raise DataError("the pairing cannot be proven: no evaluated column holds a released value with an "
                        "original value; pair the records with --key COL")
    if near_mean:
        log.info("released values equal their class means except in a few classes, each another group statistic "
                 "of its records (trimmed, median, one-step or weighted): %s", ", ".join(near_mean))
    return {**matching, "check": {"passed": True, "rule": RULE, "classes": classes, "columns": columns}}


def _check_mean_release(name: str, res: dict[str, Any], weights: Sequence[np.ndarray], by: str,
                        rows_of: np.ndarray | None) -> None:
    """A mean release (nearly every class equals its mean): each other class must be another
    group statistic of its originals (a trimmed or weighted mean, the median, the one-step
    estimate), or one of as many classes as there are cells blanked after grouping."""
    off = res["off_mean_classes"]
    if off.size <= res["blanked"]:
        return
    cls = res["cls"]
    ends = np.append(cls["starts"][1:], cls["originals"].size)
    q = res["tol"] + _text_quantum(cls["value"][off])
    unexplained = [i for i, qi in zip(off.tolist(), q.tolist())
                   if not _explained(cls["originals"][cls["starts"][i]:ends[i]],
                                     cls["members"][cls["starts"][i]:ends[i]], float(cls["value"][i]), qi, weights)]
    if len(unexplained) <= res["blanked"]:
        return
    first = min(unexplained, key=lambda i: int(cls["first"][i]))
    raise DataError(_failure(name, cls, first, by, rows_of, mean=(res["informative_at_mean"], res["informative"])))
