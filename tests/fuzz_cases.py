"""Malformed input for every reader: seed files, byte mutations, and the one check.

Shared by ``tests/io/test_streams_and_formats.py`` (hypothesis, a bounded number of examples)
and ``benchmarks/fuzz_readers.py`` (minutes of random cases). The check is what the
command line does with an input: read it (:func:`microagg_cli.io.read_table`, or
:func:`microagg_cli.blocking.load_plan` for a plan), then select and parse its columns
the way ``sdc protect`` does. Any exception that is not an
:class:`~microagg_cli.errors.SdcError` (or an ``OSError`` the command line reports with
exit code 3) would be exit code 1, "a bug": the check returns it.
"""

from __future__ import annotations

import gzip
import io
import random
import shutil
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]

#: reader name -> file suffix
SUFFIXES = {
    "csv": ".csv", "tsv": ".tsv", "csv.gz": ".csv.gz", "parquet": ".parquet", "xlsx": ".xlsx",
    "sav": ".sav", "zsav": ".zsav", "dta": ".dta", "xpt": ".xpt", "sas7bdat": ".sas7bdat",
    "plan.toml": ".toml", "plan.json": ".json",
}

_CSV = ("id,income,age,region\n"
        "1,1200.5,34,north\n2,980,41,south\n3,1500,29,north\n4,2200.25,57,east\n"
        "5,1750,45,west\n6,,38,south\n")
_PLAN_TOML = 'version = 1\ndrop = ["id"]\n[defaults]\nmethod = "mdav"\nk = 3\n\n[[blocks]]\nname = "b1"\ncolumns = ["income", "age"]\n'
_PLAN_JSON = '{"version": 1, "drop": ["id"], "defaults": {"method": "mdav", "k": 3},\n "blocks": [{"name": "b1", "columns": ["income", "age"]}]}\n'


def seed_files(folder: Path) -> dict[str, bytes]:
    """Valid files of every format (small), as bytes: what the mutations start from."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyreadstat

    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.read_csv(io.StringIO(_CSV))
    out: dict[str, bytes] = {"csv": _CSV.encode(), "tsv": _CSV.replace(",", "\t").encode(),
                             "csv.gz": gzip.compress(_CSV.encode(), mtime=0),
                             "plan.toml": _PLAN_TOML.encode(), "plan.json": _PLAN_JSON.encode()}
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buf)
    out["parquet"] = buf.getvalue()
    numeric = frame.drop(columns=["region"])
    for fmt, write in (("sav", pyreadstat.write_sav), ("dta", pyreadstat.write_dta),
                       ("xpt", pyreadstat.write_xport)):
        target = folder / f"seed.{fmt}"
        write(numeric, str(target))
        out[fmt] = target.read_bytes()
    target = folder / "seed.zsav"
    pyreadstat.write_sav(numeric, str(target), compress=True)
    out["zsav"] = target.read_bytes()
    out["sas7bdat"] = (ROOT / "tests" / "data" / "sample.sas7bdat").read_bytes()
    try:
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        for row in [list(frame.columns)] + frame.astype(object).where(frame.notna(), None).values.tolist():
            sheet.append(row)
        buf = io.BytesIO()
        book.save(buf)
        out["xlsx"] = buf.getvalue()
    except ImportError:  # pragma: no cover - openpyxl is a dependency
        pass
    return out


def mutate(data: bytes, rnd: random.Random) -> bytes:
    """One malformed variant of ``data``: truncated, bytes flipped, bytes inserted or
    deleted, a block repeated, or random bytes (each with equal chance)."""
    kind = rnd.randrange(6)
    n = len(data)
    if kind == 0 or n == 0:  # truncated
        return data[:rnd.randrange(n + 1)] if n else b""
    if kind == 1:  # corrupted bytes
        out = bytearray(data)
        for _ in range(rnd.randint(1, 8)):
            out[rnd.randrange(n)] = rnd.randrange(256)
        return bytes(out)
    if kind == 2:  # inserted bytes
        at = rnd.randrange(n + 1)
        return data[:at] + bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16))) + data[at:]
    if kind == 3:  # deleted bytes
        at = rnd.randrange(n)
        return data[:at] + data[at + rnd.randint(1, 16):]
    if kind == 4:  # a block repeated
        a = rnd.randrange(n)
        b = min(n, a + rnd.randint(1, 64))
        return data[:b] + data[a:b] + data[b:]
    return bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 512)))  # random bytes


def check(path: Path, reader: str) -> BaseException | None:
    """Read ``path`` as ``sdc protect`` would; the exception that would be exit code 1, or None."""
    from microagg_cli.errors import SdcError

    try:
        _exercise(path, reader)
    except (SdcError, OSError):
        return None
    except Exception as exc:  # noqa: BLE001 - what the check is for
        return exc
    return None


def _exercise(path: Path, reader: str) -> None:
    from microagg_cli import io as sio
    from microagg_cli.blocking import load_plan

    from microagg_cli.errors import SdcError

    if reader.startswith("plan."):
        load_plan(path)
        return
    if reader in ("csv", "tsv", "parquet"):  # the streaming readers (--engine local) too
        from microagg_cli.engines import open_source
        from microagg_cli.request import ReadOptions

        try:
            src = open_source(path, ReadOptions())
            for name in src.columns:
                sio.default_column(sio.Table(src.read_column(name), "csv" if reader != "parquet" else "parquet",
                                             path), name)
        except SdcError:
            pass
    table = sio.read_table(path)
    columns = table.columns
    try:
        protected, _drop = sio.resolve_columns(table, None)
    except SdcError:
        protected = []
    for name in columns:
        sio.column_values(table, name)
        sio.missing_mask(table, name)
    if protected:
        sio.numeric_matrix(table, protected, allow_missing=True)


def write_case(folder: Path, reader: str, data: bytes) -> Path:
    """``data`` as a file of ``reader``'s suffix in ``folder``."""
    path = folder / ("case" + SUFFIXES[reader])
    path.write_bytes(data)
    return path


def run_cases(folder: Path, seeds: dict[str, bytes], rnd: random.Random, count: int,
              on_case: Callable[[str, bytes], None] | None = None) -> list[tuple[str, bytes, BaseException]]:
    """``count`` random malformed cases over every reader; the failures found."""
    failures = []
    readers = sorted(seeds)
    for _ in range(count):
        reader = rnd.choice(readers)
        data = mutate(seeds[reader], rnd)
        if on_case is not None:
            on_case(reader, data)
        path = write_case(folder, reader, data)
        exc = check(path, reader)
        if exc is not None:
            failures.append((reader, data, exc))
    shutil.rmtree(folder / "scratch", ignore_errors=True)
    return failures
