"""The generated references in docs/: the CLI (from the click commands), the Excel functions (from the xlwings
registration of ``udfs.excel``), the plan's inputs and lines (from ``plan.INPUTS`` and ``plan.LINES``) and the
library's layers (from ``inference_ledger.LAYERS`` and each sub-package's docstring).

Each reference sits between ``<!-- generated: NAME -->`` and ``<!-- /generated: NAME -->`` in its page, so the pages
keep their hand-written prose around it.  ``python scripts/gen_docs.py`` rewrites every block;
``tests/test_docs.py`` fails while one is stale.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?:.*?\n)?(<!-- /generated: (?P=name) -->)", re.S)


def _cell(text: object) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _help_text(text: str) -> str:
    """A click docstring as Markdown: prose paragraphs as they are, ``\\b`` (no-rewrap) paragraphs as code."""
    out = []
    for para in inspect.cleandoc(text or "").split("\n\n"):
        if para.startswith("\b"):
            out.append("```text\n" + para.lstrip("\b").strip("\n") + "\n```")
        else:
            out.append(" ".join(para.split()))
    return "\n\n".join(out)


# ---------------------------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------------------------

def cli_reference() -> str:
    """Every command's usage, help and options; the plan-input options (shared by the commands that take a plan)
    are listed once, under ``plan``."""
    import click

    from inference_ledger.graph import plan
    from inference_ledger.cli import COMMANDS, main

    root = click.Context(main, info_name="inference-ledger")
    commands = {name: main.get_command(root, name) for name in COMMANDS}
    shared: dict[str, tuple[str, str]] = {}
    plan_ctx = click.Context(commands["plan"], info_name="plan", parent=root)
    for p in commands["plan"].params:
        if isinstance(p, click.Option) and p.name in plan.INPUT_BY_NAME:
            shared[p.name] = p.get_help_record(plan_ctx)

    lines = ["| command | what it does |", "|---|---|"]
    lines += [f"| [`{n}`](#inference-ledger-{n}) | {_cell(short)} |" for n, short in COMMANDS.items()]
    for name, cmd in commands.items():
        ctx = click.Context(cmd, info_name=name, parent=root)
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        lines += ["", f"### inference-ledger {name}", "", f"`inference-ledger {name} {usage}`", "",
                  _help_text(cmd.help), ""]
        own, uses_shared = [], 0
        for p in cmd.params:
            record = p.get_help_record(ctx) if isinstance(p, click.Option) else None
            if record is None:
                continue
            if name != "plan" and shared.get(p.name) == record:
                uses_shared += 1
                continue
            if name == "plan" and p.name in shared:
                continue
            own.append(record)
        own.append(("-h, --help", "Show the help and exit."))
        lines += ["| option | what it sets |", "|---|---|"]
        lines += [f"| `{_cell(opts)}` | {_cell(doc)} |" for opts, doc in own]
        if name == "plan":
            lines += ["", "#### Plan input options", "",
                      "Every plan input is an option (plan, build, email and calibrate take them all; sweep and "
                      "recommend those that are not lists of their own). Units, defaults and ranges as `--help` "
                      "prints them; [plan-lines.md](plan-lines.md) has each input's definition.", "",
                      "| option | what it sets |", "|---|---|"]
            lines += [f"| `{_cell(opts)}` | {_cell(doc)} |" for opts, doc in shared.values()]
        elif uses_shared:
            lines += ["", f"It also takes {uses_shared} of the [plan input options](#plan-input-options), "
                          "as `plan` documents them."]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# the Excel functions
# ---------------------------------------------------------------------------------------------------------------

_META = ("import json, xlwings.server, udfs.excel; "
         "print(json.dumps(xlwings.server.custom_functions_meta(udfs.excel)))")


def _registration() -> dict:
    """What Excel is told about every function (name, description, each argument's doc), as xlwings Lite and
    xlwings Server register them: read in a fresh interpreter, since xlwings picks its decorators on import."""
    env = {**os.environ, "XLWINGS_ON_SERVER": "true", "XLWINGS_LICENSE_KEY": "noncommercial",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _META], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def excel_reference() -> str:
    """Every worksheet function of ``udfs.excel`` in registration order: its call with the optional arguments in
    brackets, its description and one row per argument."""
    from udfs import excel

    meta = {f["name"]: f for f in _registration()["functions"]}
    lines = ["| function | what it returns |", "|---|---|"]
    lines += [f"| [`{f.__name__}`](#{f.__name__.lower()}) | {_cell(f.__doc__)} |" for f in excel.FUNCTIONS]
    for f in excel.FUNCTIONS:
        m = meta[f.__name__]
        sig = inspect.signature(f).parameters
        args = ", ".join(n if p.default is inspect.Parameter.empty else f"[{n}]" for n, p in sig.items())
        lines += ["", f"### {f.__name__}", "", f"`={f.__name__}({args})`", "", _cell(m["description"]), "",
                  "| argument | meaning, unit, allowed values, blank |", "|---|---|"]
        lines += [f"| `{p['name']}` | {_cell(p.get('description', ''))} |" for p in m["parameters"]]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# the plan's inputs and lines
# ---------------------------------------------------------------------------------------------------------------

def _number(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


def inputs_reference() -> str:
    """Every plan input by group: name (the JSON key and workbook name), label, unit, default, allowed range, doc."""
    from inference_ledger.graph import plan

    lines = []
    for group in dict.fromkeys(i.group for i in plan.INPUTS):
        lines += [f"### Inputs: {group}", "", "| name | label | unit | default | allowed | what it is |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| `{i.name}` | {_cell(i.label)} | {_cell(i.unit)} | {_number(i.default)} | "
                  f"{_cell(i.arg.allowed())} | {_cell(i.doc)} |" for i in plan.INPUTS if i.group == group]
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def lines_reference() -> str:
    """Every plan line by ledger: name, label, unit, doc and its Excel formula over the named quantities."""
    from inference_ledger.graph import plan

    lines = []
    defaults = plan.defaults()
    cands = {f.name: f.candidates(defaults[f.bound]) for f in plan.FAMILIES}   # the default GPU's node
    for ledger in dict.fromkeys(ln.ledger for ln in plan.LINES):
        lines += [f"### Lines: {ledger}", "", "| name | label | unit | what it is | formula |", "|---|---|---|---|---|"]
        for ln in plan.LINES:
            if ln.ledger == ledger:
                formula, _ = plan.render(ln, lambda n: n, cands)
                lines.append(f"| `{ln.name}` | {_cell(ln.label)} | {_cell(ln.unit)} | {_cell(ln.doc)} | "
                             f"`{_cell(formula)}` |")
        lines.append("")
    for fam in plan.FAMILIES:   # a family of lines: each member once, at the candidate N (plan --json nests them)
        lines += [f"### Family: {fam.name}", "", _cell(f"{fam.label}. {fam.doc} JSON: {fam.name}.N.member for "
                  f"each candidate N of {fam.param} ({', '.join(fam.key(c) for c in cands[fam.name])} on the default "
                  f"GPU's node)."), "", "| member | label | unit | what it is | formula at N |", "|---|---|---|---|---|"]
        for m in fam.members:
            formula, _ = plan.render_member(f"{fam.name}.N.{m.name}", lambda n: n)
            lines.append(f"| `{m.name}` | {_cell(m.label)} | {_cell(m.unit)} | {_cell(m.doc)} | `{_cell(formula)}` |")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def forecast_reference() -> str:
    """The forecast's conclusions (plan --json keys and the Forecast sheet's defined names), each with its formula
    over the timeline's rows (row(key): the row's months; end(key): its last month)."""
    from inference_ledger.formulas import finance, finance_forecast
    from inference_ledger.core.refs import name

    def row(key):
        return name(f"{key}_months")

    def end(key):
        return name(f"{key}_last")

    lines = ["| key | what it is | unit | formula |", "|---|---|---|---|",
             f"| `forecast_months` | Months in the timeline (`build --forecast-months`; `plan --json`: "
             f"{finance.DEFAULT_MONTHS}) | months | |"]
    for key, label, unit, fn in finance_forecast.FORECAST_SUMMARY:
        lines.append(f"| `{key}` | {_cell(label)} | {_cell(unit)} | `{_cell(fn(row, end, name).text)}` |")
    rows = ", ".join(f"`{k}`" for k, *_ in finance_forecast.forecast_rows(name("forecast_months")))
    lines += ["", _cell(f"Timeline rows (one value a month; `<row>_months` above is the row over the months, "
                        f"`<row>_last` its last month): {rows}."), ""]
    outputs = ", ".join(f"`{k}` ({_cell(label)}, {_cell(unit)})" for k, label, unit in finance_forecast.SENSITIVITY_OUTPUTS)
    inputs = ", ".join(f"`{k}`" for k in finance_forecast.SENSITIVITY_INPUTS)
    lines.append(f"`sensitivity` (the Sensitivity sheet's grid, `finance_forecast.sensitivity`): `step` "
                 f"({finance_forecast.SENSITIVITY_STEP:g}), `months`, and for each output, {outputs}, each key input, {inputs}: "
                 "`{\"low\": output at -step, \"high\": at +step, \"swing\": |high - low|, \"rank\": 1 the largest "
                 "swing, ties in input order}`.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# the layers of the library
# ---------------------------------------------------------------------------------------------------------------

def _first_paragraph(doc: str) -> str:
    """A docstring's first paragraph in Markdown: reST roles as code (``:mod:`.expr``` -> ```expr```)."""
    para = inspect.cleandoc(doc or "").split("\n\n")[0]
    return _cell(re.sub(r":(?:mod|func|data|class):`~?\.?([^`]+)`", r"`\1`", para))


