"""Fuzz every reader for minutes: no malformed input may end in exit code 1.

Truncated, corrupted, extended and random bytes derived from a valid file of every
format ``sdc`` reads (CSV, TSV, .csv.gz, Parquet, Excel .xlsx, SPSS .sav/.zsav, Stata
.dta, SAS .xpt/.sas7bdat, plan TOML/JSON; see ``tests/fuzz_cases.py``) are read as
``sdc protect`` reads them. Each case runs in a worker process, so a crash of a native
reader (a signal, not an exception) is caught and reported too; every ``--cli-every``-th
case also runs the real command line (``python -m microagg_cli protect CASE -o OUT``) and
checks its exit code and its single ``Error:`` line.

Usage::

    python benchmarks/fuzz_readers.py --minutes 10
    python benchmarks/fuzz_readers.py --minutes 1 --seed 7 --keep failures/

Exit code 0 when nothing failed, 1 otherwise (the failing cases are written to
``--keep`` when given).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _worker(folder: str, seed: int, count: int, queue: "mp.Queue") -> None:
    import fuzz_cases

    base = Path(folder)
    seeds = fuzz_cases.seed_files(base / "seeds")
    rnd = random.Random(seed)
    readers = sorted(seeds)
    for _ in range(count):
        reader = rnd.choice(readers)
        data = fuzz_cases.mutate(seeds[reader], rnd)
        (base / "current").write_bytes(json.dumps(reader).encode() + b"\n" + data)  # what a crash leaves
        path = fuzz_cases.write_case(base, reader, data)
        exc = fuzz_cases.check(path, reader)
        queue.put((reader, None if exc is None else f"{type(exc).__name__}: {exc}"[:300], data))
    queue.put(None)


def _cli_case(folder: Path, reader: str, data: bytes) -> str | None:
    """Run ``sdc protect`` on the case; a complaint, or None when it ended as documented."""
    import fuzz_cases

    path = fuzz_cases.write_case(folder, reader, data)
    out = folder / "out.csv"
    out.unlink(missing_ok=True)
    if reader.startswith("plan."):
        args = [str(folder / "input.csv"), "--plan", str(path)]
        (folder / "input.csv").write_text(fuzz_cases._CSV)
    else:
        args = [str(path), "-k", "2"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    res = subprocess.run([sys.executable, "-m", "microagg_cli", "protect", *args, "-o", str(out), "-q"],
                         capture_output=True, text=True, env=env, timeout=300)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    if res.returncode not in (0, 2, 3, 4):
        return f"exit {res.returncode}: {res.stderr.strip()[-300:]}"
    if res.returncode and len(errors) != 1:
        return f"exit {res.returncode} with {len(errors)} Error: lines: {res.stderr.strip()[-300:]}"
    if res.returncode and out.exists():
        return "an output was written although the run failed"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--batch", type=int, default=400, help="cases per worker process")
    ap.add_argument("--cli-every", type=int, default=200, help="every N-th case also through the CLI (0: never)")
    ap.add_argument("--keep", type=Path, help="write failing cases here")
    args = ap.parse_args()
    deadline = time.monotonic() + 60 * args.minutes
    outcomes: Counter = Counter()
    failures: list[tuple[str, str, bytes]] = []
    cases = batches = 0
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="sdc-fuzz-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp)
        cli_folder = folder / "cli"
        cli_folder.mkdir()
        while time.monotonic() < deadline:
            queue: mp.Queue = ctx.Queue()
            proc = ctx.Process(target=_worker, args=(str(folder), args.seed + batches, args.batch, queue))
            proc.start()
            batches += 1
            while True:
                try:
                    item = queue.get(timeout=120)
                except Exception:  # noqa: BLE001 - the worker died (a signal) or hung
                    item = "dead"
                if item is None:
                    break
                if item == "dead":
                    proc.kill()
                    if not (folder / "current").exists():
                        raise SystemExit("the worker died before its first case (see its traceback above)")
                    raw = (folder / "current").read_bytes()
                    reader, data = json.loads(raw.split(b"\n", 1)[0]), raw.split(b"\n", 1)[1]
                    failures.append((reader, f"worker died (exit {proc.exitcode})", data))
                    outcomes[(reader, "CRASH")] += 1
                    break
                reader, problem, data = item
                cases += 1
                outcomes[(reader, "ok" if problem is None else "EXIT 1")] += 1
                if problem is not None:
                    failures.append((reader, problem, data))
                elif args.cli_every and cases % args.cli_every == 0:
                    complaint = _cli_case(cli_folder, reader, data)
                    outcomes[(reader, "cli ok" if complaint is None else "CLI FAIL")] += 1
                    if complaint is not None:
                        failures.append((reader, "cli: " + complaint, data))
                if time.monotonic() > deadline:
                    proc.kill()
                    break
            proc.join(timeout=10)
    minutes = args.minutes
    print(f"{cases} cases in {batches} worker batches over {minutes:g} minutes (seed {args.seed})")
    for (reader, what), n in sorted(outcomes.items()):
        print(f"  {reader:10s} {what:8s} {n}")
    print(f"{len(failures)} failure(s)")
    for reader, problem, data in failures[:20]:
        print(f"  {reader}: {problem} ({len(data)} bytes)")
    if args.keep and failures:
        args.keep.mkdir(parents=True, exist_ok=True)
        import fuzz_cases

        for i, (reader, problem, data) in enumerate(failures):
            (args.keep / f"case{i}{fuzz_cases.SUFFIXES[reader]}").write_bytes(data)
            (args.keep / f"case{i}.txt").write_text(problem + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
