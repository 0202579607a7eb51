"""Generate the man pages in ``man/`` from the click command tree.

Run ``python -m microagg_cli.manpages man README.md`` after changing any option or
method; a test fails when ``man/`` or the generated README sections are out of date. Written here rather than with click-man so the pages
carry no build date (the drift test must not fail on a new day) and include the
exit-code table and the method list.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._version import __version__
from .errors import EXIT_CODES

__all__ = ["render_pages", "write_pages"]


def _esc(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    lines = []
    for line in text.splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _help_paragraphs(help_text: str) -> list[str]:
    import inspect

    out = []
    for para in inspect.cleandoc(help_text).split("\n\n"):
        para = para.strip("\n")
        if para.startswith("\b"):
            body = para[1:].strip("\n")
            out.append(".nf\n" + _esc(body) + "\n.fi")
        else:
            out.append(_esc(" ".join(para.split())))
    return out


def _options(ctx: click.Context, command: click.Command) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option):  # arguments are in the synopsis; their help
            continue  # records differ between click versions
        record = param.get_help_record(ctx)
        if record is None:
            continue
        opts, help_text = record
        out.append(f".TP\n\\fB{_esc(opts)}\\fR\n{_esc(' '.join(help_text.split()))}")
    return out


def _exit_codes() -> str:
    rows = [".SH EXIT STATUS"]
    for code, cls, meaning in EXIT_CODES:
        label = "" if not cls else f" {cls}" if cls.startswith("(") else f" ({cls})"
        rows.append(f".TP\n\\fB{code}\\fR\n{_esc(meaning + label)}")
    return "\n".join(rows)


#: How to turn on shell completion (sdc.1 and README.md); click generates the scripts.
COMPLETION = {
    "bash": 'eval "$(_SDC_COMPLETE=bash_source sdc)"',
    "zsh": 'eval "$(_SDC_COMPLETE=zsh_source sdc)"',
    "fish": "_SDC_COMPLETE=fish_source sdc | source",
}


def _completion_section() -> str:
    lines = [".SH SHELL COMPLETION",
             _esc("Commands, options, method names (--method, --methods, after a comma too), preset names, "
                  "report kinds and file names complete on TAB. Add the line for your shell to its start-up "
                  "file (bash: ~/.bashrc, zsh: ~/.zshrc, fish: ~/.config/fish/completions/sdc.fish):")]
    for shell, line in COMPLETION.items():
        lines.append(f".TP\n\\fB{shell}\\fR\n.nf\n{_esc(line)}\n.fi")
    return "\n".join(lines)


def _page(name: str, command: click.Command, ctx: click.Context, extra: list[str],
          see_also: str | None = None) -> str:
    short = (command.short_help or command.get_short_help_str(limit=200) or "").strip()
    # NAME reads "sdc \- what it does": no repeated "sdc:" and no full stop
    short = short.removeprefix(f"{name}: ").removeprefix("sdc: ").rstrip(".")
    usage = " ".join(command.collect_usage_pieces(ctx))
    parts = [
        f'.TH "{name.upper()}" "1" "" "sdc {__version__}" "sdc manual"',
        ".SH NAME",
        f"{_esc(name)} \\- {_esc(short)}",
        ".SH SYNOPSIS",
        f"\\fB{_esc(ctx.command_path)}\\fR {_esc(usage)}",
        ".SH DESCRIPTION",
        "\n.PP\n".join(_help_paragraphs(command.help or "")),
        ".SH OPTIONS",
        "\n".join(_options(ctx, command)),
        *extra,
        _exit_codes(),
        *([see_also] if see_also else []),  # SEE ALSO comes last (man-pages(7))
    ]
    return "\n".join(parts) + "\n"


def render_pages() -> dict[str, str]:
    """``{file name: troff text}`` for ``sdc``, every subcommand and the two definition
    pages ``sdc-methods.7`` and ``sdc-metrics.7``."""
    from .cli import cli
    from .commands.protect import methods_text

    root = click.Context(cli, info_name="sdc", **cli.context_settings)
    pages = {}
    subs = sorted(cli.list_commands(root))
    see_also = ".SH SEE ALSO\n" + ", ".join(f"\\fBsdc\\-{s}\\fR(1)" for s in subs)
    commands = ".SH COMMANDS\n" + "\n".join(
        f".TP\n\\fBsdc {_esc(s)}\\fR\n{_esc(cli.get_command(root, s).get_short_help_str(limit=200))}"
        for s in subs
    )
    pages["sdc.1"] = _page("sdc", cli, root, [commands, _completion_section()], see_also)
    for s in subs:
        cmd = cli.get_command(root, s)
        ctx = click.Context(cmd, info_name=s, parent=root, **cmd.context_settings)
        extra = []
        if s == "protect":
            extra.append(".SH METHODS\n.nf\n" + _esc(methods_text()) + "\n.fi")
        pages[f"sdc-{s}.1"] = _page(f"sdc-{s}", cmd, ctx, extra, ".SH SEE ALSO\n\\fBsdc\\fR(1)")
    pages["sdc-methods.7"] = methods_page()
    pages["sdc-metrics.7"] = metrics_page()
    return pages


# ---------------------------------------------------------------------------------
# section 7: the definitions of the methods and the measures, from their registries

#: numpydoc sections of a method's docstring that sdc-methods(7) shows (the lead too);
#: Parameters come from the ParamSpecs, Returns and Examples are for programmers.
_DOC_SECTIONS = ("Notes", "References")


def _plain(text: str) -> str:
    """reStructuredText roles and literals as plain text (``x`` -> x, :func:`.a.b` -> a.b)."""
    import re

    text = re.sub(r":[a-z]+:`[.~]?([^`]+)`", r"\1", text)
    return text.replace("``", "").replace("**", "")


def _doc_sections(doc: str) -> dict[str, str]:
    """A numpydoc docstring as ``{"": lead, "Notes": ..., ...}`` (headings underlined with -)."""
    import inspect

    lines = inspect.cleandoc(doc).splitlines()
    sections: dict[str, list[str]] = {"": []}
    current = ""
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and set(lines[i + 1].strip()) == {"-"}:
            current = lines[i].strip()
            sections[current] = []
            i += 2
            continue
        sections[current].append(lines[i])
        i += 1
    return {k: "\n".join(v).strip("\n") for k, v in sections.items()}


def _troff_text(text: str) -> str:
    """Docstring paragraphs as troff: plain paragraphs filled, lists as .IP items."""
    import re

    out = []
    for para in _plain(text).split("\n\n"):
        lines = [ln.rstrip() for ln in para.strip("\n").splitlines()]
        if not lines:
            continue
        item = re.compile(r"^\s*(\d+\.|-)\s+")
        if item.match(lines[0]):
            items: list[list[str]] = []
            for ln in lines:
                m = item.match(ln)
                if m:
                    items.append([m.group(1), ln[m.end():].strip()])
                else:
                    items[-1][1] += " " + ln.strip()
            out.extend(f'.IP "{_esc(mark)}" 4\n{_esc(body)}' for mark, body in items)
        else:
            out.append(".PP\n" + _esc(" ".join(ln.strip() for ln in lines)))
    return "\n".join(out)


def _references(text: str) -> list[str]:
    """A References section as one string per paper (each starts "Surname, I.")."""
    import re

    refs: list[str] = []
    for line in _plain(text).splitlines():
        line = line.strip()
        if not line:
            continue
        if not refs or re.match(r"^[A-Z][\w'-]+( [a-z]+)*( [A-Z][\w'-]+)?, [A-Z]\.", line):
            refs.append(line)
        else:
            refs[-1] += " " + line
    return refs


def _head(name: str, short: str) -> list[str]:
    return [f'.TH "{name.upper()}" "7" "" "sdc {__version__}" "sdc manual"', ".SH NAME",
            f"{_esc(name)} \\- {_esc(short)}"]


def methods_page() -> str:
    """sdc-methods(7): every registered method, its definition, parameters and reference."""
    from .methods import METHODS
    from .methods._spec import CONTRACT_DOC

    parts = _head("sdc-methods", "the microaggregation methods of sdc, defined")
    parts += [".SH DESCRIPTION", _troff_text(
        "Every method of sdc protect, sdc compare and sdc blocks (--method, --methods), as "
        "the registry declares it: what it does, its parameters (--param name=value), its "
        "definition and the paper it implements. A method receives one block of records "
        "and the minimum group size k:\n\n" + "\n".join(f"- {c}" for c in CONTRACT_DOC[2:]) +
        "\n\nUnless said otherwise the records are z-scored (population standard deviation) "
        "and distances are Euclidean; ties go to the record that comes first in the input.")]
    parts.append(".SH METHODS")
    for spec in METHODS.values():
        parts.append(f".SS {_esc(spec.name)}")
        parts.append(".PP\n" + _esc(spec.summary))
        facts = [f"output: {spec.output}", "z-scored input" if spec.standardize else "original units"]
        if spec.max_columns is not None:
            facts.append(f"at most {spec.max_columns} column(s) per block")
        parts.append(".PP\n" + _esc("; ".join(facts) + "."))
        if spec.params:
            parts.append(".PP\nParameters:")
            parts += [f".TP\n\\fB{_esc(p.name)}\\fR={_esc(p.describe().split(': ', 1)[0].split('=', 1)[1])}\n"
                      f"{_esc(p.help)}" for p in spec.params]
        sections = _doc_sections(spec.func.__doc__ or "")
        if sections[""]:
            parts.append(".PP\nDefinition:\n" + _troff_text(sections[""]))
        for title in _DOC_SECTIONS:
            if sections.get(title) and title != "References":
                parts.append(f".PP\n{title}:\n" + _troff_text(sections[title]))
        parts.append(".PP\nReference: " + _esc(spec.reference))
        if sections.get("References"):
            parts.append(".PP\nPapers:\n" + "\n".join(
                '.IP "" 4\n' + _esc(ref) for ref in _references(sections["References"])))
    parts.append(".SH SEE ALSO\n\\fBsdc\\-protect\\fR(1), \\fBsdc\\-compare\\fR(1), "
                 "\\fBsdc\\-blocks\\fR(1), \\fBsdc\\-metrics\\fR(7)")
    return "\n".join(parts) + "\n"


def metrics_page() -> str:
    """sdc-metrics(7): every measure of the catalogue, its definition, direction and reference."""
    from .metrics import METRICS, utility

    conventions = next(p for p in _doc_sections(utility.__doc__ or "")[""].split("\n\n")
                       if p.startswith("Conventions"))
    parts = _head("sdc-metrics", "the risk and utility measures of sdc, defined")
    parts += [".SH DESCRIPTION", _troff_text(
        "Every headline measure of sdc evaluate, sdc protect --evaluate, sdc compare and sdc "
        "blocks, as the catalogue declares it: what it measures, its unit, which direction "
        "is better, its definition, the release gate on it and the paper it comes from.\n\n"
        + conventions)]
    for kind, title in (("utility", "UTILITY MEASURES"), ("risk", "RISK MEASURES")):
        parts.append(f".SH {title}")
        for m in (m for m in METRICS.values() if m.kind == kind):
            parts.append(f".SS {_esc(m.name)} ({_esc(m.heading or m.name)})")
            parts.append(".PP\n" + _esc(m.summary))
            facts = [f"unit: {m.unit}", f"{m.better} is better", f"report key: {m.report_key}"]
            if m.params:
                facts.append("parameters: " + ", ".join(m.params))
            if m.identity is not None:
                facts.append(f"{m.identity:g} when nothing is protected")
            parts.append(".PP\n" + _esc("; ".join(facts) + "."))
            if m.formula:
                parts.append(".PP\nDefinition: " + _esc(_plain(m.formula)))
            if m.notes:
                parts.append(".PP\n" + _esc(_plain(m.notes)))
            if m.gate is not None:
                parts.append(f".PP\nGate: \\fB{_esc(m.gate.option)} {_esc(m.gate.metavar)}\\fR: {_esc(m.gate.help)}")
            parts.append(".PP\nReference: " + _esc(m.reference))
    parts += _key_risk_sections()
    parts.append(".SH SEE ALSO\n\\fBsdc\\-evaluate\\fR(1), \\fBsdc\\-compare\\fR(1), "
                 "\\fBsdc\\-risk\\fR(1), \\fBsdc\\-methods\\fR(7)")
    return "\n".join(parts) + "\n"


def _key_risk_sections() -> list[str]:
    """The measures of sdc risk (categorical keys), from their modules' definitions."""
    from .metrics import keyrisk
    from .metrics.keyrisk import combinations, diversity, frequencies, individual, suda

    parts = [".SH KEY RISK MEASURES (sdc risk)",
             _troff_text(_plain(_doc_sections(keyrisk.__doc__ or "")[""].split("\n\n")[0]))]
    for title, module in (("f_k, F_k and k-anonymity violations", frequencies),
                          ("Individual, global and household risk", individual),
                          ("l-diversity", diversity), ("SUDA2 and DIS-SUDA", suda),
                          ("Combinations and unsafe cells", combinations)):
        parts.append(f".SS {_esc(title)}")
        parts.append(_troff_text(_plain(module.__doc__ or "")))
    refs = _doc_sections(keyrisk.__doc__ or "").get("References")
    if refs:
        parts.append(".SS References")
        parts += [".PP\n" + _esc(r) for r in _references(refs)]
    return parts


