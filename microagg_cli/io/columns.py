"""Column classification: which columns are numbers, which may be released in clear.

:func:`column_values` parses a column of a :class:`~microagg_cli.io.table.Table` strictly
(float64 with NaN for missing cells, and a mask of cells that are not numbers);
:func:`missing_mask` finds the missing cells; :func:`numeric_columns`,
:func:`default_column` and :func:`resolve_columns` make the default selection and check
``--columns`` / ``--drop`` / ``--passthrough``; :func:`mostly_numeric_error`,
:func:`reading_error` and :func:`check_release` refuse to pass a number in disguise
through in clear (the release rule, with :mod:`microagg_cli.readings`);
:func:`numeric_matrix` is the checked (n, p) matrix a method protects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..csvio import MISSING_TOKENS, arrow_numpy, missing_tokens, parse_numbers
from ..errors import DataError, InvalidParameterError
from ..readings import Reading, decimal_comma_file, masked_shape, missing_column, numeric_reading, option_list
from ..statfiles import STAT_FORMATS
from .table import Table

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

_MISSING_TOKENS = set(MISSING_TOKENS)


def _parse_numbers(values: pd.Series, decimal: str) -> tuple[np.ndarray, np.ndarray]:
    """Strict float parse of text values: (numbers with NaN where missing, bad mask)."""
    import pandas as pd

    text = values.astype(str).str.strip()
    if decimal != ".":
        text = text.str.replace(decimal, ".", regex=False)
    missing = text.isin(_MISSING_TOKENS).to_numpy()
    num = np.array(pd.to_numeric(text.where(~missing, None), errors="coerce"), dtype=np.float64)
    bad = np.isnan(num) & ~missing
    num[missing] = np.nan
    return num, bad


def _arrow_kind(t: Any) -> str:
    """"int", "float", "text" or "other" (an Arrow type as column_values treats it)."""
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    return "other"


def missing_mask(table: Table, name: str) -> np.ndarray:
    """Cells of ``name`` that are missing: empty or NA-like text (CSV), null (Parquet)."""
    if table.arrow_backed:
        import pyarrow as pa
        import pyarrow.compute as pc

        col = table.column(name)
        kind = _arrow_kind(col.type)
        if table.fmt == "csv":
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            text = pc.utf8_trim(col, " ")
            out = np.zeros(len(col), dtype=bool)
            short = np.flatnonzero(np.asarray(pc.less_equal(pc.utf8_length(text), 4)  # tokens: <= 4 chars
                                              .to_numpy(zero_copy_only=False), dtype=bool))
            if short.size:
                out[short] = np.asarray(pc.is_in(text.take(pa.array(short)), value_set=_token_array())
                                        .to_numpy(zero_copy_only=False), dtype=bool)
            if table.na_values:
                out |= np.asarray(pc.is_in(pc.utf8_trim_whitespace(col),
                                           value_set=pa.array(sorted(missing_tokens(table.na_values))))
                                  .to_numpy(zero_copy_only=False), dtype=bool)
            # cells with characters other than printable ASCII: the old code decides
            odd = np.flatnonzero(~np.asarray(pc.match_substring_regex(col, r"^[\x20-\x7e]*$")
                                             .to_numpy(zero_copy_only=False), dtype=bool))
            if odd.size:
                import pandas as pd

                sub = pd.Series(col.take(pa.array(odd)).to_pylist(), dtype=object)
                out[odd] = sub.astype("string").fillna("").str.strip().isin(_MISSING_TOKENS).to_numpy(dtype=bool)
            return out
        if kind == "int":
            return arrow_numpy(pc.is_null(col))
        if kind == "float":
            return arrow_numpy(pc.is_null(col, nan_is_null=True))
    col = table.pandas_column(name)
    if table.fmt == "csv" or col.dtype == object:
        text = col.astype("string").fillna("").str.strip()
        return text.isin(_MISSING_TOKENS).to_numpy(dtype=bool)
    return col.isna().to_numpy(dtype=bool)


def _token_array() -> Any:
    import pyarrow as pa

    return pa.array(sorted(_MISSING_TOKENS))


def column_values(table: Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column as float64 with NaN for missing cells, and a mask of non-numeric cells."""
    if table.arrow_backed:
        col = table.column(name)
        if table.fmt == "csv":
            return parse_numbers(col, table.decimal, thousands=table.thousands, na_values=table.na_values)
        kind = _arrow_kind(col.type)
        if kind in ("int", "float"):
            import pyarrow as pa

            n = len(col)
            arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            if kind == "int":  # a C cast, as pandas' conversion (int64 -> float64 rounds to nearest)
                out = np.asarray(arrow_numpy(arr.fill_null(0) if arr.null_count else arr), dtype=np.float64)
                if arr.null_count:
                    out[arrow_numpy(arr.is_null())] = np.nan
            else:
                out = arrow_numpy(arr.cast(pa.float64()))
            return np.array(out, dtype=np.float64), np.zeros(n, dtype=bool)
        if kind == "text":
            return parse_numbers(col, ".", thousands=table.thousands, na_values=table.na_values)
    import pandas as pd

    col = table.pandas_column(name) if table.arrow_backed else table.frame[name]
    if table.fmt == "csv":
        return _parse_numbers(col, table.decimal)
    if pd.api.types.is_bool_dtype(col.dtype):
        return np.full(len(col), np.nan), np.ones(len(col), dtype=bool)
    if pd.api.types.is_numeric_dtype(col.dtype):
        return np.array(col.to_numpy(dtype=np.float64, na_value=np.nan)), np.zeros(len(col), dtype=bool)
    return _parse_numbers(col.astype("string").fillna(""), ".")


