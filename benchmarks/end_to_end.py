"""Whole-process times of ``sdc``: what a user's stopwatch sees, not only the kernel.

Cases, each a fresh ``sdc`` process (``subprocess``), timed from start to exit:

- ``sdc --help`` (start-up: imports only);
- the floor under every run (:data:`FLOOR`): ``python -c pass``, importing numpy and
  pyarrow.parquet, and that plus numba's start with one cached kernel;
- ``sdc protect IN -o OUT -k 3 --report R.json --force -q`` on seeded synthetic data of
  10 columns (a Gaussian mixture, ``--sizes``, default 10,000, 50,000, 200,000 and
  1,000,000 rows) as Parquet and as CSV (``--formats``), default method (MDAV).

Per case: the median (and range) of ``--repeat`` runs, the child's CPU time (user +
system, ``os.wait4``: steadier than the wall clock on a shared machine), the kernel
time the report records beside it (the blocks' ``seconds``: the method's own time) and
the report's whole ``timing.seconds``, and the child's peak RSS (``ru_maxrss``). The data is written once into a temporary folder (``--keep DIR`` keeps
it there), with a fixed seed, so runs are comparable between commits.

Warm (default): one untimed run per case first, so numba's cache is filled; the
cache is wherever ``sdc`` keeps it normally. ``--cold``: every timed run gets an
empty numba cache of its own (``NUMBA_CACHE_DIR`` = a fresh folder), as on the
first run after ``pip install``; the user's cache is left alone.

Timings on a shared machine are noisy: the load average is printed first; repeat
and compare medians.

``--small``: the small files agencies release one after another: ``sdc
protect FILE -o OUT -k 3 --force`` (no report; the default summary on stderr) on the
sample files census.csv (1,080 x 13) and household.csv (4,580 x 4) and on synthetic CSV
of 1,000, 5,000 and 10,000 rows, whole process, the minimum of ``--repeat`` runs taken
in turns (case after case, round after round, so a burst of load hits every case alike),
beside sdcMicro's whole R script on the same file when ``Rscript`` with sdcMicro is
installed (``microaggregation(method="mdav", aggr=3)``; otherwise the column says why
it is missing) and the sha256 of the output (byte-identical output across commits).

Usage: ``python benchmarks/end_to_end.py [--sizes 10000,50000] [--formats parquet,csv]
[--repeat 5] [--cold] [--keep DIR] [--small]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import numpy as np

P = 10
K = 3
SEED = 20261126
SIZES = (10_000, 50_000, 200_000, 1_000_000)


#: Fixed costs below every warm ``sdc protect`` run: the interpreter, the data stack,
#: and numba's own start (import, CPU target initialisation, one cached kernel loaded:
#: a 10-value call of the smallest kernel).
FLOOR = (
    ("floor: `python -c pass`", "pass"),
    ("floor: import numpy, pyarrow.parquet", "import numpy, pyarrow.parquet"),
    ("floor: + numba, one cached kernel",
     "import numpy, pyarrow.parquet\nfrom microagg_cli.methods.univariate import optimal_contiguous_sizes\n"
     "optimal_contiguous_sizes(numpy.arange(10.0), 3)"),
)


def sdc_command() -> list[str]:
    """The ``sdc`` console script of this interpreter's environment, else ``-m``."""
    script = Path(sys.executable).with_name("sdc")
    return [str(script)] if script.exists() else [sys.executable, "-m", "microagg_cli"]


