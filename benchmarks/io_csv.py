"""CSV at scale: read and write time and peak memory of the I/O layer.

Generates a seeded CSV of N rows x 11 columns (a text id with leading zeros and ten
numeric columns of 12-16 significant digits, about 197 bytes a row: 1,000,000 rows is
the issue's 197 MB file), then times, each in a fresh subprocess (peak RSS = the
child's ``ru_maxrss``):

* ``read``: ``io.read_table`` (pyarrow CSV, all text);
* ``parse``: ``read_table`` + ``numeric_matrix`` of the ten numeric columns;
* ``write``: ``assemble_output`` (ten protected float columns) + ``write_table`` CSV
  (the time of the write alone is reported);

for the current tree (``new``) and for ``microagg_cli/io.py`` of an earlier git revision
(``old``: ``--before REV``, default the newest commit whose io.py predates the Arrow
reader, i.e. pandas ``read_csv(dtype=str)`` and pandas ``to_csv``), imported from a copy
in a temporary folder.

Usage::

    python benchmarks/io_csv.py                   # 1,000,000 rows, new and HEAD
    python benchmarks/io_csv.py --rows 200000 --no-before
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["id"] + [f"x{j}" for j in range(10)]


def generate(path: Path, n: int, seed: int = 20261126) -> None:
    """Write the seeded benchmark CSV (chunks of 100,000 rows)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(COLUMNS) + "\n")
        for start in range(0, n, 100_000):
            m = min(100_000, n - start)
            cols = [np.char.zfill((np.arange(start, start + m) + 1).astype(str), 8)]
            for j in range(10):
                v = rng.lognormal(mean=8 + j % 3, sigma=1.0, size=m) * rng.choice([1, -1], size=m, p=[0.9, 0.1])
                cols.append(np.array([repr(float(x)) for x in v], dtype=object))
            fh.write("\n".join(",".join(row) for row in zip(*cols)) + "\n")


def _pandas_revision() -> str:
    """The newest commit whose microagg_cli/io.py reads CSV with pandas."""
    revs = subprocess.run(["git", "log", "--format=%H", "--", "microagg_cli/io.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.split()
    for rev in revs:
        text = subprocess.run(["git", "show", f"{rev}:microagg_cli/io.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        if "read_csv_arrow" not in text and "pd.read_csv" in text:
            return rev
    raise SystemExit("no revision of microagg_cli/io.py with the pandas reader")


def _old_module(ref: str, tmp: Path) -> Path:
    """microagg_cli/io.py of ``ref`` as a standalone module ``old_io`` in ``tmp``."""
    text = subprocess.run(["git", "show", f"{ref}:microagg_cli/io.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    text = re.sub(r"^from \.(\w+) import", r"from microagg_cli.\1 import", text, flags=re.M)
    (tmp / "old_io.py").write_text(text)
    return tmp


def child(task: str, which: str, path: str, oldpath: str | None) -> None:
    import resource

    if which == "old":
        sys.path.insert(0, oldpath)
        import old_io as io  # type: ignore[import-not-found]
    else:
        from microagg_cli import io
    import numpy as np

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    table = io.read_table(path)
    out["read_s"] = time.perf_counter() - t0
    if task in ("parse", "write"):
        t1 = time.perf_counter()
        X = io.numeric_matrix(table, COLUMNS[1:])
        out["parse_s"] = time.perf_counter() - t1
    if task == "write":
        Xp = np.round(X * 1.0001, 6)
        target = Path(tempfile.mkdtemp()) / "out.csv"
        t2 = time.perf_counter()
        if which == "old":
            frame = table.frame.copy()
            for j, c in enumerate(COLUMNS[1:]):
                frame[c] = Xp[:, j]
            io.write_table(frame, target, fmt="csv", force=True)
        else:
            data = io.assemble_output(table, {c: Xp[:, j] for j, c in enumerate(COLUMNS[1:])}, drop=[])
            io.write_table(data, target, fmt="csv", force=True)
        out["write_s"] = time.perf_counter() - t2
        out["out_bytes"] = target.stat().st_size
        import hashlib

        out["out_sha256_prefix"] = int(hashlib.sha256(target.read_bytes()).hexdigest()[:12], 16)
        target.unlink()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def measure(task: str, which: str, path: Path, oldpath: Path | None) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", task, which, str(path), str(oldpath or "")]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode:
        raise SystemExit(res.stderr)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--before", default=None,
                    help="git revision of the 'before' io.py (default: the last one without the Arrow reader)")
    ap.add_argument("--no-before", action="store_true", help="time the current tree only")
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "sdc-bench")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child[:3], args.child[3] or None)
        return
    args.data.mkdir(parents=True, exist_ok=True)
    path = args.data / f"io_csv_{args.rows}x11.csv"
    if not path.exists():
        t = time.perf_counter()
        generate(path, args.rows)
        print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s")
    print(f"{args.rows:,} x 11 CSV, {path.stat().st_size / 1e6:.0f} MB, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        before = None if args.no_before else (args.before or _pandas_revision())
        if before:
            print(f"old = microagg_cli/io.py of {before[:10]}")
        oldpath = None if before is None else _old_module(before, Path(tmp))
        rows = []
        for which in (["new"] if oldpath is None else ["new", "old"]):
            for task in ("read", "write"):
                r = measure(task, which, path, oldpath)
                rows.append((which, task, r))
                parts = ", ".join(f"{k} {v:.2f}" if k.endswith("_s") else f"{k} {v:,.0f}" for k, v in r.items())
                print(f"{which:>4} {task:<6} {parts}", flush=True)
        shas = {r["out_sha256_prefix"] for _, task, r in rows if task == "write"}
        if len(shas) > 1:
            print("the new and the old writer produced DIFFERENT bytes")
        elif oldpath is not None:
            print("the new and the old writer produced the same bytes")


if __name__ == "__main__":
    main()
