"""Every kind of file the project writes opens cleanly in strict readers and in previews.

The four kinds: the default workbook, the .xltx template, a sweep and a recommend file.
For each: every formula cell carries its cached value, every XML part validates against
the ISO/IEC 29500-4 transitional schemas (tests/schemas, see SOURCE.md there), every
chart reference carries a data cache equal to the cells it points at, no custom number
format repeats a built-in one, and data-validation texts keep within Excel's limits.
Sweep and recommend files are byte-for-byte reproducible and carry document properties.
"""

from __future__ import annotations

import re

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from lxml import etree
from openpyxl import load_workbook
from openpyxl.utils.cell import range_boundaries

from ooxml import formula_cell_count, formula_cells_without_value, schema_errors
from renders import opened
from test_cli_rules import cli

ROOT = Path(__file__).resolve().parents[1]
C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
#: ECMA-376 Part 1, 18.8.30: the built-in number formats (ids 0-4, 9-22, 37-40, 45-49), as their codes
BUILTIN_CODES = {"General", "0", "0.00", "#,##0", "#,##0.00", "0%", "0.00%", "0.00E+00", "# ?/?", "# ??/??",
                 "mm-dd-yy", "d-mmm-yy", "d-mmm", "mmm-yy", "h:mm AM/PM", "h:mm:ss AM/PM", "h:mm", "h:mm:ss",
                 "m/d/yy h:mm", "#,##0 ;(#,##0)", "#,##0 ;[Red](#,##0)", "#,##0.00;(#,##0.00)",
                 "#,##0.00;[Red](#,##0.00)", "mm:ss", "[h]:mm:ss", "mmss.0", "##0.0E+0", "@"}
SWEEP = ["sweep", "-m", "llama-3.1-70b,gpt-oss-120b", "-g", "h100-sxm,mi300x", "--tp", "1,2,4,8",
         "--context", "4096,32768"]
RECOMMEND = ["recommend", "-m", "llama-3.1-70b", "--qps", "20", "--input-tokens", "1024", "--output-tokens", "512",
             "-g", "h100-sxm,h200"]
#: a MoE plan whose lines need other number formats than the default's
MOE = {"model": "gpt-oss-120b"}
#: the workbooks read here, rendered ahead by a forked child (conftest.py)
RENDERS_AHEAD = [({}, False), ({}, True), (MOE, False)]


def _cli(args, out: Path, env=None, process=False) -> Path:
    """The command writing ``out``: in process (``env``: the environment it runs in), or in a child process."""
    if process:
        run = subprocess.run([sys.executable, "-m", "inference_ledger", *args, "-o", str(out)], cwd=ROOT,
                             capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        return out
    with pytest.MonkeyPatch.context() as mp:
        if env is not None:
            mp.delenv("SOURCE_DATE_EPOCH", raising=False)
            if "SOURCE_DATE_EPOCH" in env:
                mp.setenv("SOURCE_DATE_EPOCH", env["SOURCE_DATE_EPOCH"])
        code, _, err = cli(*args, "-o", out)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory, workbooks):
    d = tmp_path_factory.mktemp("kinds")
    return {"workbook": workbooks()[0], "template": workbooks(".xltx")[0],
            "sweep": _cli(SWEEP, d / "sweep.xlsx"), "recommend": _cli(RECOMMEND, d / "recommend.xlsx")}


KINDS = ("workbook", "template", "sweep", "recommend")


@pytest.mark.parametrize("kind", KINDS)
def test_every_formula_cell_has_its_cached_value(files, kind):
    assert formula_cell_count(files[kind]) > 100
    assert formula_cells_without_value(files[kind]) == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_part_is_schema_valid(files, kind):
    assert schema_errors(files[kind]) == []


def test_the_schemas_catch_what_openpyxl_leaves_out(files, tmp_path):
    """The validator is live: the scatter chart without its c:scatterStyle (openpyxl's default) fails."""
    src = files["workbook"]
    with zipfile.ZipFile(src) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    charts = [n for n in parts if n.startswith("xl/charts/")]
    for n in charts:
        root = etree.fromstring(parts[n])
        for style in root.iter(f"{C}scatterStyle"):
            style.getparent().remove(style)
        parts[n] = etree.tostring(root)
    broken = tmp_path / "broken.xlsx"
    with zipfile.ZipFile(broken, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)
    assert any("scatterStyle" in e for e in schema_errors(broken))