def write_pages(target: str | Path) -> list[Path]:
    """Write every page into ``target``; remove stale ``sdc*.1`` and ``sdc*.7`` pages."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    pages = render_pages()
    for old in [*target.glob("sdc*.1"), *target.glob("sdc*.7")]:
        if old.name not in pages:
            old.unlink()
    written = []
    for name, text in pages.items():
        path = target / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written




def exit_code_table() -> str:
    """The exit-code table as Markdown (for README.md)."""
    rows = ["| code | error class | meaning |", "|---|---|---|"]
    rows += [f"| {c} | {cls or '-'} | {m} |" for c, cls, m in EXIT_CODES]
    return "\n".join(rows)


def method_table() -> str:
    """Every registered method as a Markdown table (for README.md)."""
    from .methods import METHODS

    rows = ["| method | what it does | parameters | reference |", "|---|---|---|---|"]
    for spec in METHODS.values():
        params = "<br>".join(f"`{p.name}`={p.default!r}" for p in spec.params) or "-"
        rows.append(f"| `{spec.name}` | {spec.summary} | {params} | {spec.reference} |")
    return "\n".join(rows)


#: The Census table of every method, written by ``benchmarks/methods_census.py --write``.
#: benchmarks/ is not installed with the package: the README is refreshed from a source
#: checkout, and the section is left as it is when the file is absent.
CENSUS_RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "methods_census.md"


def census_table() -> str | None:
    """The README's census-table section: the benchmark's results file, or None."""
    if not CENSUS_RESULTS.is_file():
        return None
    return CENSUS_RESULTS.read_text(encoding="utf-8").strip("\n")


# ---------------------------------------------------------------------------------
# the README's architecture map: every module of the package, one line each

#: the column where a module's summary starts in the map (nested names start 2 further in
#: per level, their summaries too)
MAP_COLUMN = 27

_ABBREVIATIONS = ("al", "e.g", "i.e", "cf", "vs", "etc", "Fig", "No")


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, as plain text, no full stop.

    >>> first_sentence("Partitions: labels, sizes (Hansen et al. 2003).\\n\\nMore.")
    'Partitions: labels, sizes (Hansen et al. 2003)'
    >>> first_sentence("The ``sdc`` command\\nline. Second sentence.")
    'The sdc command line'
    """
    import re

    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    for m in re.finditer(r"\.(?=\s|$)", para):
        word = re.search(r"([\w.]*)$", para[: m.start()]).group(1)
        if word in _ABBREVIATIONS or re.fullmatch(r"[A-Z]", word):
            continue  # "et al. 2006", "e.g. x", an initial
        para = para[: m.start()]
        break
    return _plain(para).rstrip(".").strip()


