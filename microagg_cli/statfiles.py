"""SPSS (.sav, .zsav), Stata (.dta) and SAS (.sas7bdat, .xpt) files as Arrow tables.

The files statistics offices hold carry more than numbers: variable labels, value labels,
display formats, measure levels, a file label, a weight variable and *declared missing
codes* (SPSS user-missing values and ranges such as 99998 = "refused", Stata's extended
missings ``.a``-``.z``, SAS's special missings ``.A``-``.Z`` and ``._``). This module
reads such a file with pyreadstat (a wrapper of the C library ReadStat) into the same
``pyarrow.Table`` the CSV and Parquet paths use, and writes one back:

- every numeric column keeps its storage type (SPSS and SAS: double; Stata: int8,
  int16, int32, float, double) as the Arrow type;
- a cell that holds a declared missing code is **null** in the Arrow table, so every
  path (``--missing``, the default column selection, strata, evaluate) sees it as
  missing and no method ever averages it; the code itself is kept, per cell, in the
  schema metadata (:data:`META_KEY`), and :func:`write_stat` writes it back as the
  same code;
- labels, value labels, formats, widths, measure levels, the file label, the encoding
  and the SPSS weight variable are kept in the schema metadata too, which every output
  path (:func:`microagg_cli.io.assemble_output`, ``take_rows``, ``with_column``)
  carries over, so the writer finds them on the protected table.

Only the standard library, numpy and pyarrow are imported at module level; pyreadstat
is imported on first use (:func:`pyreadstat_module`), with a one-line error naming the
pip command when it is missing.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .errors import DataError, InvalidParameterError

__all__ = [
    "STAT_SUFFIXES",
    "STAT_FORMATS",
    "WRITABLE_FORMATS",
    "INPUT_FORMATS",
    "OUTPUT_FORMATS",
    "FORMAT_NAMES",
    "META_KEY",
    "PYREADSTAT_INSTALL_HINT",
    "pyreadstat_module",
    "check_writable",
    "check_spss_names",
    "read_stat",
    "stat_writer",
    "write_stat",
    "stat_meta",
    "schema_json",
    "permute_codes",
    "declared_missing_counts",
    "declared_missing_message",
    "code_written_back",
    "storage_changes",
    "report_fields",
    "set_spss_weight",
]

#: File extension -> format name.
STAT_SUFFIXES = {".sav": "sav", ".zsav": "zsav", ".dta": "dta", ".sas7bdat": "sas7bdat", ".xpt": "xpt"}
STAT_FORMATS = ("sav", "zsav", "dta", "sas7bdat", "xpt")
#: Formats ``sdc`` writes (.sas7bdat has no open writer: SAS transport .xpt instead).
WRITABLE_FORMATS = ("sav", "zsav", "dta", "xpt")
#: ``--input-format`` / ``--output-format`` choices of every command (Excel is read, not written).
INPUT_FORMATS = ("csv", "parquet", "xlsx") + STAT_FORMATS
OUTPUT_FORMATS = ("csv", "parquet") + WRITABLE_FORMATS
FORMAT_NAMES = {"sav": "SPSS .sav", "zsav": "SPSS .zsav", "dta": "Stata .dta", "sas7bdat": "SAS .sas7bdat",
                "xpt": "SAS transport .xpt"}
#: Schema-metadata key of the file's labels, formats and declared missing codes (JSON).
META_KEY = b"sdc.statfile"
PYREADSTAT_INSTALL_HINT = "pip install 'pyreadstat>=1.3'"

_FAMILY = {"sav": "spss", "zsav": "spss", "dta": "stata", "sas7bdat": "sas", "xpt": "sas"}


def pyreadstat_module() -> Any:
    """``import pyreadstat``, or a one-line usage error (exit code 2) naming the pip command."""
    try:
        import pyreadstat
    except ImportError:
        raise InvalidParameterError("SPSS, Stata and SAS files need pyreadstat, which is not installed: "
                                    f"{PYREADSTAT_INSTALL_HINT}") from None
    return pyreadstat


def check_writable(fmt: str) -> None:
    """A usage error for a format ``sdc`` cannot write (.sas7bdat, .xlsx)."""
    if fmt == "xlsx":
        raise InvalidParameterError("Excel .xlsx files are read, not written: give an output format sdc writes "
                                    "by its extension (-o NAME.csv, which Excel opens, or NAME.parquet)")
    if fmt == "sas7bdat":
        raise InvalidParameterError("SAS .sas7bdat files cannot be written (there is no open writer for them); "
                                    "write a SAS transport file instead: -o NAME.xpt")


# ------------------------------------------------------------------------- reading


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _b64(arr: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii")


def _unb64(text: str, dtype: Any) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype)


def _check_not_encrypted(src: Path, fmt: str) -> None:
    try:
        with open(src, "rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        raise DataError(f"{src}: cannot read ({exc.strerror})") from None
    if fmt in ("sav", "zsav") and b"ENCRYPTED" in head:
        raise DataError(f"{src}: an encrypted (password-protected) SPSS file; save it without a password "
                        "in SPSS first (File > Save As, no encryption)")
    if not head:
        raise DataError(f"{src}: the file is empty")


def _arrow_type(storage: str) -> Any:
    import pyarrow as pa

    return {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "float": pa.float32()}.get(
        storage, pa.float64())


def _json_value(v: Any) -> Any:
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (np.integer, int)) and not isinstance(v, bool):
        return int(v)
    return str(v)


def _code_label(labels: list[list[Any]], code: Any) -> str | None:
    for value, label in labels:
        if value == code or (isinstance(code, str) and isinstance(value, str) and value.lower() == code.lower()):
            return str(label)
    return None


def read_stat(src: Path, fmt: str) -> Any:
    """Read an SPSS, Stata or SAS file into a ``pyarrow.Table`` (metadata in :data:`META_KEY`).

    Raises :class:`DataError` (exit code 3, one line) for a file that is not one of its
    format, is truncated, encrypted or empty, or has no rows.
    """

    prs = pyreadstat_module()
    _check_not_encrypted(src, fmt)
    reader = {"sav": prs.read_sav, "zsav": prs.read_sav, "dta": prs.read_dta, "sas7bdat": prs.read_sas7bdat,
              "xpt": prs.read_xport}[fmt]
    kwargs: dict[str, Any] = {"disable_datetime_conversion": True}
    if fmt != "xpt":  # read_xport has no user_missing: special missings are found in the bytes below
        kwargs["user_missing"] = True
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame, meta = (_read_dta_pandas(src, prs) if fmt == "dta" else None) or reader(str(src), **kwargs)
        special = _xpt_special_missing(src, [str(c) for c in meta.column_names], len(frame)) if fmt == "xpt" else {}
    except Exception as exc:  # ReadstatError, PyreadstatError, UnicodeError, OSError, ...
        raise DataError(f"{src}: not a readable {FORMAT_NAMES[fmt]} file ({_first_line(exc)})") from None
    for w in caught:  # pyreadstat renames a repeated name ('x' -> 'x_duplicated1'): a duplicate column, as in CSV
        found = re.search(r"column '(.*)' is duplicated, renamed to", str(w.message))
        if found:
            raise DataError(f"{src}: duplicate column {found.group(1)!r}")
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    declared = getattr(meta, "number_rows", None)
    if declared is not None and declared >= 0 and declared != len(frame):
        raise DataError(f"{src}: the file is truncated or damaged (its header declares {declared} records, "
                        f"{len(frame)} could be read)")
    if len(frame) == 0:
        raise DataError(f"{src}: the file has no rows")
    try:
        return _arrow_table(src, fmt, frame, meta, special)
    except (KeyError, ValueError, TypeError, IndexError, OverflowError) as exc:  # a damaged dictionary
        raise DataError(f"{src}: not a readable {FORMAT_NAMES[fmt]} file (its variable dictionary is damaged: "
                        f"{type(exc).__name__} {_first_line(exc)[:80]})") from None


def _arrow_table(src: Path, fmt: str, frame: Any, meta: Any, special: dict[str, Any]) -> Any:
    """The Arrow table of a file pyreadstat read (see :func:`read_stat`)."""
    import pyarrow as pa

    names = [str(c) for c in meta.column_names]
    if names != [str(c) for c in frame.columns]:
        raise DataError(f"{src}: not a readable {FORMAT_NAMES[fmt]} file (its variable names do not match its data)")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{src}: duplicate column {dup[0]!r}")
    rtypes = dict(meta.readstat_variable_types or {})
    labels = dict(meta.column_names_to_labels or {})
    value_labels = dict(meta.variable_value_labels or {})
    formats = dict(meta.original_variable_types or {})
    ranges = dict(getattr(meta, "missing_ranges", None) or {})
    widths = dict(getattr(meta, "variable_display_width", None) or {})
    measures = dict(getattr(meta, "variable_measure", None) or {})
    arrays, columns, codes = [], {}, {}
    for name in names:
        storage = rtypes.get(name, "double")
        col = frame[name]
        info: dict[str, Any] = {"storage": storage}
        if labels.get(name):
            info["label"] = str(labels[name])
        if value_labels.get(name):
            info["value_labels"] = [[_json_value(v), str(lab)] for v, lab in value_labels[name].items()]
        if formats.get(name):
            info["format"] = str(formats[name])
        if widths.get(name) is not None and fmt in ("sav", "zsav"):
            info["width"] = int(widths[name])
        if measures.get(name) and fmt in ("sav", "zsav"):
            info["measure"] = str(measures[name])
        if storage == "string":
            if name in ranges:
                info["missing_ranges"] = [{"lo": _json_value(r["lo"]), "hi": _json_value(r["hi"])}
                                          for r in ranges[name]]
            arrays.append(pa.array(col.astype(object).where(col.notna(), None).tolist(), type=pa.string()))
            columns[name] = info
            continue
        values = col.to_numpy()
        code_of: np.ndarray | None = None  # per cell: the code, or None
        if values.dtype == object or not np.issubdtype(values.dtype, np.number):
            obj = np.asarray(values, dtype=object)
            is_code = np.fromiter((isinstance(v, str) for v in obj), dtype=bool, count=obj.size)
            nums = np.full(obj.size, np.nan)
            keep = ~is_code
            if keep.any():
                nums[keep] = np.array([np.nan if v is None else v for v in obj[keep]], dtype=np.float64)
            if is_code.any():
                code_of = np.where(is_code, obj, None)
        else:
            nums = np.asarray(values, dtype=np.float64).copy()
        if name in special:
            code_of = np.full(nums.size, None, dtype=object)
            code_of[special[name][0]] = special[name][1]
            nums[special[name][0]] = np.nan
        if name in ranges and ranges[name]:
            info["missing_ranges"] = [{"lo": float(r["lo"]), "hi": float(r["hi"])} for r in ranges[name]]
            hit = np.zeros(nums.size, dtype=bool)
            for r in ranges[name]:
                hit |= (nums >= float(r["lo"])) & (nums <= float(r["hi"]))
            if hit.any():
                code_of = np.where(hit, nums.astype(object), None)
                nums[hit] = np.nan
        null = np.isnan(nums)
        if code_of is not None:
            rows = np.flatnonzero(np.not_equal(code_of, None))
            distinct: list[Any] = []
            index = np.empty(rows.size, dtype=np.int32)
            seen: dict[Any, int] = {}
            for i, r in enumerate(rows):
                c = _json_value(code_of[r])
                if c not in seen:
                    seen[c] = len(distinct)
                    distinct.append(c)
                index[i] = seen[c]
            codes[name] = {"codes": distinct, "rows": _b64(rows.astype(np.int64)), "index": _b64(index)}
        typ = _arrow_type(storage)
        if pa.types.is_integer(typ):
            arrays.append(pa.array(np.where(null, 0, nums).astype(typ.to_pandas_dtype()), type=typ,
                                   mask=null if null.any() else None))
        elif typ == pa.float32():
            arrays.append(pa.array(nums.astype(np.float32), type=typ, mask=null if null.any() else None))
        else:
            arrays.append(pa.array(nums, type=typ, mask=null if null.any() else None))
        columns[name] = info
    info_file: dict[str, Any] = {
        "format": fmt,
        "file_label": getattr(meta, "file_label", None) or None,
        "encoding": getattr(meta, "file_encoding", None) or None,
        "table_name": getattr(meta, "table_name", None) or None,
        "notes": list(getattr(meta, "notes", None) or []),
        "weight": _sav_weight(src, names) if fmt in ("sav", "zsav") else None,
        "rows": len(frame),
        "columns": columns,
        "codes": codes,
    }
    schema = pa.schema([pa.field(n, a.type) for n, a in zip(names, arrays)],
                       metadata={META_KEY: json.dumps(info_file, allow_nan=False).encode("utf-8")})
    return pa.Table.from_arrays(arrays, schema=schema)


def _read_dta_pandas(src: Path, prs: Any) -> tuple[Any, Any] | None:
    """A Stata file's data as pandas reads it (about 10x faster than ReadStat's row by row
    parse), shaped as pyreadstat's ``user_missing=True`` frame (extended missings as their
    letter, system missings as None); the metadata from pyreadstat (``metadataonly``).
    None when pandas cannot read the file: pyreadstat then reads it (or says why not)."""

    import pandas as pd

    try:
        _empty, meta = prs.read_dta(str(src), metadataonly=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = pd.read_stata(src, convert_dates=False, convert_categoricals=False, convert_missing=True,
                                  preserve_dtypes=True, order_categoricals=False)
    except Exception:  # noqa: BLE001 - pyreadstat gives the error
        return None
    if [str(c) for c in frame.columns] != [str(c) for c in meta.column_names]:
        return None
    missing_type = pd.io.stata.StataMissingValue
    for name in frame.columns:
        col = frame[name]
        if col.dtype != object or meta.readstat_variable_types.get(name) == "string":
            continue
        obj = col.to_numpy(dtype=object)
        mv = np.fromiter((isinstance(v, missing_type) for v in obj), dtype=bool, count=obj.size)
        if mv.any():
            obj = obj.copy()
            obj[mv] = [None if v.string == "." else v.string[1:] for v in obj[mv]]
            frame[name] = obj
    return frame, meta


def schema_json(metadata: Any, key: Any) -> dict[str, Any] | None:
    """The JSON object stored under ``key`` in an Arrow schema's metadata (None if absent or not an object)."""
    raw = (metadata or {}).get(key)
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def stat_meta(data: Any) -> dict[str, Any] | None:
    """The statfile metadata of an Arrow table (None when it was not read from one)."""
    return schema_json(getattr(data, "schema", None) and data.schema.metadata, META_KEY)


