"""Excel ``.xlsx`` workbooks read as the CSV file Excel would save from them.

Statistics offices often receive a spreadsheet. The first worksheet is read with
openpyxl (pure Python, values only: a formula gives the value Excel last computed)
and every cell becomes the text a CSV export holds: numbers in their shortest form
(``34``, ``1200.5``), dates in ISO 8601, ``TRUE``/``FALSE``, an empty cell ``""``. The
result is the all-text Arrow table of :func:`microagg_cli.csvio.read_csv_arrow`, so
every rule of CSV input holds (strict number parsing, the release rule, pass-through
columns kept as they read). Workbooks are read, not written.
"""

from __future__ import annotations

import datetime as _dt
import io as _io
from typing import Any

from ..csvio import check_header
from ..errors import DataError, InvalidParameterError

__all__ = ["read_xlsx", "cell_text"]


def cell_text(value: Any) -> str:
    """A cell's value as a CSV export writes it.

    >>> [cell_text(v) for v in (34, 1200.5, 3.0, None, True, "a")]
    ['34', '1200.5', '3', '', 'TRUE', 'a']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return str(value)
    return str(value)


def read_xlsx(raw: bytes, name: str) -> Any:
    """The first worksheet of an ``.xlsx`` workbook as an all-text Arrow table.

    The first row is the header (:func:`microagg_cli.csvio.check_header`); empty rows
    are skipped; a row with a value beyond the header's last column is refused, as a
    long CSV row is. Raises :class:`DataError` (exit code 3) for a file that is not a
    readable workbook, an empty sheet or a sheet without data rows.
    """
    import pyarrow as pa

    try:
        import openpyxl
    except ImportError:  # pragma: no cover - a dependency
        raise InvalidParameterError("Excel files need openpyxl, which is not installed: pip install openpyxl") from None
    try:
        book = openpyxl.load_workbook(_io.BytesIO(raw), read_only=True, data_only=True)
        try:
            if not book.worksheets:
                raise DataError(f"{name}: the workbook has no worksheet")
            rows = [list(r) for r in book.worksheets[0].iter_rows(values_only=True)]
        finally:
            book.close()
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - zip, XML and openpyxl errors of a damaged file
        text = str(exc).strip().splitlines()
        why = (text[0] if text else type(exc).__name__)[:100]
        raise DataError(f"{name}: not a readable Excel .xlsx file ({why})") from None
    rows = [[cell_text(v) for v in r] for r in rows]
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise DataError(f"{name}: the first worksheet is empty")
    header = rows[0]
    while header and not header[-1].strip():
        header.pop()
    check_header(header, name)
    width = len(header)
    data = rows[1:]
    for i, r in enumerate(data):
        if any(c.strip() for c in r[width:]):
            raise DataError(f"{name}: row {i + 2} of the first worksheet has a value beyond the header's "
                            f"{width} columns; every value must sit under a header name")
    if not data:
        raise DataError(f"{name}: the first worksheet has a header but no data rows")
    columns = [pa.array([r[j] if j < len(r) else "" for r in data], type=pa.string()) for j in range(width)]
    return pa.table(columns, names=list(header))  # kept exactly, as in a CSV header
