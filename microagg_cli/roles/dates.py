"""Dates protected on purpose: numbers of their unit while protected, dates again when released."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import DataError
from .evidence import date_format, family_of, iso_dates

__all__ = ["DateColumn", "DATE_PART", "date_candidates", "prepare_dates", "release_dates"]


#: seconds per step of a date format's unit, per statistical package (SPSS dates are
#: seconds since 1582-10-14; Stata and SAS dates are days, their date-times seconds or ms)
_STEPS = {("spss", "day"): 86400.0}


@dataclass(frozen=True)
class DateColumn:
    """How a protected date column is turned into numbers and back."""

    name: str
    kind: str  # "stat" (numbers with a date format), "arrow" (a temporal type), "iso" (CSV text)
    step: float = 1.0
    arrow_type: Any = None
    numpy_unit: str = "D"
    separator: str = "T"


#: Every ISO 8601 date or date-time cell holds this: a CSV column with no such cell holds
#: none of the dates :func:`prepare_dates` protects.
DATE_PART = r"\d{4}-\d{2}-\d{2}"


def date_candidates(table: Any, columns: Sequence[str]) -> list[str]:
    """The columns among ``columns`` that can hold dates: every one, but for a CSV file
    the text columns with a cell holding YYYY-MM-DD only (one regular-expression pass
    over each; the full test, which reads the column's missing cells, runs on those
    alone: a column of numbers costs no more than that pass)."""
    if table.fmt != "csv":
        return list(columns)
    import pyarrow as pa
    import pyarrow.compute as pc

    out = []
    for name in columns:
        if name in table.columns:
            col = table.column(name)
            if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and \
                    not pc.any(pc.match_substring_regex(col, DATE_PART)).as_py():
                continue
        out.append(name)
    return out


def prepare_dates(table: Any, columns: Sequence[str]) -> tuple[Any, list[DateColumn]]:
    """The protected date and time columns among ``columns`` as numbers of their unit.

    An SPSS, Stata or SAS column with a date or time display format is already a
    number (it only needs rounding back, :func:`release_dates`); a Parquet date,
    timestamp or time column becomes its integer count of days, seconds, ms... ; a CSV
    column of ISO 8601 dates (or date-times, no time zone) becomes days (seconds).
    Returns the table to protect and what :func:`release_dates` needs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..io import missing_mask
    from ..statfiles import stat_meta

    dates: list[DateColumn] = []
    data = table.data
    family = family_of(table.fmt)
    cols_meta = (stat_meta(data) or {}).get("columns", {}) if family else {}
    for name in date_candidates(table, columns):
        if name not in table.columns:
            continue
        if family:
            unit = date_format(cols_meta.get(name, {}).get("format"), family)
            if unit:
                dates.append(DateColumn(name, "stat", _STEPS.get((family, unit), 1.0)))
            continue
        col = data.column(name)
        if table.fmt != "csv" and pa.types.is_temporal(col.type):
            t = col.type
            if pa.types.is_date32(t) or pa.types.is_time32(t):
                ints = col.cast(pa.int32()).cast(pa.int64())
            else:
                ints = col.cast(pa.int64())
            values = np.asarray(ints.to_numpy(zero_copy_only=False), dtype=np.float64)
            if ints.null_count:
                values[np.asarray(ints.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = np.nan
            step = 1.0
            if pa.types.is_timestamp(t):  # midnights only: days; whole seconds: seconds
                per_second = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}[t.unit]
                whole = values[~np.isnan(values)]
                for candidate in (86400.0 * per_second, float(per_second)):
                    if whole.size and np.all(np.mod(whole, candidate) == 0):
                        step = candidate
                        break
            data = data.set_column(data.column_names.index(name), pa.field(name, pa.float64()),
                                   pa.array(values, type=pa.float64(), from_pandas=True))
            dates.append(DateColumn(name, "arrow", step, arrow_type=t))
            continue
        if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and iso_dates(table, name):
            missing = missing_mask(table, name)
            text = np.asarray(pc.utf8_trim_whitespace(col).to_numpy(zero_copy_only=False), dtype=object)
            present = [str(v) for v in text[~missing]]
            if any(re.search(r"(Z|[+-]\d{2}:?\d{2})$", v) and "T" in v or " " in v and re.search(r"[+-]\d{2}:?\d{2}$", v)
                   for v in present):
                raise DataError(f"column {name!r}: dates with a time zone; convert them to one zone (and drop "
                                "the offset) before protecting them")
            timed = any(len(v) > 10 for v in present)
            sep = " " if any(len(v) > 10 and v[10] == " " for v in present) else "T"
            unit = ("ms" if any("." in v for v in present) else "s") if timed else "D"
            stamps = np.array([v.replace(" ", "T") for v in present], dtype=f"datetime64[{unit}]")
            values = np.full(table.n_rows, np.nan)
            values[~missing] = stamps.astype(np.int64).astype(np.float64)
            texts = np.array(["" if np.isnan(v) else repr(float(v)).replace(".", table.decimal) for v in values],
                             dtype=object)
            data = data.set_column(data.column_names.index(name), data.schema.field(name),
                                   pa.array(texts.tolist(), type=pa.string()))
            dates.append(DateColumn(name, "iso", numpy_unit=unit, separator=sep))
    if not dates or all(d.kind == "stat" for d in dates):
        return table, dates
    return table.with_data(data), dates


def release_dates(data: Any, dates: Sequence[DateColumn]) -> Any:
    """The output with each protected date column released as dates: group values
    rounded to the column's unit (a day, a second...) and given back their type (Arrow)
    or their ISO 8601 text (CSV)."""
    import pyarrow as pa

    from ..io import with_column

    for d in dates:
        if d.name not in data.column_names:
            continue
        values = np.asarray(data.column(d.name).to_numpy(zero_copy_only=False), dtype=np.float64)
        nan = np.isnan(values)
        rounded = np.where(nan, 0.0, np.round(values / d.step) * d.step)
        if d.kind == "stat":
            arr = pa.array(np.where(nan, np.nan, rounded), type=pa.float64(), from_pandas=True)
            data = with_column(data, d.name, arr)
        elif d.kind == "arrow":
            ints = pa.array(rounded.astype(np.int64), type=pa.int64(), mask=nan if nan.any() else None)
            t = d.arrow_type
            arr = ints.cast(pa.int32()).cast(t) if (pa.types.is_date32(t) or pa.types.is_time32(t)) else ints.cast(t)
            data = with_column(data, d.name, arr, type=t)
        else:
            stamps = rounded.astype(np.int64).astype(f"datetime64[{d.numpy_unit}]")
            text = np.datetime_as_string(stamps, unit=d.numpy_unit)
            if d.separator != "T":
                text = np.char.replace(text, "T", d.separator)
            arr = pa.array(np.where(nan, "", text).tolist(), type=pa.string())
            data = with_column(data, d.name, arr, type=pa.string())
    return data