def _with_meta(data: Any, meta: dict[str, Any]) -> Any:
    md = dict(data.schema.metadata or {})
    md[META_KEY] = json.dumps(meta, allow_nan=False).encode("utf-8")
    return data.replace_schema_metadata(md)


def _cell_codes(meta: dict[str, Any], name: str) -> tuple[np.ndarray, list[Any], np.ndarray]:
    entry = meta["codes"][name]
    return _unb64(entry["rows"], np.int64), list(entry["codes"]), _unb64(entry["index"], np.int32)


def permute_codes(data: Any, order: Any) -> Any:
    """``data`` (rows already taken in ``order``) with its declared missing codes moved
    along: output row i is input row ``order[i]``. No-op for tables without codes."""
    meta = stat_meta(data)
    if not meta or not meta.get("codes"):
        return data
    order = np.asarray(order, dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    for name in list(meta["codes"]):
        rows, _codes, index = _cell_codes(meta, name)
        new = inverse[rows]
        srt = np.argsort(new, kind="stable")
        meta["codes"][name]["rows"] = _b64(new[srt])
        meta["codes"][name]["index"] = _b64(index[srt].astype(np.int32))
    return _with_meta(data, meta)


# ------------------------------------------------------------------ report helpers


def declared_missing_counts(data: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """``{column: {code: {"label": str|None, "count": n}}}`` of the declared missing codes."""
    meta = stat_meta(data)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if not meta:
        return out
    for name in meta.get("codes", {}):
        _rows, codes, index = _cell_codes(meta, name)
        counts = np.bincount(index, minlength=len(codes))
        vl = meta["columns"].get(name, {}).get("value_labels", [])
        pairs = sorted(zip(codes, counts), key=lambda cn: (isinstance(cn[0], str), cn[0]))
        out[name] = {_code_text(c, meta["format"]): {"label": _code_label(vl, c), "count": int(n)}
                     for c, n in pairs if n}
    return out


def _code_text(code: Any, fmt: str) -> str:
    if isinstance(code, str):
        return "." + code
    if isinstance(code, float) and code.is_integer():
        return str(int(code))
    return str(code)


def declared_missing_message(data: Any, name: str) -> str | None:
    """The one-line error for declared missing codes in a protected column under
    ``--missing error`` (None when ``name`` holds none)."""
    meta = stat_meta(data)
    if not meta or name not in meta.get("codes", {}):
        return None
    rows, codes, index = _cell_codes(meta, name)
    first = int(np.argmin(rows))
    code = codes[int(index[first])]
    label = _code_label(meta["columns"].get(name, {}).get("value_labels", []), code)
    what = _code_text(code, meta["format"]) + (f" ({label!r})" if label else "")
    keeps = ("an SPSS output (.sav, .zsav) writes them back as they were, other outputs hold plain missing values"
             if _FAMILY.get(meta.get("format", "")) == "spss" else
             "a Stata (.dta) or SAS transport (.xpt) output writes them back as they were, other outputs hold plain "
             "missing values")
    return (f"column {name!r} holds declared missing codes in {rows.size} row(s), the first {what} in row "
            f"{int(rows[first]) + 1}; they are missing, not numbers: use --missing complete (leave those records "
            f"out) or, without --categorical/--ordinal keys, --missing available (group on the observed values); "
            f"{keeps}")


def code_written_back(code: str, out_fmt: str) -> bool:
    """Does an output of format ``out_fmt`` hold the declared missing code ``code`` (as the
    report shows it: ``99998`` for SPSS, ``.a`` for Stata, ``.A`` / ``._`` for SAS)? CSV and
    Parquet hold none (the cell is plain missing); SPSS holds numeric codes, Stata the
    letters ``.a``-``.z``, SAS transport the letters and ``._``."""
    family = _FAMILY.get(out_fmt)
    letter = len(code) == 2 and code[0] == "."
    if family == "spss":
        return not letter
    if family == "stata":
        return letter and code[1].isalpha()
    if family == "sas":
        return letter and (code[1].isalpha() or code[1] == "_")
    return False


def _out_storage(field_type: Any, fmt: str, name: str, meta: dict[str, Any] | None) -> str:
    import pyarrow as pa

    if pa.types.is_string(field_type) or pa.types.is_large_string(field_type):
        return "string"
    if fmt in ("sav", "zsav", "xpt"):
        return "double"
    if fmt == "dta":
        return "int32" if pa.types.is_integer(field_type) else "double"
    if fmt == "parquet":
        return {"float": "float32"}.get(str(field_type), str(field_type))
    return "text"


def storage_changes(in_data: Any, out_data: Any, out_fmt: str) -> list[dict[str, str]]:
    """Columns whose storage type differs between input and output (``{"column", "from", "to"}``):
    protected integer columns become doubles; Stata byte/int/float columns are written as
    long/double (pyreadstat writes no narrower types)."""
    meta = stat_meta(in_data) or {}
    cols = meta.get("columns", {})
    out = []
    for field in out_data.schema:
        name = field.name
        if name not in in_data.column_names:
            continue
        src_type = in_data.schema.field(name).type
        before = cols.get(name, {}).get("storage") or _out_storage(src_type, "parquet", name, None)
        if before == "float":
            before = "float32"
        after = _out_storage(field.type, out_fmt, name, meta)
        if out_fmt == "csv" or before == after:
            continue
        out.append({"column": name, "from": before, "to": after})
    return out


def report_fields(rep: dict[str, Any], table_data: Any, out_data: Any, in_fmt: str, out_fmt: str) -> None:
    """Add the statfile fields to a protect report (declared missing codes per column
    and code, storage type changes, file label, encoding and weight variable)."""
    if in_fmt not in STAT_FORMATS and out_fmt not in STAT_FORMATS:
        return
    meta = stat_meta(table_data)
    if meta:
        rep["input"]["file_label"] = meta.get("file_label")
        rep["input"]["encoding"] = meta.get("encoding")
        rep["input"]["weight_variable"] = meta.get("weight")
        rep["declared_missing"] = declared_missing_counts(table_data)
    rep["output"]["format"] = out_fmt
    rep["output"]["storage_changes"] = storage_changes(table_data, out_data, out_fmt)


# ------------------------------------------------------------------------- writing


def _pandas_frame(data: Any, meta: dict[str, Any] | None, fmt: str) -> tuple[Any, dict[str, Any]]:
    """The pandas frame pyreadstat writes, with declared missing codes put back, and
    the writer's keyword arguments (labels, formats, missing declarations)."""
    import pandas as pd
    import pyarrow as pa

    meta = meta or {}
    src_family = _FAMILY.get(meta.get("format", ""), "")
    family = _FAMILY[fmt]
    cols = meta.get("columns", {})
    frame: dict[str, Any] = {}
    column_labels: dict[str, str] = {}
    value_labels: dict[str, dict[Any, str]] = {}
    formats: dict[str, str] = {}
    widths: dict[str, int] = {}
    measures: dict[str, str] = {}
    ranges: dict[str, list[Any]] = {}
    user_values: dict[str, list[str]] = {}
    tags: dict[str, dict[int, str]] = {}  # xpt: column -> {row: letter}, patched after writing
    for field in data.schema:
        name = field.name
        col = data.column(name)
        info = cols.get(name, {})
        is_text = pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
        if is_text:
            series = pd.Series(col.to_pylist(), dtype=object)
            series = series.where(series.notna(), "")
        elif numeric:
            arr = col.combine_chunks() if col.num_chunks != 1 else (col.chunk(0) if col.num_chunks else
                                                                   pa.array([], type=field.type))
            if pa.types.is_integer(field.type) and fmt == "dta":
                series = pd.Series(arr.to_pandas(integer_object_nulls=False)).astype("Int64") \
                    if arr.null_count else pd.Series(arr.to_numpy(zero_copy_only=False).astype(np.int64))
            else:
                series = pd.Series(np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False),
                                              dtype=np.float64).copy())
        else:
            series = col.to_pandas()
        if numeric and name in meta.get("codes", {}):
            rows, codes, index = _cell_codes(meta, name)
            vals = [codes[int(i)] for i in index]
            null = series.isna().to_numpy()
            ok = rows < len(series)
            rows, vals = rows[ok], [v for v, keep in zip(vals, ok) if keep]
            put = [(int(r), v) for r, v in zip(rows, vals) if null[r]]
            if family == "spss":
                put = [(r, float(v)) for r, v in put if not isinstance(v, str)]
                if put:
                    series = series.astype(np.float64)
                    series.iloc[[r for r, _ in put]] = [v for _, v in put]
            elif family == "stata":
                put = [(r, v.lower()) for r, v in put if isinstance(v, str) and v.isalpha()]
                if put:
                    series = series.astype(object)
                    series.iloc[[r for r, _ in put]] = [v for _, v in put]
                    user_values[name] = sorted({v for _, v in put})
            else:  # xpt: pyreadstat cannot write SAS special missings; patched in afterwards
                put = [(r, v.upper()) for r, v in put if isinstance(v, str)]
                if put:
                    tags[name] = dict(put)
        frame[name] = series
        if info.get("label"):
            column_labels[name] = info["label"]
        same_family = src_family == family
        if info.get("value_labels") and family != "sas":
            vl: dict[Any, str] = {}
            for v, lab in info["value_labels"]:
                if is_text:
                    vl[str(v)] = lab
                elif isinstance(v, str):
                    if family == "stata" and v.isalpha() and len(v) == 1:
                        vl[v.lower()] = lab
                        user_values.setdefault(name, [])
                        if v.lower() not in user_values[name]:
                            user_values[name] = sorted(user_values[name] + [v.lower()])
                elif family == "stata" and series.dtype != object and pd.api.types.is_integer_dtype(series.dtype):
                    if float(v).is_integer():
                        vl[int(v)] = lab
                else:
                    vl[float(v)] = lab
            if vl:
                value_labels[name] = vl
        if same_family and info.get("format") and not is_text:
            formats[name] = info["format"]
        if family == "spss":
            if info.get("width") is not None:
                widths[name] = int(info["width"])
            if info.get("measure") and info["measure"] in ("nominal", "ordinal", "scale"):
                measures[name] = info["measure"]
            if info.get("missing_ranges") and src_family == "spss":
                spec: list[Any] = []
                for r in info["missing_ranges"]:
                    spec.append(r["lo"] if r["lo"] == r["hi"] else {"lo": r["lo"], "hi": r["hi"]})
                ranges[name] = spec
    out = pd.DataFrame(frame)
    kwargs: dict[str, Any] = {"file_label": meta.get("file_label") or "", "column_labels": column_labels or None}
    if family == "spss":
        kwargs.update(variable_value_labels=value_labels or None, missing_ranges=ranges or None,
                      variable_display_width=widths or None, variable_measure=measures or None,
                      variable_format=formats or None, compress=fmt == "zsav")
        if meta.get("notes"):
            kwargs["note"] = meta["notes"]
    elif family == "stata":
        user_values = {k: v for k, v in user_values.items() if v}
        # format 118 (Stata 14 and later, pandas, R haven) unless there are more variables than it holds
        kwargs.update(variable_value_labels=value_labels or None, missing_user_values=user_values or None,
                      variable_format=formats or None, version=14 if len(out.columns) <= 32_767 else 15)
    else:
        # version 5 (what pandas and every SAS read) when the names and labels fit, else 8
        v5 = all(len(str(n)) <= 8 for n in out.columns) and all(len(v) <= 40 for v in column_labels.values())
        kwargs.update(variable_format=formats or None, table_name=meta.get("table_name") or None,
                      file_format_version=5 if v5 else 8)
    kwargs["_tags"] = tags
    return out, kwargs


