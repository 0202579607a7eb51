"""Man-page layout and shell completion (generated pages: see test_docs for drift)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from conftest import ROOT
from microagg_cli import manpages
from microagg_cli.cli import cli
from microagg_cli.methods import METHODS

PAGES = manpages.render_pages()


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_sections_in_man_pages_order(name):
    text = PAGES[name]
    heads = re.findall(r"^\.SH (.+)$", text, flags=re.M)
    if name.endswith(".7"):  # the definition pages: no command, so no synopsis or exit status
        assert heads[:2] == ["NAME", "DESCRIPTION"] and heads[-1] == "SEE ALSO"
    else:
        assert heads[:3] == ["NAME", "SYNOPSIS", "DESCRIPTION"]
        assert heads[-2:] == ["EXIT STATUS", "SEE ALSO"]  # SEE ALSO last
    assert "((" not in text
    name_line = text.split(".SH NAME\n", 1)[1].splitlines()[0]
    stem = name[:-2]
    assert re.fullmatch(rf"{re.escape(stem.replace('-', chr(92) + '-'))} \\- [a-zA-Z].*[^.]", name_line), name_line
    assert "sdc:" not in name_line


def test_completion_is_documented_in_sdc_1_and_readme():
    readme = (ROOT / "README.md").read_text()
    for line in manpages.COMPLETION.values():
        assert line in readme
        assert line.replace("-", "\\-") in PAGES["sdc.1"]
    assert ".SH SHELL COMPLETION" in PAGES["sdc.1"]


def complete(words: str) -> list[str]:
    parts = words.split(" ")
    env = {"_SDC_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    res = CliRunner().invoke(cli, [], env=env, prog_name="sdc")
    return [line.split(",", 1)[1] for line in res.output.splitlines() if "," in line]


def test_method_names_complete():
    assert complete("sdc protect in.csv -m mdav-") == [m for m in METHODS if m.startswith("mdav-")]
    assert "ils" in complete("sdc protect in.csv --method i")
    assert set(complete("sdc blocks in.csv --method ")) == set(METHODS)
    assert complete("sdc compare in.csv --methods mdav,mdav-l") == ["mdav,mdav-ls"]


def test_preset_names_and_report_kinds_complete():
    from microagg_cli.comparison import PRESETS

    assert complete("sdc compare in.csv --preset ") == list(PRESETS)
    assert complete("sdc schema ") == ["protect", "evaluate", "blocks", "compare", "roles", "risk"]


def test_definition_pages_are_section_7_and_installed():
    assert {"sdc-methods.7", "sdc-metrics.7"} <= set(PAGES)
    for name in ("sdc-methods.7", "sdc-metrics.7"):
        assert PAGES[name].startswith(f'.TH "{name[:-2].upper()}" "7" ')
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"share/man/man7" = ["man/*.7"]' in pyproject
    # every section-7 page names the other one and the commands that use it
    assert "\\fBsdc\\-metrics\\fR(7)" in PAGES["sdc-methods.7"]
    assert "\\fBsdc\\-methods\\fR(7)" in PAGES["sdc-metrics.7"]


def test_method_definition_leaves_out_the_programmers_sections():
    sections = manpages._doc_sections("""Lead line.

    Body text.

    Parameters
    ----------
    X : array.

    Notes
    -----
    A note.

    References
    ----------
    Smith, J. (2001). A paper. Journal 1(2).
    Doe, J. & Roe, R. (2002). Another
    paper. Journal 3.
    """)
    assert sections[""] == "Lead line.\n\nBody text."
    assert sections["Notes"] == "A note."
    assert manpages._references(sections["References"]) == [
        "Smith, J. (2001). A paper. Journal 1(2).", "Doe, J. & Roe, R. (2002). Another paper. Journal 3."]
    assert manpages._plain(":func:`.merge_split.merge_split` with ``refine``") == "merge_split.merge_split with refine"
    assert manpages._troff_text("1. one\n   more\n2. two") == '.IP "1." 4\none more\n.IP "2." 4\ntwo'