def numeric_columns(table: Table) -> list[str]:
    """Columns whose every non-missing value is a number (at least one value present)."""
    out = []
    for name in table.columns:
        values, bad = column_values(table, name)
        if not bad.any() and not np.isnan(values).all():
            out.append(name)
    return out


#: The default selection refuses a column when at least this share of its non-empty
#: cells are numbers but not all are (a mistyped number must not release the column).
MOSTLY_NUMERIC = 0.5


def mostly_numeric_error(table: Table, name: str, parsed: tuple[np.ndarray, np.ndarray] | None = None,
                         *, reading: Reading | None = None) -> DataError | None:
    """A :class:`DataError` if ``name`` is mostly but not entirely numeric, else None.

    The rule: at least one non-empty cell parses as a number, at least half of them
    do, and some do not. Such a column is most likely a numeric attribute with a typo,
    and passing it through would release it in clear. ``parsed``: the column's
    :func:`column_values`, when the caller has them already. The message gives the
    offending cell's row and its shape only (:func:`microagg_cli.readings.masked_shape`):
    the cell may hold a confidential number.
    """
    values, bad = parsed if parsed is not None else column_values(table, name)
    n_bad = int(bad.sum())
    if not n_bad:
        return None
    n_num = int((~np.isnan(values)).sum())
    if n_num == 0 or n_num < MOSTLY_NUMERIC * (n_num + n_bad):
        return None
    i = int(np.flatnonzero(bad)[0])
    return DataError(
        f"column {name!r} is mostly numeric ({n_num} of {n_num + n_bad} non-empty cells) but row {i + 1} "
        f"holds {masked_shape(table.cell_text(name, i))}: fix the cell, protect it explicitly with --columns, "
        f"remove it with --drop {option_list([name])}, or release it unchanged on purpose with --passthrough {option_list([name])}"
        f"{_reading_hint(table, reading)}"
    )


def _reading_hint(table: Table, reading: Reading | None) -> str:
    if reading is None:
        return ""
    return (f"; it reads as numbers written with {reading.name}: "
            f"{_settle(reading)}{_decimal_comma_hint(table, reading)}")