def check_spss_names(names: list[str], fmt: str, shown: str) -> None:
    """SPSS variable names are case-insensitive: ``Income`` and ``income`` in one .sav or
    .zsav output would be one variable (exit code 3, naming both)."""
    if fmt not in ("sav", "zsav"):
        return
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(str(name).casefold(), str(name))
        if other != name:
            raise DataError(f"cannot write {FORMAT_NAMES[fmt]} file {shown!r}: columns {other!r} and {name!r} differ "
                            "only in case, and SPSS names are case-insensitive; rename one, --drop one, "
                            "or write another format")


def write_stat(data: Any, path: str | Path, fmt: str, *, shown: str | None = None) -> None:
    """Write an Arrow table (read by :func:`read_stat`, or any other) as ``fmt`` to ``path``;
    ``shown``: the file name messages give (default: ``path``'s name)."""
    check_writable(fmt)
    shown = Path(path).name if shown is None else shown
    check_spss_names([str(n) for n in data.column_names], fmt, shown)
    prs = pyreadstat_module()
    meta = stat_meta(data)
    frame, kwargs = _pandas_frame(data, meta, fmt)
    tags = kwargs.pop("_tags")
    try:
        if fmt in ("sav", "zsav"):
            prs.write_sav(frame, str(path), **kwargs)
        elif fmt == "dta":
            prs.write_dta(frame, str(path), **kwargs)
        else:
            prs.write_xport(frame, str(path), **kwargs)
    except Exception as exc:  # PyreadstatError, ReadstatError, ValueError, TypeError
        raise DataError(f"cannot write {FORMAT_NAMES[fmt]} file {shown!r}: {_first_line(exc)}") from None
    if fmt in ("sav", "zsav") and meta and meta.get("weight") and meta["weight"] in frame.columns:
        set_spss_weight(Path(path), list(frame.columns).index(meta["weight"]))
    if fmt == "xpt" and tags:
        _xpt_tag_missing(Path(path), list(frame.columns), tags, shown)