def synthetic(n: int, p: int = P, seed: int = SEED) -> np.ndarray:
    """A Gaussian mixture: 8 components, means N(0, 3^2), correlated covariances."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 3.0, (8, p))
    mix = rng.normal(0.0, 1.0 / np.sqrt(p), (8, p, p))
    comp = rng.integers(0, 8, n)
    Z = rng.standard_normal((n, p))
    return means[comp] + np.einsum("nj,njk->nk", Z, mix[comp])


def write_data(folder: Path, n: int, formats: list[str]) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    X = synthetic(n)
    table = pa.table({f"x{j}": X[:, j] for j in range(P)})
    out = {}
    for fmt in formats:
        path = folder / f"data_{n}.{fmt}"
        if not path.exists():
            if fmt == "parquet":
                pq.write_table(table, path)
            else:
                pacsv.write_csv(table, path)
        out[fmt] = path
    return out


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one child process."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: no deadlock on chatter
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - t0
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{err.read().decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def timed(argv: list[str], repeat: int, cold: bool, scratch: Path, report: Path | None = None):
    """Medians over ``repeat`` runs: wall, RSS, and (with a report) kernel and total."""
    walls, cpus, rss, kernel, total = [], [], [], [], []
    for i in range(repeat):
        env = dict(os.environ)
        cache = None
        if cold:
            cache = Path(tempfile.mkdtemp(prefix="numba-cold-", dir=scratch))
            env["NUMBA_CACHE_DIR"] = str(cache)
        wall, cpu, peak = run(argv, env)
        walls.append(wall)
        cpus.append(cpu)
        rss.append(peak)
        if report is not None:
            doc = json.loads(report.read_text())
            kernel.append(sum(b.get("seconds", 0.0) for b in doc.get("blocks", [])))
            total.append(doc.get("timing", {}).get("seconds", float("nan")))
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    return {
        "median": median(walls), "min": min(walls), "max": max(walls), "cpu": median(cpus), "rss": max(rss),
        "kernel": median(kernel) if kernel else None, "total": median(total) if total else None,
    }


R_SCRIPT = """suppressMessages(library(sdcMicro))
d <- read.csv("{src}")
m <- microaggregation(d, method = "mdav", aggr = 3)
write.csv(m$mx, "{out}", row.names = FALSE)
"""


def r_available() -> str | None:
    """None when ``Rscript`` with sdcMicro can run here, else why not."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return "skipped: no Rscript here (sdcMicro is not installable on this machine)"
    probe = subprocess.run([rscript, "-e", "library(sdcMicro)"], capture_output=True)
    return None if probe.returncode == 0 else "skipped: R has no sdcMicro package"


