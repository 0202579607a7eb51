"""The package's layering rules (README "Architecture"), checked on the source with ``ast``.

- no import cycle between modules of the package, counting imports inside functions;
- no module imports another module's ``_private`` name;
- the measure list, gate options, formulas and headings derive from ``metrics.METRICS``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "microagg_cli"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@functools.cache  # parsed once per session: the layer checks below each walk the whole graph
def _imports(module: str) -> tuple[tuple[str, str | None, int], ...]:
    """(imported module, imported name or None, line) of every import in ``module``, inline ones included."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((a.name, None, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            for a in node.names:
                sub = f"{target}.{a.name}"
                # ``from . import audit`` imports a module, ``from .io import Table`` a name
                out.append((sub, None, node.lineno) if sub in MODULES else (target, a.name, node.lineno))
    return tuple((m, n, line) for m, n, line in out if m == "microagg_cli" or m.startswith("microagg_cli."))


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for target, _name, _line in _imports(module):
            # importing a.b.c runs a and a.b first; a package's __init__ edges are its own
            if target in MODULES and target != module:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_is_built_from_every_module():
    graph = _graph()
    assert {"microagg_cli.api", "microagg_cli.protection.table", "microagg_cli.evaluation"} <= set(graph)
    # inline imports count: api imports the streaming engines only inside protect()
    assert "microagg_cli.engines" in graph["microagg_cli.api"]
    assert "microagg_cli.protection.table" in graph["microagg_cli.engines"]


def test_no_import_cycle_between_modules():
    """Package __init__ files that only re-export their submodules are not part of a cycle
    with those submodules (a submodule importing ``..protection.block`` does not run
    ``protection/__init__`` again), so edges into a package's own ``__init__`` from its
    children are ignored."""
    graph = _graph()
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not (PACKAGE_INIT(t) and module.startswith(t + "."))}
    assert _cycles(graph) == []


def PACKAGE_INIT(module: str) -> bool:  # noqa: N802 -- reads as a predicate in the test above
    return MODULES[module].name == "__init__.py"


def test_no_module_imports_a_private_name_of_another_module():
    bad = []
    for module in MODULES:
        for target, name, line in _imports(module):
            if name is not None and name.startswith("_") and not name.startswith("__") and target != module:
                bad.append(f"{module}:{line} imports {target}.{name}")
    assert bad == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("layer, forbidden", [
    ("microagg_cli.protection", ("microagg_cli.api", "microagg_cli.comparison", "microagg_cli.engines",
                                 "microagg_cli.evaluation", "microagg_cli.report", "microagg_cli.commands")),
    ("microagg_cli.evaluation", ("microagg_cli.api", "microagg_cli.comparison", "microagg_cli.engines",
                                 "microagg_cli.commands")),
    ("microagg_cli.blocking", ("microagg_cli.api", "microagg_cli.protection", "microagg_cli.evaluation",
                               "microagg_cli.comparison", "microagg_cli.engines")),
    ("microagg_cli.comparison", ("microagg_cli.api", "microagg_cli.commands")),
    # the Dask engine sits below the streaming engine that chooses it
    ("microagg_cli.engines_dask", ("microagg_cli.api", "microagg_cli.engines", "microagg_cli.commands")),
    ("microagg_cli.blocks_advice", ("microagg_cli.api", "microagg_cli.commands", "microagg_cli.comparison")),
    # measures judge partitions and never make them (the CG bound's polish lives with its caller)
    ("microagg_cli.metrics", ("microagg_cli.methods", "microagg_cli.protection", "microagg_cli.api")),
])
def test_layers_import_downwards_only(layer, forbidden):
    graph = _graph()
    for module, targets in graph.items():
        if module == layer or module.startswith(layer + "."):
            hits = [t for t in targets if any(t == f or t.startswith(f + ".") for f in forbidden)]
            assert hits == [], f"{module} imports {hits}"


def test_gates_options_formulas_and_headings_derive_from_the_metric_catalogue():
    from microagg_cli import evaluation
    from microagg_cli.comparison import document as compare_document
    from microagg_cli.commands._common_eval import GATE_OPTIONS
    from microagg_cli.metrics import GATE_ORDER, METRICS

    gated = [METRICS[n] for n in GATE_ORDER]
    assert [o for o, *_ in GATE_OPTIONS] == [m.gate.option for m in gated]
    assert [(g.key, g.measure, g.field) for g in evaluation.GATES.values()] == [
        (m.gate.key, m.heading, m.gate.field) for m in gated]
    for name, text in evaluation.FORMULAS.items():
        assert text == METRICS[name].formula != ""
    for name, text in compare_document._FORMULAS.items():
        if name in METRICS:
            assert text.startswith(METRICS[name].formula)
    from microagg_cli.report import compare as report_compare

    for key, heading, digits in report_compare.MEASURES:
        assert (heading, digits) == (METRICS[key].heading, METRICS[key].digits)
    for key, heading in report_compare.LABEL_MEASURES:
        assert heading == METRICS[key].heading
    # every measure has a heading and a reference
    assert all(m.heading and m.reference for m in METRICS.values())