def _settle(reading: Reading) -> str:
    return (f"settle it with {' or '.join('`' + o + '`' for o in reading.option.split(' or '))}"
            if reading.option else "convert the column to plain numbers first")


def _decimal_comma_hint(table: Table, reading: Reading) -> str:
    if table.decimal == "." and reading.option != "--decimal ,":
        texts = [c for c in (_text_column(table, n) for n in table.columns) if c is not None]
        if decimal_comma_file(texts):
            return "; the file's numbers are mostly written with a decimal comma: use `--decimal ,`"
    return ""


def column_reading(table: Table, name: str, parsed: tuple[np.ndarray, np.ndarray] | None = None,
                   ) -> Reading | None:
    """The other convention under which the text column ``name`` reads as numbers
    (:func:`microagg_cli.readings.numeric_reading`), or None."""
    col = _text_column(table, name)
    if col is None:
        return None
    values, _bad = parsed if parsed is not None else column_values(table, name)
    return numeric_reading(col, decimal=table.decimal, thousands=table.thousands,
                           missing_tokens=missing_tokens(table.na_values), strict_numbers=~np.isnan(values))


def _text_column(table: Table, name: str) -> Any:
    """The column as Arrow text, or None when it is stored as numbers, booleans or another
    non-text type (those are judged by their type)."""
    import pyarrow as pa

    if table.arrow_backed:
        col = table.column(name)
        if table.fmt == "csv" or _arrow_kind(col.type) == "text":
            return col
        if pa.types.is_dictionary(col.type) and _arrow_kind(col.type.value_type) == "text":
            return col.cast(pa.string())  # a categorical column of text: read it as text
        return None
    col = table.frame[name]
    if table.fmt == "csv" or col.dtype == object or str(col.dtype) == "string":
        return pa.array(col.astype("string").fillna("").tolist(), type=pa.string())
    return None


def reading_error(table: Table, name: str, parsed: tuple[np.ndarray, np.ndarray] | None = None,
                  ) -> DataError | None:
    """A :class:`DataError` refusing to release ``name`` in clear, or None.

    The column is mostly numeric (:func:`mostly_numeric_error`, with the convention
    that explains it where one does), or it reads as numbers under another convention
    (:func:`column_reading`: decimal comma, thousands separators, currency or percent
    signs, accounting negatives, placeholder cells); the message names the column, the
    convention and the option that settles it."""
    parsed = parsed if parsed is not None else column_values(table, name)
    reading = column_reading(table, name, parsed)
    err = mostly_numeric_error(table, name, parsed, reading=reading)
    if err is not None or reading is None:
        return err
    besides = f", besides {reading.placeholders} placeholder cells" if reading.placeholders else ""
    return DataError(
        f"column {name!r} holds numbers written with {reading.name} ({reading.matched} of {reading.total} "
        f"non-empty cells{besides}; e.g. row {reading.example_row + 1}); {_settle(reading)} (or protect it with "
        f"--columns, remove it with --drop {option_list([name])}, or release it unchanged on purpose with --passthrough {option_list([name])})"
        f"{_decimal_comma_hint(table, reading)}"
    )


def default_column(table: Table, name: str) -> bool:
    """Does the default selection protect column ``name``? Yes for a numeric column with
    at least one value, no for a column that is not a number under any common
    convention; a column that is mostly but not entirely numeric raises
    :func:`mostly_numeric_error`, and one that reads as numbers under another convention
    raises :func:`reading_error` (neither may release a number in clear). Each column is
    parsed once; the streaming engines call this one column at a time."""
    values, bad = check_release(table, name)
    return not bad.any() and not bool(np.isnan(values).all())