def small_files(repeat: int, sdc: list[str] | None = None) -> None:
    """The ``--small`` table (see the module docstring); ``sdc``: the command to time
    (default :func:`sdc_command`; e.g. ``python -m microagg_cli`` with another checkout
    on ``PYTHONPATH``, to compare commits)."""
    import hashlib

    root = Path(__file__).resolve().parent.parent
    sdc = sdc or sdc_command()
    r_missing = r_available()
    print(f"# sdc on small files: whole process, min of {repeat} runs taken in turns, k = {K}, warm")
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, {' '.join(sdc)}\n")
    with tempfile.TemporaryDirectory(prefix="sdc-small-") as tmp:
        scratch = Path(tmp)
        cases = [("census.csv (1,080 x 13)", root / "sample_data" / "census.csv", []),
                 ("household.csv (4,580 x 4)", root / "sample_data" / "household.csv",
                  ["--columns", "age,expend,income,savings"])]
        for n in (1_000, 5_000, 10_000):
            cases.append((f"synthetic {n:,} x {P}", write_data(scratch, n, ["csv"])["csv"], []))
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a warm install has its bytecode cached
        cmds = {}
        for label, path, extra in cases:
            out = scratch / f"out_{path.stem}.csv"
            cmds[label] = ([*sdc, "protect", str(path), "-o", str(out), "-k", str(K), "--force", *extra], out)
            run(cmds[label][0], env, scratch)  # warm: bytecode and numba's cache written; not timed
        walls: dict[str, list[float]] = {label: [] for label in cmds}
        cpus: dict[str, list[float]] = {label: [] for label in cmds}
        r_walls: dict[str, list[float]] = {label: [] for label in cmds}
        for _ in range(repeat):
            for label, (cmd, out) in cmds.items():
                wall, cpu, _rss = run(cmd, env, scratch)  # (not in the checkout: --sdc's PYTHONPATH wins)
                walls[label].append(wall)
                cpus[label].append(cpu)
                if r_missing is None:
                    script = scratch / "mdav.R"
                    src = next(path for name, path, _extra in cases if name == label)
                    script.write_text(R_SCRIPT.format(src=src, out=scratch / "r_out.csv"))
                    r_walls[label].append(run(["Rscript", str(script)], env)[0])
        print("| file | sdc whole process s (min) | CPU s (min) | sdcMicro R script s (min) | R / sdc "
              "| output sha256 (first 16) |")
        print("|---|---:|---:|---:|---:|---|")
        for label, (_cmd, out) in cmds.items():
            digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
            if r_walls[label]:
                r_cell, ratio = f"{min(r_walls[label]):.2f}", f"{min(r_walls[label]) / min(walls[label]):.1f}x"
            else:
                r_cell, ratio = r_missing, ""
            print(f"| {label} | {min(walls[label]):.2f} | {min(cpus[label]):.2f} | {r_cell} | {ratio} | {digest} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="comma-separated row counts (default %(default)s)")
    ap.add_argument("--formats", default="parquet,csv", help="parquet, csv or both (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per case; the median is shown")
    ap.add_argument("--cold", action="store_true", help="every timed run starts with an empty numba cache")
    ap.add_argument("--keep", type=Path, default=None, help="write (and reuse) the data in this folder")
    ap.add_argument("--small", action="store_true",
                    help="only the small-file table: sample files and 1k/5k/10k CSV, sdc against sdcMicro")
    ap.add_argument("--sdc", default=None, help="with --small: the command to time (default: this environment's sdc)")
    args = ap.parse_args(argv)
    if args.small:
        import shlex

        small_files(args.repeat, shlex.split(args.sdc) if args.sdc else None)
        return
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if not set(formats) <= {"parquet", "csv"}:
        ap.error("--formats: parquet and/or csv")

    sdc = sdc_command()
    mode = "cold (empty numba cache)" if args.cold else "warm"
    print(f"# sdc end to end: {mode}, median of {args.repeat}, k = {K}, {P} columns")
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, {' '.join(sdc)}\n")
    rows = []
    with tempfile.TemporaryDirectory(prefix="sdc-e2e-") as tmp:
        scratch = Path(tmp)
        data_dir = args.keep or scratch
        data_dir.mkdir(parents=True, exist_ok=True)
        help_t = timed([*sdc, "--help"], args.repeat, False, scratch)
        rows.append(("`sdc --help`", "", "", help_t))
        for label, code in FLOOR:  # what any run pays before sdc's own work
            cmd = [sys.executable, "-c", code]
            run(cmd, dict(os.environ))  # numba's cache filled; not timed
            rows.append((label, "", "", timed(cmd, args.repeat, False, scratch)))
        for n in sizes:
            for fmt, path in write_data(data_dir, n, formats).items():
                out = scratch / f"out_{n}.{fmt}"
                report = scratch / f"report_{n}_{fmt}.json"
                cmd = [*sdc, "protect", str(path), "-o", str(out), "-k", str(K),
                       "--report", str(report), "--force", "-q"]
                if not args.cold:
                    run(cmd, dict(os.environ))  # fill the cache; not timed
                res = timed(cmd, args.repeat, args.cold, scratch, report)
                rows.append(("`sdc protect`", f"{n:,}", fmt, res))
                out.unlink(missing_ok=True)

    print("| command | rows | format | whole process s (median) | range s | CPU s | kernel s (report) "
          "| report total s | peak RSS MB |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, n, fmt, r in rows:
        kernel = f"{r['kernel']:.2f}" if r["kernel"] is not None else ""
        total = f"{r['total']:.2f}" if r["total"] is not None else ""
        print(f"| {name} | {n} | {fmt} | {r['median']:.2f} | {r['min']:.2f}-{r['max']:.2f} | {r['cpu']:.2f} | {kernel} "
              f"| {total} | {r['rss']:.0f} |")


if __name__ == "__main__":
    main()