def layers_reference() -> str:
    """The sub-packages, ground floor first (``inference_ledger.LAYERS``), each with its package docstring."""
    import importlib

    import inference_ledger

    lines = ["| layer | package | what lives there |", "|---|---|---|"]
    for i, (layer, packages) in enumerate(inference_ledger.LAYERS, 1):
        for name in packages:
            pkg = importlib.import_module(f"inference_ledger.{name}")
            lines.append(f"| {i} {layer} | `inference_ledger.{name}` | {_first_paragraph(pkg.__doc__)} |")
    return "\n".join(lines)


#: page -> {block name -> generator}
BLOCKS: dict[str, dict[str, Callable[[], str]]] = {
    "cli.md": {"cli": cli_reference},
    "excel-functions.md": {"excel-functions": excel_reference},
    "finance.md": {"forecast-keys": forecast_reference},
    "plan-lines.md": {"plan-inputs": inputs_reference, "plan-lines": lines_reference},
    "architecture.md": {"layers": layers_reference},
}


def rendered(page: str, text: str) -> str:
    """``text`` with every generated block of ``page`` rewritten from the definitions."""
    fresh = {name: gen() for name, gen in BLOCKS[page].items()}
    seen = set()

    def sub(m: re.Match) -> str:
        seen.add(m.group("name"))
        return m.group(1) + fresh[m.group("name")] + "\n" + m.group(3)

    text = BLOCK.sub(sub, text)
    missing = set(fresh) - seen
    if missing:
        raise SystemExit(f"docs/{page} has no block {', '.join(sorted(missing))} (<!-- generated: NAME --> ... "
                         f"<!-- /generated: NAME -->)")
    return text


def stale() -> list[str]:
    """The pages whose generated blocks differ from what the definitions give."""
    return [page for page in BLOCKS if (DOCS / page).read_text() != rendered(page, (DOCS / page).read_text())]


def main() -> None:
    for page in BLOCKS:
        path = DOCS / page
        text = rendered(page, path.read_text())
        if text != path.read_text():
            path.write_text(text)
            print(f"wrote docs/{page}")


if __name__ == "__main__":
    main()
