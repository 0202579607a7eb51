#!/usr/bin/env python3
"""Render every kind of HTML report of ``sdc`` in headless Chromium and check it.

Usage::

    python checks/browser.py [--keep DIR] [--no-install]

The reports come from ``sample_data/`` (run through ``python -m microagg_cli``):

- ``sdc evaluate`` of a one-block protection (every intruder scenario), of a blocked
  one (per-block tables, labels 1G/2G/3G) and with ``--bound cg`` (lb_cg columns);
- ``sdc compare`` of a grid with close points (``mic1d`` at k = 300 and 900, the
  labels that used to overlap), of two blocking plans (marker shapes, legend rows) and
  of the mixed trade-off (two key sets x two category weights: the front, dominated
  cells hollow);
- ``sdc risk`` of the household survey's keys (distributions, combinations, records).

``sdc protect`` and ``sdc blocks`` write no HTML page, so there is nothing of theirs to
render. Each page is opened in Chromium (playwright driving the system ``chromium``)
and must:

1. log no console error and raise no page error;
2. make no request other than ``file://`` (every other request is blocked and fails
   the check);
3. hold no two overlapping ``<text>`` boxes inside any SVG (the browser's own boxes,
   ``getBoundingClientRect``, after transforms);
4. not scroll sideways at 1024 px and at 800 px (``scrollWidth <= innerWidth``): wide
   tables scroll inside their own box;
5. under print media at the printable width of A4 (210 mm - 2 x 12 mm), keep every
   table inside the page (no cut last column); then ``page.pdf`` prints it on A4 into
   a temporary folder (kept with ``--keep DIR``).

Exit status 0 when every page passes, 1 otherwise. When Chromium or playwright is
missing and cannot be installed (apt-get as root for ``chromium``, pip for
``playwright``; ``--no-install`` forbids both), the check prints that it was skipped
and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"

#: CSS px of the printable width of A4 with the reports' 12 mm margins (96 px per inch).
A4_PRINT_WIDTH = int((210 - 2 * 12) / 25.4 * 96)

#: Two text boxes overlap when they share more than this many px in both directions
#: (glyph boxes include line gaps; one pixel of contact is not a collision).
TOLERANCE = 1.0

_OVERLAPS_JS = """
(tol) => {
  const out = [];
  document.querySelectorAll('svg').forEach((svg, si) => {
    const title = (svg.querySelector('title') || {}).textContent || `svg ${si}`;
    const boxes = [];
    svg.querySelectorAll('text').forEach((t) => {
      const s = (t.textContent || '').trim();
      if (!s) return;
      const r = t.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) return;
      boxes.push({s, l: r.left, t: r.top, r: r.right, b: r.bottom});
    });
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        const w = Math.min(a.r, b.r) - Math.max(a.l, b.l);
        const h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
        if (w > tol && h > tol) out.push(`${title}: "${a.s}" and "${b.s}" overlap by ${w.toFixed(1)} x ${h.toFixed(1)} px`);
      }
    }
  });
  return out;
}
"""

_OVERFLOW_JS = """
() => {
  const el = document.scrollingElement;
  const wide = [];
  if (el.scrollWidth > window.innerWidth) {
    // name the widest culprits to make the failure actionable
    document.querySelectorAll('body *').forEach((e) => {
      const r = e.getBoundingClientRect();
      if (r.right > window.innerWidth + 1 && wide.length < 5) wide.push(`<${e.tagName.toLowerCase()}> right edge ${r.right.toFixed(0)} px`);
    });
  }
  return {scrollWidth: el.scrollWidth, innerWidth: window.innerWidth, wide};
}
"""

_PRINT_TABLES_JS = """
() => {
  const out = [];
  const width = document.documentElement.clientWidth;
  document.querySelectorAll('table').forEach((t, i) => {
    const r = t.getBoundingClientRect();
    if (r.right > width + 1 || t.scrollWidth > t.clientWidth + 1) {
      const head = Array.from(t.querySelectorAll('th')).map((th) => th.textContent).slice(-1)[0] || '';
      out.push(`table ${i + 1} (last column "${head}") ends at ${r.right.toFixed(0)} px of ${width} px`);
    }
  });
  return out;
}
"""


def _say(text: str) -> None:
    print(f"checks/browser.py: {text}", flush=True)


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def find_chromium(install: bool) -> str | None:
    """Path of the system Chromium; installs Debian's package when allowed and possible."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if install and shutil.which("apt-get") and _is_root():
        _say("chromium missing: apt-get install -y chromium")
        subprocess.run(["apt-get", "install", "-y", "chromium"], check=False, stdout=subprocess.DEVNULL)
        return shutil.which("chromium")
    return None


def import_playwright(install: bool) -> Any:
    """``playwright.sync_api`` (pip-installing playwright when allowed), or None."""
    try:
        from playwright import sync_api
        return sync_api
    except ImportError:
        if not install:
            return None
    _say("playwright missing: pip install playwright")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "playwright"], check=False)
    try:
        from playwright import sync_api
        return sync_api
    except ImportError:
        return None


