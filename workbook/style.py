"""Cell styles and number formats of the workbook (FAST/ICAEW conventions).

One look per kind of cell, shown in the Start sheet's legend:
inputs (blue on light yellow), catalog lookups (dark green on pale green),
formulas (black), named constants (grey), checks (1/0, bold).

Number formats show human units without changing values: every quantity is stored in
base units (bytes, seconds, FLOP/s), and a format scales the display (each trailing
comma divides by 1,000), so bytes read as GB and FLOP/s as TFLOP/s while any formula
that refers to the cell still gets bytes.  Seconds have no multiplying format, so they
show in seconds with a millisecond-sized precision; the "ms" column beside each
latency converts with the named constant MS_PER_S.
"""

from __future__ import annotations

import functools
import math
import re

from openpyxl.chart.text import RichText, Text
from openpyxl.chart.title import Title
from openpyxl.drawing.text import CharacterProperties, Paragraph, ParagraphProperties, RegularTextRun
from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Side

from inference_ledger.core import unit_registry

INPUT, LOOKUP, FORMULA, CONSTANT, CHECK, HEADER, TITLE, NOTE, SECTION, ANSWER = (
    "IL Input", "IL Lookup", "IL Formula", "IL Constant", "IL Check", "IL Header", "IL Title", "IL Note", "IL Section",
    "IL Answer")

_thin = Side(style="thin", color="BFBFBF")
_box = Border(left=_thin, right=_thin, top=_thin, bottom=_thin)

#: (name, font, fill, border) of every named style, in legend order.
STYLES = (
    (INPUT, Font(name="Calibri", size=10, color="0000CC"), PatternFill("solid", fgColor="FFF2CC"), _box,
     "Input: type or pick a value here"),
    (LOOKUP, Font(name="Calibri", size=10, color="375623"), PatternFill("solid", fgColor="E2EFDA"), _box,
     "Catalog lookup: INDEX/MATCH into GPUs, Models, Dtypes (override beside it)"),
    (FORMULA, Font(name="Calibri", size=10, color="000000"), PatternFill(fill_type=None), _box,
     "Formula: computed, do not type over"),
    (CONSTANT, Font(name="Calibri", size=10, color="595959"), PatternFill("solid", fgColor="EDEDED"), _box,
     "Named constant: a labelled number every formula refers to by name"),
    (CHECK, Font(name="Calibri", size=10, bold=True), PatternFill("solid", fgColor="DDEBF7"), _box,
     "Check: pass (1) or FAIL (0); formulas read the 1/0"),
)

GREEN = ("C6EFCE", "006100")
AMBER = ("FFEB9C", "9C5700")
RED = ("FFC7CE", "9C0006")


def register(wb) -> None:
    for name, font, fill, border, _ in STYLES:
        wb.add_named_style(NamedStyle(name=name, font=font, fill=fill, border=border,
                                      alignment=Alignment(vertical="top")))
    wb.add_named_style(NamedStyle(name=HEADER, font=Font(name="Calibri", size=10, bold=True, color="FFFFFF"),
                                  fill=PatternFill("solid", fgColor="305496"),
                                  alignment=Alignment(wrap_text=True, vertical="top")))
    wb.add_named_style(NamedStyle(name=TITLE, font=Font(name="Calibri", size=16, bold=True, color="1F3864")))
    wb.add_named_style(NamedStyle(name=SECTION, font=Font(name="Calibri", size=11, bold=True, color="1F3864"),
                                  border=Border(bottom=Side(style="medium", color="1F3864"))))
    wb.add_named_style(NamedStyle(name=ANSWER, font=Font(name="Calibri", size=11, color="000000"),
                                  alignment=Alignment(wrap_text=True, vertical="top")))
    wb.add_named_style(NamedStyle(name=NOTE, font=Font(name="Calibri", size=10, color="404040"),
                                  alignment=Alignment(wrap_text=True, vertical="top")))


#: The currency every money format shows (set per build with :func:`set_currency`; amounts are not converted).
CURRENCY = {"code": "USD", "symbol": "$"}