def _cached(wb, formula: str):
    sheet, _, rng = formula.rpartition("!")
    ws = wb[sheet.strip("'").replace("''", "'")]
    c0, r0, c1, r1 = range_boundaries(rng.replace("$", ""))
    return [ws.cell(r, c).value for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]


#: The elements that hold a series' values (the rest: its title and categories).
VALUES = {f"{C}val", f"{C}xVal", f"{C}yVal"}


@pytest.mark.parametrize("kind", ("workbook", "template"))
def test_every_chart_carries_the_values_it_plots(files, kind):
    wb = opened(files[kind], data_only=True)
    n = 0
    with zipfile.ZipFile(files[kind]) as z:
        charts = [x for x in z.namelist() if x.startswith("xl/charts/chart")]
        assert len(charts) == 13  # Summary 2, Plan 2, Load 2, TCO 3, Forecast 2, Sensitivity 2
        for name in charts:
            root = etree.fromstring(z.read(name))
            for ref in root.iter(f"{C}numRef", f"{C}strRef"):
                want = _cached(wb, ref.findtext(f"{C}f"))
                cache = ref.find(f"{C}numCache" if ref.tag == f"{C}numRef" else f"{C}strCache")
                assert cache is not None, (name, ref.findtext(f"{C}f"))
                assert int(cache.find(f"{C}ptCount").get("val")) == len(want)
                got = {int(p.get("idx")): p.findtext(f"{C}v") for p in cache.iter(f"{C}pt")}
                for i, w in enumerate(want):
                    if isinstance(w, str) and ref.getparent().tag in VALUES:
                        # a series' values stay numbers: a text among them ("does not fit") is a gap, not a label
                        assert ref.tag == f"{C}numRef" and i not in got, (name, i, w)
                    elif isinstance(w, str):
                        assert got[i] == w and ref.tag == f"{C}strRef"
                    else:
                        assert float(got[i]) == pytest.approx(w, rel=1e-12), (name, i)
                n += 1
    # Plan: 4 bar series (title, categories, values), 3 scatter series (x, y; titles are text) = 18;
    # TCO: 5 utilization lines x 3 + 2 scenario bars x 3 = 21; Forecast: 6 series x 2 (titles are text) = 12;
    # Sensitivity: 2 tornadoes x 2 series x 2 = 8
    # Load: tokens/s + its band's low and high + KV marker, TPOT + its band's low and high + KV marker + TPOT target
    # (x, y each) = 18; Summary: cost by scenario (title, categories, values) = 3, tokens/s + TPOT + TPOT target
    # (x, y each) = 6; the two Load charts' and the Summary load chart's titles read a cell on Load = 3; the two
    # Forecast charts' titles read a cell on Forecast = 2
    assert n == 59 + 4 * 2 + 5 * 2 + 3 + 6 + 3 + 2


def test_charts_are_only_in_the_workbook_and_template(files):
    """So the chart-cache test above covers every chart the project writes."""
    for kind in KINDS:
        with zipfile.ZipFile(files[kind]) as z:
            charts = [n for n in z.namelist() if n.startswith("xl/charts/")]
        assert len(charts) == (13 if kind in ("workbook", "template") else 0), kind


@pytest.mark.parametrize("kind", KINDS)
def test_no_custom_number_format_repeats_a_builtin(files, kind):
    with zipfile.ZipFile(files[kind]) as z:
        root = etree.fromstring(z.read("xl/styles.xml"))
    custom = [f.get("formatCode") for f in root.iter(f"{S}numFmt")]
    assert [c for c in custom if c in BUILTIN_CODES] == []