def sdc(*args: Any, cwd: Path) -> None:
    """Run ``sdc`` (this checkout's package) and fail loudly on an error."""
    cmd = [sys.executable, "-m", "microagg_cli", *map(str, args)]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if res.returncode not in (0, 5):  # 5: a gate failed, the reports are written anyway
        raise SystemExit(f"checks/browser.py: {' '.join(cmd[2:])} failed ({res.returncode}):\n{res.stderr}")


def make_reports(work: Path) -> list[Path]:
    """Every kind of HTML report, from the sample data."""
    census = SAMPLE / "census.csv"
    plan = SAMPLE / "plans" / "census-correlated.toml"
    sdc("protect", census, "-o", "p1.csv", "-k", 3, "--report", "protect.json", "-q", cwd=work)
    sdc("protect", census, "-o", "p3.csv", "--plan", plan, "-k", 3, "-q", cwd=work)
    sdc("evaluate", census, "p1.csv", "-k", 3, "--max-scenarios", 64, "--html", "evaluate.html",
        "--report", "evaluate.json", "--min-kprime", 3, "-q", cwd=work)
    sdc("evaluate", census, "p3.csv", "--plan", plan, "-k", 3, "--max-scenarios", 64,
        "--html", "evaluate-blocks.html", "-q", cwd=work)
    sdc("evaluate", census, "p1.csv", "-k", 3, "--columns", "AGI,FICA,TAXINC", "--bound", "cg",
        "--time-limit", 20, "--max-scenarios", 8, "--html", "evaluate-cg.html", "-q", cwd=work)
    sdc("compare", census, "--methods", "mdav,zscores,mic1d", "--k", "3,5", "--mic1d-k", "300,900",
        "--max-scenarios", 8, "--html", "compare.html", "--format", "json", "-o", "compare.json", "-q", cwd=work)
    sdc("compare", census, "--strategies", "correlated,cross", "--block-size", 3, "--k", "3,5",
        "--methods", "mdav,pcp", "--max-scenarios", 8, "--html", "compare-plans.html", "-q", cwd=work)
    household = SAMPLE / "household.csv"
    sdc("compare", household, "--columns", "income,expend", "-k", 3, "--keys-sets", "urbrur,sex,water;urbrur,sex",
        "--mixed-weights", "categorical=0.2,2", "--max-scenarios", 4, "--html", "compare-front.html", "-q", cwd=work)
    sdc("risk", household, "--keys", "urbrur,water,sex,age", "--weights", "sampling_weight", "--household-id",
        "ori_hid", "--sensitive", "hhcivil", "--html", "risk.html", "-q", cwd=work)
    return sorted(work.glob("*.html"))


def check_page(browser: Any, html: Path, pdf_dir: Path) -> list[str]:
    """Every failure of one page (empty: it passed)."""
    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1024, "height": 800})
    page = context.new_page()

    def on_console(msg: Any) -> None:
        if msg.type == "error":
            problems.append(f"console error: {msg.text}")

    def on_route(route: Any) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            problems.append(f"external request: {url}")
            route.abort()

    page.on("console", on_console)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.route("**/*", on_route)
    page.goto(html.as_uri(), wait_until="load")
    problems += page.evaluate(_OVERLAPS_JS, TOLERANCE)
    for width in (1024, 800):
        page.set_viewport_size({"width": width, "height": 800})
        o = page.evaluate(_OVERFLOW_JS)
        if o["scrollWidth"] > o["innerWidth"]:
            problems.append(f"horizontal overflow at {width} px: scrollWidth {o['scrollWidth']} > "
                            f"{o['innerWidth']} ({'; '.join(o['wide'])})")
    page.emulate_media(media="print")
    page.set_viewport_size({"width": A4_PRINT_WIDTH, "height": 1000})
    problems += [f"A4 print: {p}" for p in page.evaluate(_PRINT_TABLES_JS)]
    pdf = pdf_dir / (html.stem + ".pdf")
    page.pdf(path=str(pdf), format="A4", print_background=True, prefer_css_page_size=True)
    if not pdf.is_file() or pdf.read_bytes()[:5] != b"%PDF-":
        problems.append("page.pdf wrote no PDF")
    context.close()
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", metavar="DIR", help="write the reports and PDFs here and keep them")
    ap.add_argument("--no-install", action="store_true", help="never install chromium or playwright")
    args = ap.parse_args(argv)
    install = not args.no_install
    chromium = find_chromium(install)
    if chromium is None:
        _say("skipped: no chromium on this machine (and apt-get as root is not available to install it)")
        return 0
    sync_api = import_playwright(install)
    if sync_api is None:
        _say("skipped: playwright is not installed and pip could not install it")
        return 0
    with tempfile.TemporaryDirectory(prefix="sdc-browser-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        pages = make_reports(work)
        failures = 0
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True)
            try:
                for html in pages:
                    problems = check_page(browser, html, work)
                    if problems:
                        failures += 1
                        _say(f"FAIL {html.name}")
                        for p in problems:
                            print(f"  - {p}")
                    else:
                        _say(f"ok   {html.name} (A4 PDF {html.stem}.pdf)")
            finally:
                browser.close()
        where = f"; reports and PDFs in {work}" if args.keep else ""
        _say(f"{len(pages) - failures} of {len(pages)} page(s) passed{where}")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
