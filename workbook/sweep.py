"""Sweeps as files: a :class:`inference_ledger.graph.sweep.Table` written as .xlsx (live formulas) or .csv.

Which rows a sweep has, and their inputs, is the library's (:mod:`inference_ledger.graph.sweep`,
through :mod:`inference_ledger.graph.resolve`); this module only writes them.

The .xlsx is written by a small streaming SpreadsheetML writer rather than openpyxl:

* each plan line's formula is rendered once per block and stored as an OOXML *shared
  formula* (ECMA-376 Part 1, 18.3.1.40: ``<f t="shared" ref=.. si=..>`` on the block's
  first cell, ``<f t="shared" si=../>`` below it), the way Excel itself saves a
  filled-down column; a 100,000-row sheet is then a few hundred MB of XML less to
  write, zip and parse;
* every formula cell carries its cached value (computed by the same plan), so mail
  previews and viewers that never recalculate show numbers;
* rows go straight into the zip stream (Zip64 when the sheet could pass 2 GiB) and the
  file appears atomically (temporary file in the same folder, then ``os.replace``);
* the same inputs give the same bytes: zip entries are stamped with the build date
  (``SOURCE_DATE_EPOCH`` when set, else the newest catalog date, as for the workbook),
  and the document properties (docProps/core.xml, app.xml) carry that date too.
"""

from __future__ import annotations

import os
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence
from xml.sax.saxutils import escape

import numpy as np

from inference_ledger import __version__
from inference_ledger.graph import bills, plan, verdict
from inference_ledger.core.args import LedgerInputError
from inference_ledger.core.refs import ROW_MARK, absolute, name as defined_name, template_cell
from inference_ledger.core.expr import Sym
from inference_ledger.core.files import check_name, write_with
from inference_ledger.graph.sweep import (BLOCK_ROWS, DEFAULT_MAX_ROWS, VERDICT_WORDS, Column, SweepSpec, Table,  # noqa: F401
                                    build_sweep, columns, evaluate_block, family_candidates)
from inference_ledger.core.units import CONSTANTS

from .cells import bill, build_date
from .package import MissingCachedValue, zip_info
from .printing import PAGE_WIDTH, streamed_print_setup
from .sweep_csv import write_csv
from .style import AMBER, GREEN, LINE_POINTS, RED, chars_per_line, number_format, shown_as, word_lines
from .tables import load_tables

XLSX_MAX_ROWS = 1_048_576 - 1          # one header row
FONT_POINTS = 10                       # the sheet's font size, its bold header's too
SLICE_ROWS = 256                       # rows turned into XML at a time (bounds the text in memory)
#: Verdict words -> conditional format (dxf 0 green, 1 amber, 2 red).
_VERDICT_DXF = {verdict.WORDS[3]: 0, verdict.WORDS[2]: 1, verdict.WORDS[1]: 1, verdict.WORDS[0]: 2}


# ----------------------------------------------------------------------------------------
# writers
# ----------------------------------------------------------------------------------------

def write(table: Table, path: str | os.PathLike, *, cached: bool = True,
          progress: Optional[Callable[[int], None]] = None) -> Path:
    """Write a .xlsx (live formulas) or .csv (values) atomically, under the file policy of
    :mod:`inference_ledger.core.files`; returns the path."""
    path = check_name(path, "table")
    if path.suffix.lower() == ".xlsx" and table.n_rows > XLSX_MAX_ROWS:
        raise LedgerInputError(f"{table.n_rows:,} rows do not fit one .xlsx sheet (at most {XLSX_MAX_ROWS:,}): write a .csv")
    if path.suffix.lower() == ".csv":
        return write_with(path, "table", lambda tmp: write_csv(table, tmp, progress))
    return write_with(path, "table", lambda tmp: _write_xlsx(table, tmp, cached, progress))