def _map_lines(folder: Path, level: int) -> list[str]:
    import ast

    lines = []
    entries = sorted(p for p in folder.iterdir()
                     if (p.suffix == ".py" and p.name != "__init__.py")
                     or (p.is_dir() and (p / "__init__.py").is_file()))
    for entry in entries:
        source = entry / "__init__.py" if entry.is_dir() else entry
        doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""
        name = "  " * level + entry.name + ("/" if entry.is_dir() else "")
        width = MAP_COLUMN + 2 * level
        lines.append(f"{name:<{width - 1}} {first_sentence(doc)}".rstrip())
        if entry.is_dir():
            lines += _map_lines(entry, level + 1)
    return lines


def architecture_map() -> str:
    """The README's architecture map: every module and package of ``microagg_cli`` as
    it is on disk now, one line each, the line from the docstring's first sentence."""
    return "```\n" + "\n".join(_map_lines(Path(__file__).resolve().parent, 0)) + "\n```"


def refresh_readme(path: str | Path) -> bool:
    """Rewrite the generated sections of README.md; True when something changed."""
    import re

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    new = text
    sections = [("exit-codes", exit_code_table()), ("methods", method_table()),
                ("architecture", architecture_map())]
    census = census_table()
    if census is not None:
        sections.append(("census-table", census))
    for tag, body in sections:
        new = re.sub(
            rf"(<!-- {tag}:start -->)\n.*?(<!-- {tag}:end -->)",
            lambda m, body=body: m.group(1) + "\n" + body + "\n" + m.group(2),
            new,
            flags=re.S,
        )
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    for page in write_pages(sys.argv[1] if len(sys.argv) > 1 else "man"):
        print(page)
    if len(sys.argv) > 2 and refresh_readme(sys.argv[2]):
        print(sys.argv[2])