def set_currency(code: str, symbol: str) -> None:
    """Show every money format with this symbol (the workbook's currency input; amounts stay one currency)."""
    CURRENCY["code"], CURRENCY["symbol"] = code, symbol


def money(fmt: str) -> str:
    """A number format with the build's currency symbol in place of '$'."""
    return fmt.replace(unit_registry.MONEY_MARK, '"' + CURRENCY["symbol"].replace('"', "") + '"')


#: A pass/fail cell (the Checks sheet's results): the value stays 1/0, the reader sees the word.
PASS_FAIL = '[=1]"pass";[=0]"FAIL";General'

decimals_for, plain = unit_registry.decimals_for, unit_registry.plain


def number_format(unit: str, value: float | None = None) -> str:
    """Format of a quantity in its base unit (inference_ledger/data/unit_formats.csv); never scientific notation.

    A unit the registry does not list shows General, or fixed decimals with the unit when the value is very small
    or very large."""
    fmt = unit_registry.excel_format(unit, value, CURRENCY["symbol"])
    if fmt is not None:
        return fmt
    if value is not None and isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0 \
            and not (1e-2 <= abs(value) < 1e9):
        return plain(value, unit if unit not in ("", "code") else "")
    return "General"


def shown_as(unit: str, value: float | None = None) -> str:
    """The unit a reader sees once the number format has scaled the value."""
    shown = unit_registry.shown(unit, value)
    return shown.replace("$", CURRENCY["code"]) if shown.startswith("$") and CURRENCY["symbol"] != "$" else shown


#: Point sizes of a chart's title and of its axis titles (LibreOffice and Excel default to 13-18 pt titles).
CHART_TITLE_PT, AXIS_TITLE_PT = 11, 9


def sized_title(text: str, points: float, bold: bool = True) -> Title:
    """A chart or axis title of this size (the rich text openpyxl writes when a title is a plain string)."""
    cp = CharacterProperties(sz=int(points * 100), b=bold)
    para = Paragraph(pPr=ParagraphProperties(defRPr=cp), r=[RegularTextRun(rPr=cp, t=text)])
    return Title(tx=Text(rich=RichText(p=[para])), overlay=False)


def title_text(title) -> str | None:
    """The words of a chart or axis title (None when it has none)."""
    if title is None:
        return None
    if isinstance(title, str):
        return title
    rich = title.tx.rich if title.tx is not None else None
    if rich is None:
        return None
    return "".join(r.t for p in rich.p for r in (p.r or []))


def tidy_chart(chart) -> None:
    """Every chart's title and axis titles at one size; money axes with sensible decimals."""
    for part in getattr(chart, "_charts", [chart]):
        for axis in (getattr(part, "x_axis", None), getattr(part, "y_axis", None)):
            if axis is None:
                continue
            words = title_text(axis.title)
            if words:
                axis.title = sized_title(words, AXIS_TITLE_PT, bold=False)
            if axis.numFmt is not None and CURRENCY["symbol"] in str(axis.numFmt.formatCode) \
                    and ".000" in str(axis.numFmt.formatCode):
                axis.numFmt.formatCode = str(axis.numFmt.formatCode).replace(".000", ".00")
    words = title_text(chart.title)
    if words:
        chart.title = sized_title(words, CHART_TITLE_PT)


def axis_text(points: float, bold: bool = False) -> RichText:
    """Tick labels of an axis (or a chart title read from a cell) at this size."""
    cp = CharacterProperties(sz=int(points * 100), b=bold)
    return RichText(p=[Paragraph(pPr=ParagraphProperties(defRPr=cp), endParaRPr=cp)])


_QUOTED = re.compile(r'"([^"]*)"')


