"""Benchmark of ``sdc compare`` (not a test): 5 methods x 3 k on Census.

Runs the grid mdav, pcp, zscores, sugeno (k = 3, 5, 10) and mic1d (k = 6250, 6750,
7000 values: IL_SSE 6.0 / 10.3 / 16.4, comparable with MDAV's 5.7 / 9.1 / 14.2) on
the 13 Census attributes with the default intruder scenarios of ``sdc compare`` (a
seeded sample of 64), once per ``--jobs`` value, and prints the wall time, the
per-cell protect/evaluate times, the peak memory (max RSS of this process and of the
worker processes) and whether the results agree across ``--jobs``. The requirement:
under 2 minutes on the reference machine (2 shared cores).

Usage::

    python benchmarks/compare.py [--jobs 1,2] [--max-scenarios 64] [--html FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from microagg_cli import api, comparison  # noqa: E402

METHODS = ["mdav", "pcp", "zscores", "sugeno", "mic1d"]
K = [3, 5, 10]
MIC1D_K = [6250, 6750, 7000]


def peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0


def comparable(doc: dict) -> dict:
    doc = json.loads(comparison.to_json(doc))
    doc.pop("timing")
    doc.pop("audit", None)  # when and how it ran: differs between runs by design
    for r in doc["rows"]:
        r.pop("seconds")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs values to time")
    ap.add_argument("--max-scenarios", type=int, default=comparison.DEFAULT_MAX_SCENARIOS)
    ap.add_argument("--html", default=None, help="also write the HTML page of the last run")
    args = ap.parse_args()
    census = ROOT / "sample_data" / "census.csv"
    first = None
    for jobs in [int(j) for j in args.jobs.split(",")]:
        t0 = time.perf_counter()
        doc = api.compare(census, methods=METHODS, k=K, mic1d_k=MIC1D_K, max_scenarios=args.max_scenarios,
                          jobs=jobs, html=args.html, force=True)
        wall = time.perf_counter() - t0
        prot = sum(r["seconds"]["protect"] for r in doc["rows"])
        ev = sum(r["seconds"]["evaluate"] for r in doc["rows"])
        print(f"jobs={jobs}: {doc['finished']} cells in {wall:.1f} s wall "
              f"(sum over cells: protect {prot:.1f} s, evaluate {ev:.1f} s); "
              f"peak RSS {peak_mb(resource.RUSAGE_SELF):.0f} MB here, "
              f"{peak_mb(resource.RUSAGE_CHILDREN):.0f} MB largest worker; "
              f"{'PASS' if wall < 120 else 'FAIL'} (< 120 s)")
        if first is None:
            first = comparable(doc)
            print(comparison.table_text(doc))
        else:
            print(f"  same result as the first run: {comparable(doc) == first}")


if __name__ == "__main__":
    main()
