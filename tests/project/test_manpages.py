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
    assert complete("sdc schema ") == ["protect", "evaluate", "blocks", "compare", "roles"]