@pytest.mark.parametrize("kind", ("workbook", "template"))
def test_validation_texts_fit_excel_limits(files, kind):
    """Excel refuses a file whose input title passes 32 characters or prompt 255 (error: 32 and 225)."""
    wb = opened(files[kind])
    n = 0
    for ws in wb.worksheets:
        for dv in ws.data_validations.dataValidation:
            n += 1
            assert len(dv.promptTitle or "") <= 32 and len(dv.errorTitle or "") <= 32, dv.promptTitle
            assert len(dv.prompt or "") <= 255 and len(dv.error or "") <= 225, dv.prompt
            if dv.promptTitle:
                assert not dv.promptTitle.endswith((" in", " of", " per", " at", " to")), dv.promptTitle
    assert n > 20


@pytest.mark.parametrize("args", (SWEEP, RECOMMEND), ids=("sweep", "recommend"))
def test_sweep_and_recommend_files_are_reproducible_with_properties(args, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    a = _cli(args, tmp_path / "a.xlsx", env, process=True)   # another process: no state of this one in the bytes
    b = _cli(args, tmp_path / "b.xlsx", env)
    assert a.read_bytes() == b.read_bytes()
    c = _cli(args, tmp_path / "c.xlsx", {**env, "SOURCE_DATE_EPOCH": "1700000000"})  # 2023-11-14T22:13:20Z
    with zipfile.ZipFile(c) as z:
        assert {i.date_time for i in z.infolist()} == {(2023, 11, 14, 22, 13, 20)}
        core = etree.fromstring(z.read("docProps/core.xml"))
        app = etree.fromstring(z.read("docProps/app.xml"))
    ns = {"dc": "http://purl.org/dc/elements/1.1/", "dcterms": "http://purl.org/dc/terms/"}
    assert core.findtext("dcterms:modified", namespaces=ns) == "2023-11-14T22:13:20Z"
    assert core.findtext("dcterms:created", namespaces=ns) == "2023-11-14T22:13:20Z"
    assert core.findtext("dc:title", namespaces=ns).startswith("inference-ledger")
    assert app.findtext("{*}Application").startswith("inference-ledger")
    assert load_workbook(c).properties.title.startswith("inference-ledger")


def _ledger_formats(path) -> dict[tuple[str, str], str]:
    """Each ledger cell's format, its decimal count aside (decimals show three significant digits of the value)."""
    wb = opened(path)
    return {(ws.title, c.coordinate): re.sub(r"0\.0+", "0.0", c.number_format) for ws in (wb["Memory"], wb["Compute"], wb["Bandwidth"])
            for row in ws.iter_rows(min_row=6) for c in row[1:4] if c.value is not None}


def test_number_formats_follow_the_line_not_the_model_picked(files, workbooks):
    """MoE kernel padding is 0 B for Llama and 5.5 GB for gpt-oss-120b: GB (and GiB beside it) either way."""
    moe, _ = workbooks(**MOE)
    dense = _ledger_formats(files["workbook"])
    assert dense == _ledger_formats(moe)
    ws = opened(files["workbook"], data_only=True)["Memory"]
    row = next(r for r in ws.iter_rows(min_row=6) if r[0].value == "MoE kernel padding per GPU")
    assert row[1].value == 0 and row[1].number_format == '#,##0.00,,," GB"'
    # the unit is said once, by the format ("0.00 GB"); the unit column beside it stays empty
    assert row[2].value in (None, "") and row[3].number_format == '#,##0.00" GiB"'


def test_a_unit_column_names_a_unit_its_value_does_not_show_and_stands_off_it(files):
    """'213.51 TFLOP  FLOP' named a unit the value's format had already scaled and shown; and a unit the format does
    not show was printed against the right-aligned value ('2,048elements'). The unit column is blank where the format
    shows a unit, and its words are indented off the value."""
    wb = opened(files["workbook"])
    units = []
    for ws in (wb["Memory"], wb["Compute"], wb["Bandwidth"]):   # one line a row: Line | Value | Unit | Also | Why
        assert [c.value for c in ws[5][:3]] == ["Line", "Value", "Unit"]
        for row in ws.iter_rows(min_row=6, max_col=3):
            text = row[2].value
            if isinstance(text, str) and text and not text.startswith("=") and row[0].value and \
                    str(row[1].value).startswith("="):
                units.append((ws.title, row[0].value, row[1].number_format, row[2]))
    assert units
    for sheet, label, fmt, cell in units:
        shown = re.findall(r'"\s*([^"]+)"\s*$', fmt)
        assert not (shown and shown[0].split()[-1].endswith(cell.value)), (sheet, label, fmt, cell.value)
        assert cell.alignment.horizontal == "left" and cell.alignment.indent >= 1, (sheet, label, cell.value)
    # ... and so is the sentence after the Also column's right-aligned figure ('131.42 GiBResident weights ...')
    why = [ws.cell(r, 5) for ws in (wb["Memory"], wb["Compute"], wb["Bandwidth"]) for r in range(6, ws.max_row + 1)
           if isinstance(ws.cell(r, 4).value, str) and isinstance(ws.cell(r, 5).value, str)
           and not ws.cell(r, 5).value.startswith("=")]    # a line row, not the family tables' formulas below
    assert why and all(c.alignment.indent >= 1 and c.alignment.horizontal == "left" for c in why)
    compute = {label: cell.value for sheet, label, _, cell in units if sheet == "Compute"}
    assert "FLOPs per request" not in compute and compute.get("Prompt tokens per other sequence per step") == "tokens"


def test_a_scenarios_dropdown_column_holds_its_longest_id_on_one_line(files):
    """'qwen3-235b-a22b' wrapped at a hyphen in a 13-character Model column and was cut at its row's height."""
    from inference_ledger.catalogs import catalog, engines

    ws = opened(files["workbook"])["Scenarios"]
    for name, rows in (("model_id", catalog.load_models()), ("gpu_id", catalog.load_gpus()),
                       ("engine_id", engines.load_engines())):
        cell = next(c for row in ws.iter_rows(max_row=12) for c in row if c.value == name)
        ids = [r.id for r in rows]
        width = ws.column_dimensions[cell.column_letter].width
        assert width >= max(len(i) for i in ids) + 1, (name, width, max(ids, key=len))


def test_every_sheets_title_fits_its_first_printed_page(files):
    """The GPU costs title ran past its five printed columns and was cut at the page's edge ('... one source per').
    A title's width at its font size (Calibri: about one column-width unit a character at 11 pt) is within the
    columns sure to print on the sheet's first page."""
    from inference_ledger.workbook.printing import column_width, first_page_last_column

    for ws in opened(files["workbook"]).worksheets:
        title = ws["A1"]
        room = sum(column_width(ws, k) for k in range(1, first_page_last_column(ws) + 1))
        # a title that is a formula (a fleet's ledger: "Cost ledger" & ": the plan does not fit, ...") shows its
        # leading text and the longest of its branches
        texts = re.findall(r'"((?:[^"]|"")*)"', title.value) if title.value.startswith("=") else [title.value]
        text = (texts[0] if title.value.startswith('="') else "") + max(texts[1:] or texts, key=len)
        assert len(text) * title.font.sz / 11 <= room, (ws.title, text, room)


def _chart_spans(path) -> dict[str, list[tuple[int, float]]]:
    """Each sheet's charts as (anchor column, 1-based; width in points), read from the package's drawings."""
    out: dict[str, list[tuple[int, float]]] = {}
    with zipfile.ZipFile(path) as z:
        for k, ws in enumerate(opened(path).worksheets, 1):
            rels = f"xl/worksheets/_rels/sheet{k}.xml.rels"
            if rels not in z.namelist():
                continue
            for target in re.findall(r'/drawing"[^>]*Target="/?([^"]+)"|Target="/?([^"]+drawing\d+\.xml)"',
                                     z.read(rels).decode()):
                drawing = z.read(next(t for t in target if t)).decode()
                out[ws.title] = [(int(col) + 1, int(cx) / 12700) for col, cx in   # 12,700 EMU a point
                                 re.findall(r"<from><col>(\d+)</col>.*?<ext cx=\"(\d+)\"", drawing)]
    return out


def test_every_chart_prints_whole_on_the_first_page_of_a_wide_sheet(files):
    """The Sensitivity sheet's tornado charts were anchored beside their tables (column H) and printed cut, half on
    its first page and half on the second.  On a sheet printed more than one page wide, a chart lies within the
    columns sure to print on the first page, or wholly after them (the Plan's results, after its column break)."""
    from inference_ledger.workbook.printing import column_points, first_page_last_column

    spans = _chart_spans(files["workbook"])
    assert sum(map(len, spans.values())) == 13 and len(spans["Sensitivity"]) == 2, spans
    for ws in opened(files["workbook"]).worksheets:
        if int(ws.page_setup.fitToWidth or 1) <= 1:
            continue   # one page wide: the page holds every column it prints
        edge = sum(column_points(ws, k) for k in range(1, first_page_last_column(ws) + 1))
        for col, width in spans.get(ws.title, []):
            left = sum(column_points(ws, k) for k in range(1, col))
            assert left + width <= edge or left >= edge, (ws.title, col, left, left + width, edge)


def test_the_plans_input_groups_each_have_one_title(files):
    """The Plan listed its inputs in plan.INPUTS order, where the engine, kernel and efficiency inputs interleave:
    'Engine', 'Kernel' and 'Efficiency' each titled two or three blocks down the sheet, and 'Gpu' was misspelt."""
    ws = opened(files["workbook"])["Plan"]
    titles = [c.value for c in ws["A"] if isinstance(c.value, str) and c.font and c.font.i and c.font.b]
    assert len(titles) == len(set(titles)) and titles[:3] == ["Model", "Precision", "GPU"], titles


def test_numeric_validation_enforces_what_its_message_says(files):
    """Plan!D34 (total parameters) said "> 0" but allowed 0: the rule now excludes the bound it names."""
    ws = opened(files["workbook"])["Plan"]
    n = 0
    for dv in ws.data_validations.dataValidation:
        if dv.type == "list":
            continue
        n += 1
        cell = str(dv.sqref)
        op, lo = dv.prompt.split("Allowed: ")[1].split(" ")[:2]
        if op == ">" and dv.type == "custom":
            assert f"{cell}>{float(lo):.15G}" in dv.formula1 and f"ISNUMBER({cell})" in dv.formula1
        elif op == ">":
            assert dv.type == "whole" and float(dv.formula1) == float(lo) + 1
        else:
            assert op == ">=" and dv.operator == "between" and float(dv.formula1) == float(lo)
        assert f"must be a {'whole ' if dv.type == 'whole' else ''}number {op} " in dv.error
    assert n > 30
    # the total-parameters override cell: D of the row the defined name num_params points at
    row = ws.parent.defined_names["num_params"].attr_text.split("$")[-1]
    dv = next(dv for dv in ws.data_validations.dataValidation if str(dv.sqref) == f"D{row}")
    assert dv.formula1 == f"AND(ISNUMBER(D{row}),D{row}>0,D{row}<=100000000000000)"


def test_the_kernels_sheet_shows_every_figure_it_holds(files):
    """A time per byte is a few picoseconds and per KV token a tenth of a nanosecond: a fixed nine decimals showed
    both as 0.000000000 s.  Each column's format shows its smallest non-zero figure to three significant digits
    (never scientific notation), and the two codes (tables measured: 1/0) are whole numbers, not seconds."""
    import math

    ws = opened(files["workbook"], data_only=True)["Kernels"]
    fields = [c.value for c in ws[4]]
    checked = 0
    for row in ws.iter_rows(min_row=6):
        for name, c in zip(fields, row):
            if name in ("kernel_tables", "moe_kernel_table"):
                assert c.number_format == "0" and c.value in (0, 1), (c.coordinate, c.number_format)
            elif isinstance(c.value, float) and c.value:
                decimals = len(c.number_format.split(".")[1].split('"')[0]) if "." in c.number_format else 0
                assert "E" not in c.number_format.upper().replace('" S"', "")
                assert decimals >= 2 - math.floor(math.log10(abs(c.value))), (c.coordinate, c.value, c.number_format)
                checked += 1
    assert checked > 10_000
