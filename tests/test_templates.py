"""templates/ holds what `inference-ledger build` writes today, compared part by part a reviewer can read.

As XlsxWriter's own tests compare a file with Excel's part by part, with an explicit list of
what they ignore, this compares the shipped templates with a fresh build by content: the sheets,
the defined names, every cell (each plan line's formula where its name points, every other
formula and value), the cached values and the data validations.  A difference is reported as
the sheet, cell and both sides, not as a byte offset.  Rebuild after a change with
`inference-ledger build -o templates/inference-ledger.xlsx` (and the same for `.xltx`).
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import pytest

from inference_ledger.graph import plan
from inference_ledger.workbook.build import named

from ooxml import formula_cells_without_value
from renders import opened

pytestmark = pytest.mark.filterwarnings("ignore:.*extension is not supported:UserWarning")

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ("inference-ledger.xlsx", "inference-ledger.xltx")
#: What the comparison leaves out, and why: how the cells look, not what they hold.
IGNORED = {
    "xl/styles.xml": "fonts, fills, borders and number formats",
    "xl/charts/*, xl/drawings/*": "chart layout; the charts' data are cells and compared",
    "column widths, row heights, merged cells, conditional formats": "layout and colours",
    "docProps/*": "title and dates (the dates are the newest catalog date, compared by the reproducibility test)",
}
SHOWN = 12  # differences listed in a failure message


def _close(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


def _cells(wb) -> dict[tuple[str, str], object]:
    return {(ws.title, c.coordinate): c.value for ws in wb.worksheets for row in ws.iter_rows() for c in row
            if c.value is not None}


def _validations(wb) -> set[tuple]:
    return {(ws.title, str(dv.sqref), dv.type, dv.operator, dv.formula1, dv.formula2, dv.promptTitle, dv.prompt,
             dv.error) for ws in wb.worksheets for dv in ws.data_validations.dataValidation}


def _diff(what: str, shipped: dict, fresh: dict) -> list[str]:
    out = [f"{what} {k}: shipped {shipped.get(k)!r}, fresh {fresh.get(k)!r}"
           for k in sorted(set(shipped) | set(fresh), key=str) if not _close(shipped.get(k), fresh.get(k))]
    return out


def _message(name: str, diffs: list[str]) -> str:
    more = f"\n... and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else ""
    return (f"templates/{name} is stale ({len(diffs)} differences; run `inference-ledger build -o templates/{name}`):\n"
            + "\n".join(diffs[:SHOWN]) + more)


@pytest.fixture(scope="module")
def pairs(workbooks):
    """(shipped path, fresh path) per template, built as `inference-ledger build -o templates/NAME` does (no
    SOURCE_DATE_EPOCH: the session's build of the same options)."""
    out = {name: (ROOT / "templates" / name, workbooks(Path(name).suffix)[0]) for name in TEMPLATES}
    for name, (shipped, _) in out.items():
        assert shipped.exists(), f"templates/{name} is missing: run `inference-ledger build -o templates/{name}`"
    return out


@pytest.mark.parametrize("name", TEMPLATES)
def test_same_sheets_names_and_parts(pairs, name):
    shipped, fresh = pairs[name]
    a, b = opened(shipped), opened(fresh)
    assert a.sheetnames == b.sheetnames, _message(name, [f"sheets: shipped {a.sheetnames}, fresh {b.sheetnames}"])
    names = ({n: d.attr_text for n, d in a.defined_names.items()}, {n: d.attr_text for n, d in b.defined_names.items()})
    assert not _diff("defined name", *names), _message(name, _diff("defined name", *names))
    with zipfile.ZipFile(shipped) as za, zipfile.ZipFile(fresh) as zb:
        assert sorted(za.namelist()) == sorted(zb.namelist()), _message(name, ["the package's parts differ"])


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_plan_line_has_its_formula_where_its_name_points(pairs, name):
    """Each plan line's cell holds the line's own rendering over defined names (reviewable one line at a time)."""
    shipped, _ = pairs[name]
    wb = opened(shipped)
    diffs = []
    cells, cands = {}, {}   # each family's table: its grid under the family's name, a row per member
    for fam in plan.FAMILIES:
        (sheet, grid), = list(wb.defined_names[named(fam.name)].destinations)
        rows = list(wb[sheet][grid.replace("$", "")])
        heads = [c.value for c in rows[0]]
        cands[fam.name] = [c for c in fam.candidates(2 ** len(heads)) if "=" + fam.candidate_formula(c).text in heads]
        assert len(cands[fam.name]) == len(heads) >= 4, heads   # the header row: the candidates, in order
        for name, row in zip((fam.param, *fam.member_names), rows):
            for c, cell in zip(cands[fam.name], row):
                cells[fam.flat_name(c, name)] = f"{sheet}!${cell.column_letter}${cell.row}"
        for k, m in enumerate(fam.member_names):
            for c, cell in zip(cands[fam.name], rows[1 + k]):
                want = plan.render_member(fam.flat_name(c, m), lambda n: cells.get(n) or named(n))[0]
                if cell.value != want:
                    diffs.append(f"{fam.flat_name(c, m)} at {sheet}!{cell.coordinate}: shipped {cell.value!r}, "
                                 f"the plan renders {want!r}")
    for line in plan.LINES:
        (sheet, coord), = list(wb.defined_names[named(line.name)].destinations)
        got = wb[sheet][coord.replace("$", "")].value
        formula = plan.render(line, lambda n: cells.get(n) or named(n), cands)[0]
        want = "=" + (formula.formula() if hasattr(formula, "formula") else str(formula)).lstrip("=")
        if line.name == "verdict":   # the workbook's verdict is the plan's unless a typed input breaks a rule
            want = f"=IF(checks_pass=1,{want[1:]},VERDICT_INVALID)"
        if got != want:
            diffs.append(f"{line.name} at {sheet}!{coord}: shipped {got!r}, the plan renders {want!r}")
    assert not diffs, _message(name, diffs)


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_cell_formula_and_value_matches_a_fresh_build(pairs, name):
    shipped, fresh = pairs[name]
    diffs = _diff("cell", _cells(opened(shipped)), _cells(opened(fresh)))
    assert not diffs, _message(name, diffs)


@pytest.mark.parametrize("name", TEMPLATES)
def test_cached_values_present_and_current(pairs, name):
    """A viewer that does not recalculate shows the numbers a fresh build computes."""
    shipped, fresh = pairs[name]
    assert formula_cells_without_value(shipped) == []
    diffs = _diff("cached value", _cells(opened(shipped, data_only=True)),
                  _cells(opened(fresh, data_only=True)))
    assert not diffs, _message(name, diffs)


@pytest.mark.parametrize("name", TEMPLATES)
def test_same_data_validations(pairs, name):
    shipped, fresh = pairs[name]
    a, b = _validations(opened(shipped)), _validations(opened(fresh))
    diffs = [f"validation only shipped: {v}" for v in sorted(a - b, key=str)] + \
            [f"validation only fresh: {v}" for v in sorted(b - a, key=str)]
    assert not diffs, _message(name, diffs)


def test_the_xltx_is_an_excel_template():
    with zipfile.ZipFile(ROOT / "templates" / "inference-ledger.xltx") as z:
        assert "spreadsheetml.template.main+xml" in z.read("[Content_Types].xml").decode()
    with zipfile.ZipFile(ROOT / "templates" / "inference-ledger.xlsx") as z:
        assert "spreadsheetml.sheet.main+xml" in z.read("[Content_Types].xml").decode()