def stat_writer(data: Any, fmt: str, name: str | None = None) -> Callable[[Any], None]:
    """``writer(fh)`` for :class:`microagg_cli.outputs.OutputSet`: the file is written to a
    private temporary folder (pyreadstat writes to paths) and copied into ``fh``; ``name``:
    the output's real path, which messages give (never the temporary file's)."""
    check_writable(fmt)
    shown = name or ("output." + fmt)
    check_spss_names([str(n) for n in data.column_names], fmt, shown)

    def writer(fh: Any) -> None:
        with tempfile.TemporaryDirectory(prefix="sdc-statfile-") as tmp:
            target = os.path.join(tmp, "out." + fmt)
            write_stat(data, target, fmt, shown=shown)
            with open(target, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 20)

    return writer


# ------------------------------------------------- SPSS weight, SAS special missings
#
# pyreadstat neither reports nor writes the SPSS weight variable, nor writes SAS special
# missings to transport files; both are a few bytes at documented places.


def _sav_dictionary(buf: bytes) -> tuple[str, int, list[tuple[int, bool]]]:
    """(endianness, offset of the header's weight index, [(offset, is a variable's first
    record)]) of an SPSS system file: one entry per 8-byte variable slot (type 2 records)."""
    if buf[:4] not in (b"$FL2", b"$FL3"):
        raise ValueError("not an SPSS system file")
    layout = struct.unpack("<i", buf[64:68])[0]
    e = "<" if layout in (2, 3) else ">"
    pos, slots = 176, []
    while pos + 4 <= len(buf):
        (rec,) = struct.unpack(e + "i", buf[pos:pos + 4])
        if rec == 2:
            typ, has_label, n_missing = struct.unpack(e + "iii", buf[pos + 4:pos + 16])
            slots.append((pos, typ != -1))
            pos += 32
            if has_label:
                (length,) = struct.unpack(e + "i", buf[pos:pos + 4])
                pos += 4 + (length + 3) // 4 * 4
            pos += abs(n_missing) * 8
        elif rec == 3:
            (count,) = struct.unpack(e + "i", buf[pos + 4:pos + 8])
            pos += 8
            for _ in range(count):
                length = buf[pos + 8]
                pos += 8 + (length + 8) // 8 * 8
        elif rec == 4:
            (count,) = struct.unpack(e + "i", buf[pos + 4:pos + 8])
            pos += 8 + 4 * count
        elif rec == 6:
            (count,) = struct.unpack(e + "i", buf[pos + 4:pos + 8])
            pos += 8 + 80 * count
        elif rec == 7:
            _sub, size, count = struct.unpack(e + "iii", buf[pos + 4:pos + 16])
            pos += 16 + size * count
        else:  # 999: end of the dictionary
            break
    return e, 76, slots