def check_release(table: Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Refuse to release column ``name`` in clear when it is a number in disguise.

    Called, with an explicit selection (``--columns`` or a plan), for every column that
    would pass through unchanged without being named (``--passthrough``, a plan's
    passthrough, ``--strata``, ``--weights``, ``--keys``, the id column): a column that
    is mostly numeric, or numeric under another convention (decimal comma, thousands
    separators, currency or percent signs, accounting negatives, placeholder cells),
    raises :func:`reading_error`'s :class:`DataError` (exit code 3). A column the strict
    parser reads as numbers in full is plainly visible as such: it passes through as
    the explicit selection left it, and is listed as passed through in the summary and
    the report. Returns the column's :func:`column_values` (the default selection
    decides with them)."""
    values, bad = column_values(table, name)
    if bad.any():
        err = reading_error(table, name, (values, bad))
        if err is not None:
            raise err
    return values, bad


def resolve_columns(
    table: Table, columns: list[str] | None, drop: list[str] | None = None,
    passthrough: list[str] | None = None, roles: list[str] | None = None,
) -> tuple[list[str], list[str]]:
    """Check ``columns``, ``drop`` and ``passthrough`` against the file; return (protected, dropped).

    ``columns=None`` selects every numeric column that is neither dropped, passed
    through nor given another role (``roles``: strata, weights, id columns, which pass
    through unchanged); a column that is mostly but not entirely numeric is then an
    error (:func:`mostly_numeric_error`) unless it is dropped, passed through or has a
    role.
    """
    have = table.columns
    drop = list(drop or [])
    passthrough = list(passthrough or [])
    for label, names in (("--drop", drop), ("--columns", columns or []), ("--passthrough", passthrough)):
        seen: set[str] = set()
        for name in names:
            if name not in have:
                raise DataError(f"{label}: {missing_column(name, have)}")
            if name in seen:
                raise InvalidParameterError(f"{label}: column {name!r} is named twice")
            seen.add(name)
    for name in passthrough:
        if name in drop:
            raise InvalidParameterError(f"column {name!r} is both passed through and dropped")
        if columns is not None and name in columns:
            raise InvalidParameterError(f"column {name!r} is both protected and passed through")
    if columns is None:
        exempt = set(drop) | set(passthrough) | set(roles or [])
        protected = [name for name in have if name not in exempt and default_column(table, name)]
        if not protected:
            raise DataError("the input has no numeric column to protect; name them with --columns")
    else:
        both = [c for c in columns if c in drop]
        if both:
            raise InvalidParameterError(f"column {both[0]!r} is both protected and dropped")
        protected = list(columns)
    if not protected:
        raise InvalidParameterError("no column to protect")
    return protected, drop


def numeric_matrix(table: Table, columns: list[str], *, allow_missing: bool = False) -> np.ndarray:
    """The named columns as an (n, p) float64 matrix, checked strictly.

    Raises :class:`DataError` naming the first offending column and row (1-based data
    row) for a non-numeric value, a missing value (unless ``allow_missing``, then NaN)
    or an infinite value.
    """
    out = np.empty((table.n_rows, len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        values, bad = column_values(table, name)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"column {name!r} is not numeric: row {i + 1} holds {masked_shape(table.cell_text(name, i))}"
                f"{_reading_hint(table, column_reading(table, name, (values, bad)))}"
            )
        nan = np.isnan(values)
        if nan.any() and not allow_missing:
            i = int(np.flatnonzero(nan)[0])
            if table.fmt in STAT_FORMATS:  # name the declared missing code and its label
                from ..statfiles import declared_missing_message

                msg = declared_missing_message(table.data, name)
                if msg:
                    raise DataError(msg)
            raise DataError(
                f"column {name!r} has {int(nan.sum())} missing value(s) (first in row {i + 1}); "
                "use --missing complete|available, or remove or impute them first"
            )
        inf = np.isinf(values)
        if inf.any():
            i = int(np.flatnonzero(inf)[0])
            raise DataError(f"column {name!r} has an infinite value in row {i + 1}")
        out[:, j] = values
    return out
