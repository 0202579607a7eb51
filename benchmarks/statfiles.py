"""Reading and protecting SPSS/Stata files against the same data as Parquet
(declared missing codes and labels kept).

    python benchmarks/statfiles.py [--rows 200000] [--repeat 3]

The household survey's rows repeated to ``--rows`` records (15 numeric columns), every
97th income a declared missing code (SPSS user-missing 9999999, Stata ``.a``; null in
the Parquet file). Prints the best of ``--repeat`` in-process ``read_table`` times and
one ``sdc protect -k 3 --columns income,expend,savings --missing complete`` run per
format (read, MDAV, write), in seconds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pyreadstat

ROOT = Path(__file__).resolve().parent.parent
CODE = 9999999.0


def make(folder: Path, rows: int) -> dict[str, Path]:
    base = pd.read_csv(ROOT / "sample_data" / "household.csv").astype("float64")
    big = pd.concat([base] * (rows // len(base) + 1), ignore_index=True).iloc[:rows].copy()
    big["ori_hid"] = np.arange(1, rows + 1, dtype=np.float64)
    coded = np.zeros(rows, dtype=bool)
    coded[::97] = True
    paths = {fmt: folder / f"big.{fmt}" for fmt in ("parquet", "sav", "dta")}
    pq.write_table(pa.Table.from_pandas(big.assign(income=big["income"].mask(coded)), preserve_index=False),
                   paths["parquet"])
    pyreadstat.write_sav(big.assign(income=big["income"].mask(coded, CODE)), paths["sav"],
                         missing_ranges={"income": [CODE]})
    dta = big.assign(income=big["income"].astype(object).mask(coded, "a"))
    pyreadstat.write_dta(dta, paths["dta"], missing_user_values={"income": ["a"]})
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-protect", action="store_true", help="only the reads")
    args = parser.parse_args()
    from microagg_cli.io import read_table

    with tempfile.TemporaryDirectory() as tmp:
        paths = make(Path(tmp), args.rows)
        reads = {}
        for fmt, path in paths.items():
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                read_table(path)
                times.append(time.perf_counter() - t0)
            reads[fmt] = min(times)
        base = reads["parquet"]
        print(f"read_table, {args.rows:,} x 15, best of {args.repeat}:")
        for fmt, t in reads.items():
            print(f"  {fmt:8s} {t:7.3f} s  {t / base:5.1f}x Parquet")
        if args.no_protect:
            return
        print("sdc protect -k 3 --columns income,expend,savings --missing complete (read + MDAV + write):")
        runs = {}
        for fmt, path in paths.items():
            out = Path(tmp) / f"out.{fmt}"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "microagg_cli", "protect", str(path), "-o", str(out), "-k", "3",
                            "--columns", "income,expend,savings", "--missing", "complete", "-q", "--force"],
                           check=True)
            runs[fmt] = time.perf_counter() - t0
        for fmt, t in runs.items():
            print(f"  {fmt:8s} {t:7.2f} s  {t / runs['parquet']:5.2f}x Parquet")


if __name__ == "__main__":
    main()