def _sav_weight(src: Path, names: list[str]) -> str | None:
    """The name of an SPSS file's weight variable (None when it has none)."""
    try:
        with open(src, "rb") as fh:
            buf = fh.read(1 << 22)
        e, at, slots = _sav_dictionary(buf)
        (index,) = struct.unpack(e + "i", buf[at:at + 4])
        if index <= 0 or index > len(slots):
            return None
        var = sum(1 for _pos, first in slots[:index] if first) - 1
        return names[var] if 0 <= var < len(names) else None
    except (OSError, ValueError, struct.error, IndexError):
        return None


def set_spss_weight(path: Path, column: int) -> None:
    with open(path, "r+b") as fh:
        buf = fh.read(1 << 22)
        e, at, slots = _sav_dictionary(buf)
        firsts = [i for i, (_pos, first) in enumerate(slots) if first]
        if column >= len(firsts):
            return
        fh.seek(at)
        fh.write(struct.pack(e + "i", firsts[column] + 1))


def _xpt_layout(buf: bytes | bytearray, nvars: int) -> tuple[int, int, list[tuple[int, int, int]]]:
    """(offset of the first observation, record length, [(type, length, position)] per
    variable) of a SAS transport file (versions 5 and 8; NAMESTR records of 140 bytes)."""
    for marker in (b"NAMSTV8 HEADER RECORD", b"NAMSTV9 HEADER RECORD", b"NAMESTR HEADER RECORD"):
        at = buf.find(b"HEADER RECORD*******" + marker)
        if at >= 0:
            break
    else:
        raise ValueError("no NAMESTR header")
    start = at + 80
    variables = []
    for j in range(nvars):
        rec = bytes(buf[start + 140 * j:start + 140 * (j + 1)])
        variables.append((struct.unpack(">h", rec[0:2])[0], struct.unpack(">h", rec[4:6])[0],
                          struct.unpack(">i", rec[84:88])[0]))
    for marker in (b"HEADER RECORD*******OBSV8   HEADER RECORD", b"HEADER RECORD*******OBSV9   HEADER RECORD",
                   b"HEADER RECORD*******OBS     HEADER RECORD"):
        obs = buf.find(marker, start)
        if obs >= 0:
            return obs + 80, sum(length for _t, length, _p in variables), variables
    raise ValueError("no OBS header")