def col_letter(i: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


# styles.xml: cellXfs 0 = General, 1 = header, 2.. = one per number format used
#: ECMA-376 Part 1, 18.8.30: formats every spreadsheet application knows by id (never declared again)
BUILTIN_FORMATS = {"General": 0, "0": 1, "0.00": 2, "#,##0": 3, "#,##0.00": 4, "0%": 9, "0.00%": 10,
                   "0.00E+00": 11, "@": 49}
_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_NS_R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_ROW_MARK = ROW_MARK   # stands for the row number inside a rendered formula


def format_ids(formats: list[str]) -> list[int]:
    """numFmtId of each format: the built-in id where there is one, else 164, 165, ... in order."""
    custom = [f for f in formats if f not in BUILTIN_FORMATS]
    return [BUILTIN_FORMATS[f] if f in BUILTIN_FORMATS else 164 + custom.index(f) for f in formats]


def _styles_xml(formats: list[str]) -> str:
    ids = format_ids(formats)
    custom = [(i, f) for i, f in zip(ids, formats) if i >= 164]
    numfmts = "".join(f'<numFmt numFmtId="{i}" formatCode="{escape(f, {chr(34): "&quot;"})}"/>' for i, f in custom)
    xfs = ('<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
           '<xf numFmtId="0" fontId="1" fillId="2" borderId="0" xfId="0" applyFont="1" applyFill="1" applyAlignment="1">'
           '<alignment wrapText="1" vertical="top"/></xf>'
           + "".join(f'<xf numFmtId="{i}" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
                     for i in ids))
    dxf = "".join(f'<dxf><font><color rgb="FF{fg}"/></font><fill><patternFill><bgColor rgb="FF{bg}"/></patternFill></fill></dxf>'
                  for bg, fg in (GREEN, AMBER, RED))
    return (_XML + f'<styleSheet {_NS}>' + (f'<numFmts count="{len(custom)}">{numfmts}</numFmts>' if custom else "") +
            f'<fonts count="2"><font><sz val="{FONT_POINTS}"/><name val="Calibri"/></font>'
            f'<font><b/><sz val="{FONT_POINTS}"/><color rgb="FFFFFFFF"/><name val="Calibri"/></font></fonts>'
            '<fills count="3"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill>'
            '<fill><patternFill patternType="solid"><fgColor rgb="FF305496"/><bgColor indexed="64"/></patternFill></fill></fills>'
            '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
            '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
            f'<cellXfs count="{2 + len(formats)}">{xfs}</cellXfs>'
            '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            f'<dxfs count="3">{dxf}</dxfs></styleSheet>')


def _xml_text(text) -> str:
    """Text for an inline string, exactly: markup escaped, a carriage return kept as &#13; (XML reads a bare one as LF)."""
    return escape(str(text), {"\r": "&#13;"})


def _t_open(text) -> str:
    """``<t>`` with its text; ``xml:space="preserve"`` only where edge whitespace must survive (the
    ISO/IEC 29500 schema does not declare the attribute, so it is written only when needed)."""
    text = str(text)
    keep = text != text.strip(" \t\n")
    return ('<t xml:space="preserve">' if keep else "<t>") + _xml_text(text)


def _text_cell(ref: str, text: str, style: int = 0) -> str:
    s = f' s="{style}"' if style else ""
    return f'<c r="{ref}"{s} t="inlineStr"><is>{_t_open(text)}</t></is></c>'


def _num_cell(ref: str, value: float, style: int = 0) -> str:
    s = f' s="{style}"' if style else ""
    return f'<c r="{ref}"{s}><v>{float(value)!r}</v></c>'


def _rows_xml(rows: list[list[str]]) -> str:
    return "".join(f'<row r="{r}">{"".join(cells)}</row>' for r, cells in enumerate(rows, start=1))


def _simple_sheet(rows: list[list[tuple]], widths: Sequence[float]) -> str:
    """A small sheet from rows of (kind, value[, style]) with kind 't' text or 'n' number."""
    out = []
    for r, row in enumerate(rows, start=1):
        cells = []
        for j, cell in enumerate(row):
            if cell is None:
                continue
            kind, value, *style = cell
            ref = f"{col_letter(j)}{r}"
            cells.append(_text_cell(ref, value, *style) if kind == "t" else _num_cell(ref, value, *style))
        out.append(cells)
    cols = "".join(f'<col min="{j + 1}" max="{j + 1}" width="{w}" customWidth="1"/>' for j, w in enumerate(widths))
    return _XML + f'<worksheet {_NS} {_NS_R}><cols>{cols}</cols><sheetData>{_rows_xml(out)}</sheetData></worksheet>'


def _cells(prefix: str, rows: list[str], mid: str, values: list, suffix: str) -> list[str]:
    """One column's cells of a block: prefix + row number + mid + value + suffix."""
    return [f"{prefix}{r}{mid}{v}{suffix}" for r, v in zip(rows, values)]


def _value_cells(prefix: str, rows: list[str], mid: str, arr: np.ndarray, formula: bool = False) -> list[str]:
    """Cells ending in a cached value <v>..</v> (left out where an input is not finite).

    A formula whose value is not finite has no cached value a viewer could show: that
    stops the write (:class:`MissingCachedValue`) rather than leave the cell blank.
    """
    if arr.dtype.kind in "USO":
        return _cells(prefix, rows, mid + "<v>", [escape(str(x)) for x in arr.tolist()], "</v></c>")
    a = arr.astype(float)
    bad = ~np.isfinite(a)
    if formula and bad.any():
        cell = prefix.split('"')[1] + rows[int(np.flatnonzero(bad)[0])]
        raise MissingCachedValue(f"{cell}: the formula's value is not a finite number (no cached value to write)")
    whole = not bad.any() and bool(np.all((a == np.round(a)) & (np.abs(a) < 2.0**53)))
    # ints print 4x faster; a list's text is its floats' reprs, made in one call
    text = a.astype(np.int64).tolist() if whole else str(a.tolist())[1:-1].split(", ") if len(a) else []
    out = _cells(prefix, rows, mid + "<v>", text, "</v></c>")
    if bad.any():
        for i in np.flatnonzero(bad):
            out[i] = f"{prefix}{rows[i]}{mid}</c>"
    return out


def _bill_cells(prefix: str, rows: list[str], attrs: str, follow: str, arr: np.ndarray, code: np.ndarray) -> list[str]:
    """A bill column's cells: the cached number where the row starts, the verdict's words (a text result) where not."""
    starts = np.asarray(code, dtype=float) >= 1
    out = _value_cells(prefix, rows, attrs + follow, np.where(starts, np.asarray(arr, dtype=float), 0.0), formula=True)
    for i in np.flatnonzero(~starts):
        out[i] = f'{prefix}{rows[i]}{attrs} t="str"{follow}<v>{escape(str(bill(code[i], 0.0)))}</v></c>'
    return out


def file_date() -> datetime:
    """The date a file carries: SOURCE_DATE_EPOCH when set, else the newest catalog date (as the workbook)."""
    return build_date(load_tables())


def _doc_props(table: Table, when: datetime) -> tuple[str, str]:
    """docProps/core.xml and app.xml: title, subject, author and the file's date."""
    at = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    core = (_XML + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
            ' xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"'
            ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
            f'<dc:title>inference-ledger {escape(table.sheet.lower())}: {table.n_rows:,} plans</dc:title>'
            '<dc:subject>LLM inference capacity plans: GPUs, latency, throughput and cost</dc:subject>'
            '<dc:creator>inference-ledger</dc:creator><cp:lastModifiedBy>inference-ledger</cp:lastModifiedBy>'
            f'<dcterms:created xsi:type="dcterms:W3CDTF">{at}</dcterms:created>'
            f'<dcterms:modified xsi:type="dcterms:W3CDTF">{at}</dcterms:modified></cp:coreProperties>')
    app = (_XML + '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
           f'<Application>inference-ledger {escape(__version__)}</Application><DocSecurity>0</DocSecurity></Properties>')
    return core, app


def _write_xlsx(table: Table, tmp: str, cached: bool, progress) -> None:
    cols = columns(table)
    letters = [col_letter(j) for j in range(len(cols))]
    col_of = {c.key: letters[j] for j, c in enumerate(cols)}
    fixed, cands = set(table.fixed), family_candidates(table)

    def ref(name: str) -> Sym:
        return defined_name(name) if name in fixed else template_cell(col_of[name])

    exprs = {c.key: (verdict.words(ref("verdict")) if c.key == VERDICT_WORDS else plan.key_expression(c.key, ref, cands))
             for c in cols if c.kind == "line"}
    # a row that does not start has no bill: its money and fleet columns (and what reads them) show the verdict's words
    billed = bills.billed([c.key for c in cols if c.kind == "line"])
    for key in billed:
        exprs[key] = bill(ref("verdict"), exprs[key])
    formulas = {k: e.text for k, e in exprs.items()}
    formats = list(dict.fromkeys(number_format(c.unit) for c in cols))
    style = {c.key: (2 + formats.index(number_format(c.unit))) if c.kind != "label" else 0 for c in cols}

    def attrs(c: Column) -> str:
        """What follows the cell reference: the closing quote, the style, and t="str" for text results."""
        return '"' + (f' s="{style[c.key]}"' if style[c.key] else "") + (' t="str"' if c.key == VERDICT_WORDS else "")

    spans = {c.key: (f'<c r="{letters[j]}', attrs(c)) for j, c in enumerate(cols)}
    formula_keys = [c.key for c in cols if c.kind == "line"]
    heads = [c.header + (f" ({shown_as(c.unit)})" if c.unit else "") for c in cols]
    header, last_row = "".join(_text_cell(f"{letters[j]}1", text, 1) for j, text in enumerate(heads)), table.n_rows + 1
    # the verdict's words on one line ("fits, meets target" was cut at 14); a header row its labels' words fill
    width = [16 if c.kind == "label" else max(map(len, verdict.WORDS)) + 2 if c.key == VERDICT_WORDS else 14 for c in cols]
    widths = "".join(f'<col min="{j + 1}" max="{j + 1}" width="{w}" customWidth="1"/>' for j, w in enumerate(width))
    lines = max(word_lines(text, chars_per_line(w, FONT_POINTS, bold=True)) for text, w in zip(heads, width))
    n_labels, pages = len(table.labels), max(1, -(-sum(width) // PAGE_WIDTH))
    printed = streamed_print_setup(f"inference-ledger {__version__}: sweep", pages)
    head = (_XML + f'<worksheet {_NS} {_NS_R}><sheetPr><pageSetUpPr fitToPage="1"/></sheetPr><sheetViews><sheetView workbookViewId="0" tabSelected="1">'
            f'<pane xSplit="{n_labels + 1}" ySplit="1" topLeftCell="{letters[n_labels + 1]}2" activePane="bottomRight" state="frozen"/>'
            f'</sheetView></sheetViews><sheetFormatPr defaultRowHeight="13"/><cols>{widths}</cols>'
            f'<sheetData><row r="1" ht="{max(4, lines) * LINE_POINTS}" customHeight="1">{header}</row>')
    vcol = col_of[VERDICT_WORDS]
    cf = "".join(
        f'<cfRule type="cellIs" dxfId="{dxf}" priority="{k + 1}" operator="equal"><formula>"{escape(text)}"</formula></cfRule>'
        for k, (text, dxf) in enumerate(_VERDICT_DXF.items()))
    fits_col = col_of["fits"]
    tail = (f'</sheetData><autoFilter ref="A1:{letters[-1]}{last_row}"/>'
            f'<conditionalFormatting sqref="{vcol}2:{vcol}{last_row}">{cf}</conditionalFormatting>'
            f'<conditionalFormatting sqref="{fits_col}2:{fits_col}{last_row}">'
            f'<cfRule type="cellIs" dxfId="2" priority="5" operator="equal"><formula>0</formula></cfRule>'
            f'</conditionalFormatting>{printed}</worksheet>')

    def block_xml(r0: int, labels, inputs, si0: int) -> Iterator[str]:
        """A block's rows as XML, a slice at a time; its first row holds each column's shared formula."""
        n = len(next(iter(inputs.values())))
        vals = evaluate_block(table, inputs) if cached else None
        for s in range(0, n, SLICE_ROWS):
            e = min(s + SLICE_ROWS, n)
            rows = [str(r) for r in range(r0 + s, r0 + e)]
            data = []
            for c in cols:
                pre, attrs = spans[c.key]
                if c.kind == "label":
                    data.append(_cells(pre, rows, attrs + ' t="inlineStr"><is>',
                                       [_t_open(x) for x in labels[c.key][s:e]], "</t></is></c>"))
                elif c.kind == "input":
                    data.append(_value_cells(pre, rows, attrs + ">", np.asarray(inputs[c.key][s:e], float)))
                else:
                    si = si0 + formula_keys.index(c.key)
                    follow = f'><f t="shared" si="{si}"/>'
                    if cached and c.key in billed:
                        col = _bill_cells(pre, rows, attrs, follow, vals[c.key][s:e], vals["verdict"][s:e])
                    else:
                        col = (_value_cells(pre, rows, attrs + follow, vals[c.key][s:e], formula=True) if cached
                               else _cells(pre, rows, attrs + follow, [""] * (e - s), "</c>"))
                    if s == 0:
                        L = pre[len('<c r="'):]
                        text = escape(formulas[c.key].replace(_ROW_MARK, rows[0]))
                        col[0] = col[0].replace(follow, f'><f t="shared" ref="{L}{r0}:{L}{r0 + n - 1}" si="{si}">'
                                                f"{text}</f>", 1)
                    data.append(col)
            yield "".join([f'<row r="{r}">{"".join(cells)}</row>' for r, cells in zip(rows, zip(*data))])

    sheets = [table.sheet, "Inputs", "Notes"]
    defined = []
    inputs_rows = [[("t", "Inputs shared by every row (change one and every row follows)", 1), ("t", "Value", 1),
                    ("t", "Unit", 1), ("t", "Name", 1)]]
    for name, value in table.fixed.items():
        i = plan.INPUT_BY_NAME[name]
        inputs_rows.append([("t", i.label), ("n", value), ("t", i.unit), ("t", name)])
        defined.append((name, absolute("Inputs", f"B{len(inputs_rows)}")))
    inputs_rows.append([])
    inputs_rows.append([("t", "Named constants", 1), ("t", "Value", 1), ("t", "Unit", 1), ("t", "Name", 1)])
    for k in CONSTANTS:
        inputs_rows.append([("t", k.doc), ("n", float(k)), ("t", k.unit), ("t", k.name)])
        defined.append((k.name, absolute("Inputs", f"B{len(inputs_rows)}")))

    notes = [[("t", "Combinations that cannot run (not in the sheet)", 1), ("t", "Setting", 1), ("t", "Reason", 1),
              ("t", "Rows skipped", 1)]]
    notes += [[("t", m), ("t", s), ("t", why), ("n", rows)] for m, s, why, rows in table.skipped] or [[("t", "none")]]
    notes += [[], [("t", "Rules", 1)],
              [("t", "TP <= the GPU's gpus_per_node (GPUs catalog): tensor parallelism stays within one node.")],
              [("t", "TP divides the attention heads; KV heads split evenly (K % TP = 0) or replicate evenly (TP % K = 0).")],
              [("t", "Context <= the model's max_position_embeddings.")],
              [], [("t", "Column", 1), ("t", "Name", 1), ("t", "Unit", 1), ("t", "Meaning", 1)]]
    notes += [[("t", c.header), ("t", c.key), ("t", c.unit), ("t", c.doc)] for c in cols if c.kind != "label"]

    workbook_xml = (_XML + f'<workbook {_NS} {_NS_R}><bookViews><workbookView activeTab="0"/></bookViews><sheets>'
                    + "".join(f'<sheet name="{escape(s)}" sheetId="{k + 1}" r:id="rId{k + 1}"/>' for k, s in enumerate(sheets))
                    + '</sheets><definedNames>'
                    + f'<definedName name="_xlnm._FilterDatabase" localSheetId="0" hidden="1">'
                      f"{escape(absolute(sheets[0], f'A1:{letters[-1]}{last_row}', always_quote=True), {chr(34): '&quot;'})}"
                      "</definedName>"
                    + "".join(f'<definedName name="{n}">{t}</definedName>' for n, t in sorted(defined))
                    + "</definedNames>"
                    + ('<calcPr calcId="191029"/>' if cached else '<calcPr calcId="191029" fullCalcOnLoad="1"/>')
                    + "</workbook>")
    rels = (_XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(f'<Relationship Id="rId{k + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                      f'relationships/worksheet" Target="worksheets/sheet{k + 1}.xml"/>' for k in range(len(sheets)))
            + f'<Relationship Id="rId{len(sheets) + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
              'relationships/styles" Target="styles.xml"/></Relationships>')
    content_types = (_XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                     '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                     '<Default Extension="xml" ContentType="application/xml"/>'
                     '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                     'spreadsheetml.sheet.main+xml"/>'
                     + "".join(f'<Override PartName="/xl/worksheets/sheet{k + 1}.xml" ContentType="application/'
                               'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' for k in range(len(sheets)))
                     + '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                       'spreadsheetml.styles+xml"/>'
                       '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.'
                       'core-properties+xml"/>'
                       '<Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                       'extended-properties+xml"/></Types>')
    root_rels = (_XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                 '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                 'officeDocument" Target="xl/workbook.xml"/>'
                 '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/'
                 'core-properties" Target="docProps/core.xml"/>'
                 '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                 'extended-properties" Target="docProps/app.xml"/></Relationships>')
    when = file_date()
    stamp = (max(when.year, 1980), when.month, when.day, when.hour, when.minute, when.second)
    core, app = _doc_props(table, when)

    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, text in (("[Content_Types].xml", content_types), ("_rels/.rels", root_rels),
                           ("docProps/core.xml", core), ("docProps/app.xml", app), ("xl/workbook.xml", workbook_xml),
                           ("xl/_rels/workbook.xml.rels", rels), ("xl/styles.xml", _styles_xml(formats))):
            zf.writestr(zip_info(name, stamp), text)
        r, si0, written = 2, 0, 0
        blocks = table.blocks()
        labels, inputs = next(blocks)
        pieces = block_xml(r, labels, inputs, si0)
        piece = next(pieces)
        # Zip64 only when the sheet could pass 2 GiB (estimated from the first slice, masters included)
        big = len(piece) / min(SLICE_ROWS, table.n_rows) * table.n_rows * 1.5 > zipfile.ZIP64_LIMIT
        sheet = zip_info("xl/worksheets/sheet1.xml", stamp)
        sheet._compresslevel = 1               # fast: a 100,000-row sheet is hundreds of MB of XML
        with zf.open(sheet, "w", force_zip64=big) as f:
            f.write(head.encode())
            f.write(piece.encode())
            while True:
                for piece in pieces:
                    f.write(piece.encode())
                n = len(next(iter(inputs.values())))
                written += n
                r += n
                si0 += len(formula_keys)
                if progress:
                    progress(n)
                nxt = next(blocks, None)
                if nxt is None:
                    break
                labels, inputs = nxt
                pieces = block_xml(r, labels, inputs, si0)
            f.write(tail.encode())
        if written != table.n_rows:
            raise RuntimeError(f"sweep wrote {written} rows, expected {table.n_rows}")
        zf.writestr(zip_info("xl/worksheets/sheet2.xml", stamp), _simple_sheet(inputs_rows, (60, 16, 12, 28)))
        zf.writestr(zip_info("xl/worksheets/sheet3.xml", stamp), _simple_sheet(notes, (40, 28, 90, 14)))
