"""``sdc protect``: the terminal summary of a protect report (the JSON is the report dict).

``sdc protect`` writes no HTML page; its JSON report is built by the library
(:func:`microagg_cli.api.protect`) and written as is.
"""

from __future__ import annotations

from typing import Any

from .common import fmt
from .evaluate import print_risk_summary

__all__ = ["print_protect_summary", "CG_HINT"]

#: Where to get a certified bound, shown next to LB_NN.
CG_HINT = ("LB_NN is a quick, loose lower bound; for a certified one (lb_cg) and how far this "
           "partition is from optimal: sdc evaluate ORIGINAL PROTECTED --bound cg")


def print_protect_summary(rep: dict[str, Any], console: Any = None) -> None:
    """Blocks, groups, IL_SSE, LB_NN, k' and times of a ``sdc protect`` report, then
    strata, missing values, columns, engine and (``--evaluate``) the risk summary."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(stderr=True, highlight=False)
    table = Table(title=f"sdc protect: {rep['input']['name']} -> {rep['output']['name'] or 'stdout'}",
                  title_justify="left")
    for col in ("block", "method", "k", "columns", "groups", "IL_SSE", "LB_NN", "k'", "seconds"):
        table.add_column(col, justify="right" if col not in ("block", "method") else "left")
    for b in rep["blocks"]:
        groups = b.get("n_groups", "per column")
        table.add_row(b["name"], b["method"]["name"], str(b["k"]), str(len(b["columns"])), str(groups),
                      fmt(b["il_sse"]), fmt(b.get("lb_nn")), fmt(b["k_prime"], 2), fmt(b["seconds"], 2))
    console.print(table)
    if any(b.get("lb_nn") is not None for b in rep["blocks"]):
        console.print(CG_HINT, markup=False, highlight=False)
    for b in rep["blocks"]:
        if b.get("lb_nn_skipped"):
            console.print(f"{b['name']}: LB_NN not computed: {b['lb_nn_skipped']}", markup=False, highlight=False)
    for b in rep["blocks"]:
        st = b.get("strata")
        if st:
            console.print(f"{b['name']}: {st['count']} strata on {', '.join(st['columns'])}; "
                          f"merged {len(st['merged'])}, suppressed {len(st['suppressed'])} ({st['policy']})",
                          markup=False)
        miss = b.get("missing", {})
        if miss.get("missing_cells"):
            console.print(f"{b['name']}: {miss['missing_cells']} missing cell(s), policy {miss['policy']}; "
                          f"{miss['records_not_grouped']} record(s) not grouped", markup=False)
            if miss.get("cells_blanked"):
                console.print(f"{b['name']}: blanked so that each group releases one row (k on missing cells too): "
                              + ", ".join(f"{c} {n}" for c, n in miss["cells_blanked"].items()), markup=False)
    cols = rep["columns"]
    check = rep.get("privacy_check", {})
    verdict = "k-check passed" if check.get("passed") else "k-check FAILED"
    console.print(f"{rep['input']['rows']} rows; protected {len(cols['protected'])}, "
                  f"dropped {len(cols['dropped'])} column(s); {verdict}.")
    if check.get("covered") is not None:
        console.print(f"k checked on the released: {', '.join(check['covered']) or 'none'}", markup=False)
    keys = cols.get("categorical", []) + cols.get("ordinal", [])
    if keys:
        console.print(f"released as each group's mode / median category: {', '.join(keys)}", markup=False)
        for b in rep["blocks"]:
            if b.get("mixed"):
                _print_mixed(b, console)
    passed = check.get("not_covered", cols["passthrough"])
    console.print(f"passed through unchanged{' (not covered by the k check)' if passed else ''}: "
                  f"{', '.join(passed) if passed else 'none'}", markup=False)
    hygiene = rep.get("output_hygiene") or {}
    if hygiene.get("rows_shuffled"):
        if hygiene.get("evaluate_with"):
            console.print(f"rows shuffled; evaluate with: {hygiene['evaluate_with']}", markup=False, highlight=False)
        else:
            console.print(f"rows shuffled: {hygiene.get('pairing_note')}", markup=False, highlight=False)
    _print_statfile(rep, console)
    eng = rep.get("engine")
    if eng:
        peaks = [w["peak_rss_bytes"] for w in eng.get("workers", [])]
        console.print(f"engine {eng['name']} ({eng.get('scheduler', 'this process')}), streamed in batches of "
                      f"{eng['batch_rows']} rows" + (f"; peak memory per worker {max(peaks) / 1e9:.2f} GB" if peaks
                                                      else ""), markup=False)
    if "evaluation" in rep:
        print_risk_summary(rep["evaluation"], console)


def _print_mixed(b: dict[str, Any], console: Any) -> None:
    """A mixed block's two losses, the search's work, and where the trade-off is."""
    mx = b["mixed"]
    changed = mx.get("mean_changed_share")
    w = mx["weights"]["categorical"]
    console.print(f"{b['name']}: numeric IL_SSE {fmt(b['il_sse'])}, categories changed "
                  f"{'-' if changed is None else f'{100 * changed:.2f} %'} (mean over the keys) at "
                  f"--mixed-weights categorical={w:g}; a lower weight loses less numeric information and "
                  "changes more categories: sdc compare with the same keys and --mixed-weights "
                  "categorical=0.2,0.5,2 --html shows the front",
                  markup=False, highlight=False)
    s = mx.get("search")
    if not s:
        return
    line = (f"{b['name']}: mixed objective {s['objective_mdav']:.6g} after MDAV, {s['objective']:.6g} after "
            f"the local search ({s['passes']} pass(es)")
    if "kicks" in s:
        line += f", {s['kicks']:,} ils kicks, {s['kicks_kept']:,} kept"
    console.print(line + ")", markup=False, highlight=False)
    if s.get("stopped_by_time_budget"):
        console.print(f"{b['name']}: the ils kicks stopped at -p time_budget before their iterations; raise it, "
                      "or drop it to run the iterations (reproducible)", markup=False, highlight=False)


def _print_statfile(rep: dict[str, Any], console: Any) -> None:
    """SPSS/Stata/SAS files: declared missing codes, storage changes, the weight variable."""
    from ..statfiles import code_written_back

    out_fmt = rep["output"].get("format", "")
    for col, codes in (rep.get("declared_missing") or {}).items():
        parts = [f"{code}" + (f" {c['label']!r}" if c.get("label") else "") + f": {c['count']}"
                 for code, c in codes.items()]
        kept = [code_written_back(str(code), out_fmt) for code in codes]
        fate = ("written back as they were" if all(kept) else
                (f"plain missing values in the {out_fmt} output, which cannot hold them" if out_fmt
                 else "plain missing values in the output, which cannot hold them") if not any(kept)
                else "written back where the output format holds them, else plain missing values")
        console.print(f"declared missing codes in {col} (read as missing, {fate}): "
                      + ", ".join(parts), markup=False, highlight=False)
    changes = rep["output"].get("storage_changes") or []
    if changes:
        console.print("storage type changed: " + ", ".join(f"{c['column']} {c['from']} -> {c['to']}" for c in changes),
                      markup=False, highlight=False)
    weight = rep["input"].get("weight_variable")
    if weight and not rep.get("parameters", {}).get("weights"):
        console.print(f"the file declares the weight variable {weight!r}: give --weights {weight} to use it "
                      "for the group means", markup=False, highlight=False)