def display_text(value, fmt: str | None) -> str:
    """About the text a number format shows for a value (to size a column; not a full format engine).

    Handles what this workbook writes: conditions ([=1]"yes"), quoted prefixes and suffixes, thousands
    separators, trailing commas (each divides by 1,000), fixed decimals and percent."""
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return "" if value is None else str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "#NUM!"
    conditions, shown = _parsed_format(fmt or "General")
    for when, text in conditions:
        if when == v:
            return text
    if shown is None:
        return f"{v:.10g}"
    prefix, suffix, decimals, thousands_div, percent, grouped = shown
    if decimals is None:
        return prefix + f"{v:g}" + suffix
    v /= thousands_div
    if percent:
        v *= 100
    number = f"{v:,.{decimals}f}" if grouped else f"{v:.{decimals}f}"
    return prefix + number + percent + suffix


@functools.lru_cache(maxsize=None)
def _parsed_format(fmt: str) -> tuple:
    """A number format read once (columns are sized cell by cell, with a few dozen formats): the conditions that
    come first, as (value, text shown), and the section shown otherwise as (prefix, suffix, decimals or None when
    the format has no digit placeholder, divisor of the trailing commas, "%" or "", thousands separator); None for
    General."""
    conditions = []
    for sec in re.split(r';(?=(?:[^"]*"[^"]*")*[^"]*$)', fmt):
        m = re.match(r"\[=([-0-9.]+)\](.*)$", sec)
        if m:
            conditions.append((float(m.group(1)), "".join(_QUOTED.findall(m.group(2))) or m.group(2)))
            continue
        fmt = sec
        break
    if fmt == "General":
        return tuple(conditions), None
    first = re.search(r"[#0](?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", fmt)   # the first digit outside quotes
    cut = first.start() if first else len(fmt)
    prefix, suffix = "".join(_QUOTED.findall(fmt[:cut])), "".join(_QUOTED.findall(fmt[cut:]))
    body = _QUOTED.sub("", fmt)
    m = re.search(r"[#0,]*0(\.0+)?(,*)(%?)", body)
    if not m:
        return tuple(conditions), (prefix, suffix, None, 1, "", False)
    decimals = len(m.group(1) or "") - (1 if m.group(1) else 0)
    return tuple(conditions), (prefix, suffix, decimals, 1000 ** len(m.group(2)), m.group(3),
                               "," in body[:m.start(2)])


#: Points a line of 10-11 pt text takes in a row's height.
LINE_POINTS = 13.5


def chars_per_line(width: float, size: float = 11, bold: bool = False, prose: bool = True) -> int:
    """Characters a line of a column ``width`` wide holds at a font ``size`` (Calibri: about one width unit a character,
    a digit's, at 11 pt; plain prose runs 15% narrower than bold, its lower-case letters narrower than digits; a text
    with no space, ids and their digits ('fp8_e4m3|e4m3'), does not)."""
    return int(max(1.0, width * 11.0 / size * (1.15 if prose and not bold else 1.0)))


def text_lines(text: str, width: float, size: float = 11, bold: bool = False) -> int:
    """Lines a wrapped text takes in a column ``width`` wide: a bold label or an id list (no space) breaks only where
    a line may (:func:`word_lines`); plain prose about where its length says (its words fill the lines)."""
    prose = " " in text
    per_line = chars_per_line(width, size, bold, prose)
    return word_lines(text, per_line) if bold or not prose else -(-len(text) // per_line)


#: Where a line may break: after a space, or after a hyphen, a bar or a slash ("fp8-e4m3|fp8e4m3", "B/token").
_BREAKS = re.compile(r"[^\s|/-]*(?:[|/-]+|\s+|$)")


def word_lines(text: str, per_line: int) -> int:
    """Lines a text wraps to where lines break: 'Batch (sequences decoding together)' takes four lines of 15 where its
    length says three, and fp8's aliases 'float8|fp8_e4m3|fp8-e4m3|...' break only after a bar or a hyphen; a piece
    longer than a line breaks at the line's end."""
    lines, run = 0, per_line          # the first piece opens a line
    for piece in filter(None, _BREAKS.findall(text)):
        w = len(piece.rstrip())       # a trailing space may overhang the line
        if run + w <= per_line:
            run += len(piece)
        else:
            chunks = max(1, -(-w // per_line))
            lines, run = lines + chunks, len(piece) - (chunks - 1) * per_line
    return max(lines, 1)