_XPT_TAGS = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ_", dtype=np.uint8)


def _xpt_special_missing(src: Path, names: list[str], n_rows: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Cells of a SAS transport file holding special missings: ``{column: (rows, letters)}``
    (pyreadstat reads them as plain missing values)."""
    buf = src.read_bytes()
    if len(buf) % 80:  # transport files are 80-byte records, the last one padded
        raise ValueError("truncated: the length is not a whole number of 80-byte records")
    data_start, reclen, variables = _xpt_layout(buf, len(names))
    if reclen <= 0 or data_start + n_rows * reclen > len(buf):
        raise ValueError("the observations are shorter than the header declares")
    records = np.frombuffer(buf, dtype=np.uint8, count=n_rows * reclen, offset=data_start).reshape(n_rows, reclen)
    out = {}
    for name, (typ, length, pos) in zip(names, variables):
        if typ != 1 or length < 2:
            continue
        cells = records[:, pos:pos + length]
        hit = np.isin(cells[:, 0], _XPT_TAGS) & ~cells[:, 1:].any(axis=1)
        if hit.any():
            rows = np.flatnonzero(hit)
            out[name] = (rows, np.array([chr(b) for b in cells[rows, 0]], dtype=object))
    return out


def _xpt_tag_missing(path: Path, names: list[str], tags: dict[str, dict[int, str]], shown: str | None = None) -> None:
    """Turn system-missing cells of a SAS transport file into special missings ``.A``-``.Z``, ``._``."""
    buf = bytearray(path.read_bytes())
    try:
        data_start, reclen, variables = _xpt_layout(buf, len(names))
    except ValueError as exc:
        raise DataError(f"cannot write SAS special missings into {shown or path.name!r}: {exc}") from None
    for name, cells in tags.items():
        pos = variables[names.index(name)][2]
        for row, letter in cells.items():
            off = data_start + row * reclen + pos
            if buf[off] == 0x2E:  # a system missing: "." then zeros
                buf[off] = ord(letter)
    path.write_bytes(bytes(buf))
