"""README, man pages and CI stay in step with the code."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT
from microagg_cli import manpages
from microagg_cli.cli import cli
from microagg_cli.methods import METHODS

README = (ROOT / "README.md").read_text()


def test_man_pages_up_to_date():
    pages = manpages.render_pages()
    on_disk = {p.name: p.read_text() for p in (ROOT / "man").glob("sdc*.[17]")}
    assert set(on_disk) == set(pages), "run: python -m microagg_cli.manpages man README.md"
    for name, text in pages.items():
        assert on_disk[name] == text, f"man/{name} is stale; run: python -m microagg_cli.manpages man README.md"


def test_readme_generated_sections_up_to_date():
    assert manpages.exit_code_table() in README
    assert manpages.method_table() in README


def test_readme_and_man_list_every_command_and_method():
    man = (ROOT / "man" / "sdc.1").read_text()
    for name in cli.list_commands(None):
        assert f"sdc {name}" in README
        assert f"sdc\\-{name}" in man or f"sdc {name}" in man
    protect_man = (ROOT / "man" / "sdc-protect.1").read_text()
    for name in METHODS:
        assert f"`{name}`" in README
        assert name.replace("-", "\\-") in protect_man


def test_readme_shows_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", setup, flags=re.S)
    assert len(blocks) == 2
    install_run, install_test = blocks
    assert "sdc protect sample_data/" in install_run and "--report" in install_run
    assert "pytest" in install_test
    ci = (ROOT / ".ci" / "run").read_text()
    assert install_test in ci


# ------------------------------------------------- definitions inside the project

#: a path into a specification folder the user does not have, or an issue number
#: (``#28``, ``issue 8``): the package says the reason or cites a paper or
#: sdc-methods(7) / sdc-metrics(7) instead
_OUTSIDE = re.compile(r"\bspec/|\bspec\.md\b|(?<![\w&\"'])#\d+\b|\bissues? #?\d+\b", re.I)


def _project_texts():
    """The package, its documentation, benchmarks, checks and tests (this file's own
    examples of what is refused left out)."""
    for top in ("microagg_cli", "benchmarks", "tests", "man", "checks", ".ci", "README.md", "CHANGELOG.md",
                "pyproject.toml"):
        base = ROOT / top
        for path in [base] if base.is_file() else sorted(base.rglob("*")):
            if (path.is_file() and "__pycache__" not in path.parts and path != Path(__file__)
                    and (path.suffix in {".py", ".json", ".html", ".css", ".toml", ".txt", ".md", ".1", ".7"}
                         or path.parent.name == ".ci")):
                yield path, path.read_text(encoding="utf-8")


def test_outside_citation_pattern_catches_what_it_must():
    for bad in ("see spec/metrics.md", "the methods spec.md", "(#28)", "# #30: one request",
                "Issue #8 asked", "issue 27"):
        assert _OUTSIDE.search(bad), bad
    for fine in ('fill="#555"', "stroke='#888'", "color: #fff", "sdc-metrics(7)", "ParamSpec", "&#39;", "spectrum/", "issues found"):
        assert not _OUTSIDE.search(fine), fine


#: pyarrow's CSV error as it quotes it (csvio), not an issue number
_QUOTED = {"Row #2: Expected 3 columns, got 4"}


def test_project_cites_no_file_outside_it_and_no_issue_number():
    lines = []
    for path, text in _project_texts():
        for quoted in _QUOTED:
            text = text.replace(quoted, "")
        rel = path.relative_to(ROOT).as_posix()
        lines += [f"{rel}:{no}: {line.strip()}" for no, line in enumerate(text.splitlines(), 1) if _OUTSIDE.search(line)]
    assert not lines, "cite the paper, sdc-methods(7) or sdc-metrics(7), or give the reason:\n" + "\n".join(lines)


def test_definition_pages_cover_every_method_and_measure():
    from microagg_cli.metrics import METRICS

    methods = (ROOT / "man" / "sdc-methods.7").read_text()
    metrics = (ROOT / "man" / "sdc-metrics.7").read_text()
    for spec in METHODS.values():
        assert f".SS {spec.name.replace('-', chr(92) + '-')}\n" in methods
        assert manpages._esc(spec.reference) in methods
        for p in spec.params:
            assert f"\\fB{manpages._esc(p.name)}\\fR=" in methods
    for m in METRICS.values():
        assert f".SS {manpages._esc(m.name)} (" in metrics
        assert manpages._esc(m.reference) in metrics
        assert f"{m.better} is better" in metrics
        if m.formula:
            assert manpages._esc(manpages._plain(m.formula)) in metrics
    # a method's definition is its docstring's text, without the programmers' sections
    assert "While at least 3k records remain" in methods
    assert "Returns" not in methods and ">>>" not in methods
    assert "LB_NN bounds the IL_SSE of every k\\-partition from below" in metrics


# ------------------------------------------------------------ the architecture map

#: the widest line of the map: a module's first sentence is its summary, not its story
MAP_WIDTH = 140


def test_readme_architecture_map_is_the_package_now():
    block = README.split("<!-- architecture:start -->\n", 1)[1].split("\n<!-- architecture:end -->", 1)[0]
    assert block == manpages.architecture_map(), "run: python -m microagg_cli.manpages man README.md"
    # every module and package of the package on disk, each once, nested under its package
    lines = block.splitlines()[1:-1]
    listed = []
    stack: list[str] = []
    for line in lines:
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        stack[depth:] = [name]
        listed.append("".join(stack))
    package = ROOT / "microagg_cli"
    on_disk = sorted(
        [p.relative_to(package).as_posix() for p in package.rglob("*.py")
         if p.name != "__init__.py" and "__pycache__" not in p.parts]
        + [p.parent.relative_to(package).as_posix() + "/" for p in package.rglob("__init__.py")
           if p.parent != package])
    assert sorted(listed) == on_disk
    for line in lines:
        summary = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
        assert summary and not summary.endswith("."), line
        assert len(line) <= MAP_WIDTH, f"shorten the first sentence of the docstring: {line}"
        assert "``" not in summary and ":func:" not in summary and ":mod:" not in summary, line


def test_map_line_is_the_first_sentence_of_the_docstring():
    assert manpages.first_sentence("One (Lin et al. 2010). Two.") == "One (Lin et al. 2010)"
    assert manpages.first_sentence(":func:`.a.b` and ``c``\nwrapped. Not this.") == "a.b and c wrapped"
    assert manpages.first_sentence("A summary\n\nthe rest.") == "A summary"
    assert manpages.first_sentence("Ends with J. Smith's rule.") == "Ends with J. Smith's rule"
