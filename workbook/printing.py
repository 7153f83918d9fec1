"""One print setup for every sheet, applied once after all sheets are built (sheets other programs add too).

* A4 landscape, narrow margins, fit to the page width: a sheet whose printed columns are wider than
  :data:`PAGE_WIDTH` character units prints across as many pages as it needs (its first columns repeat on
  each, so a row keeps its label), never shrunk into one unreadable page; the Summary prints on one page.
* Print titles: the rows of the sheet's first table header repeat on every page (unless the sheet set its own).
* Header and footer: sheet name left (the render script finds a sheet's pages by it), the workbook title in
  the middle, version and build date right; page x of y in the footer.
* A link back to the Summary in row 2 of every other sheet, beside the master check.
"""

from __future__ import annotations

import functools
from xml.sax.saxutils import escape

from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter, range_boundaries
from openpyxl.worksheet.hyperlink import Hyperlink

from . import style
from .context import MASTER_WORDS_LONGEST, Ctx

#: Character units of column width that print readably across one landscape A4 page (about 10 pt text).
PAGE_WIDTH = 210
#: The sheet every other sheet links back to.
HOME = "Summary"
#: The link's text.
BACK = "\u2190 Summary"
#: Width Excel gives a column with no width of its own (character units).
DEFAULT_WIDTH = 8.43


def column_width(ws, col: int) -> float:
    dim = ws.column_dimensions.get(get_column_letter(col))
    if dim is not None and dim.hidden:
        return 0.0
    return float(dim.width) if dim is not None and dim.width else DEFAULT_WIDTH


def printed_columns(ws) -> tuple[int, int]:
    """First and last column of the print area (the used range when the sheet set none)."""
    area = ws.print_area
    if area:
        ref = area[0] if isinstance(area, (list, tuple)) else str(area).split(",")[0]
        c0, _, c1, _ = range_boundaries(ref.split("!")[-1].replace("$", ""))
        return c0, c1
    return 1, max(1, ws.max_column)


#: Points per centimetre (chart sizes are in cm), the default row height, and a column's padding in pixels.
PT_PER_CM, DEFAULT_ROW_PT, PAD_PX = 72 / 2.54, 15.0, 5


def column_points(ws, col: int) -> float:
    """A column's width in points (Excel: characters x 7 px + 5 px padding at 96 dpi, 0.75 pt per px)."""
    w = column_width(ws, col)
    return 0.0 if w == 0 else (w * 7 + PAD_PX) * 0.75


def row_points(ws, row: int) -> float:
    dim = ws.row_dimensions.get(row)
    if dim is not None and dim.hidden:
        return 0.0
    return float(dim.height) if dim is not None and dim.height else DEFAULT_ROW_PT


def chart_box(ws, chart) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a chart in points from the sheet's top-left corner."""
    anchor = chart.anchor
    if hasattr(anchor, "_from"):
        col, row = anchor._from.col + 1, anchor._from.row + 1
    else:
        c0, r0, _, _ = range_boundaries(str(anchor))
        col, row = c0, r0
    x = sum(column_points(ws, k) for k in range(1, col))
    y = sum(row_points(ws, k) for k in range(1, row))
    return x, y, x + chart.width * PT_PER_CM, y + chart.height * PT_PER_CM


def overlaps(a, b) -> float:
    """How far two boxes overlap (points, the smaller of the two directions; 0 when apart)."""
    dx = min(a[2], b[2]) - max(a[0], b[0])
    dy = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, min(dx, dy)) if dx > 0 and dy > 0 else 0.0


def last_row_under(ws, bottom: float) -> int:
    """The first row whose bottom edge is at or below ``bottom`` points."""
    y, r = 0.0, 0
    while y < bottom:
        r += 1
        y += row_points(ws, r)
    return r


def _header_rows(ws) -> str | None:
    """The first table header's rows (cells styled as headers), within the top of the sheet."""
    for row in ws.iter_rows(min_row=1, max_row=min(ws.max_row, 40)):
        if any(c.style == style.HEADER for c in row):
            return f"{row[0].row}:{row[0].row}"
    return None


def print_setup(ws, ctx: Ctx, title: str) -> None:
    """Page setup, print titles, header and footer of one sheet."""
    ps = ws.page_setup
    ps.orientation = "landscape"
    ps.paperSize = ws.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    c0, c1 = printed_columns(ws)
    width = sum(column_width(ws, k) for k in range(c0, c1 + 1))
    if ws.title == HOME:
        ps.fitToWidth, ps.fitToHeight = 1, 1
    else:
        pages = max(1, -(-int(width) // PAGE_WIDTH))
        ps.fitToWidth = max(int(ps.fitToWidth or 1), pages)
        ps.fitToHeight = 0
        if ps.fitToWidth > 1 and not ws.print_title_cols and not ws.col_breaks.brk:  # a sheet with its own
            # column breaks (Plan: inputs | results) prints its blocks apart, without repeating column A
            ws.print_title_cols = "A:A"
        if not ws.print_title_rows:
            rows = _header_rows(ws)
            if rows:
                ws.print_title_rows = rows
    ws.print_options.gridLines = False
    ws.print_options.horizontalCentered = False
    m = ws.page_margins
    m.left = m.right = 0.4
    m.top = m.bottom = 0.6
    m.header = m.footer = 0.25
    for part in (ws.oddHeader, ws.evenHeader, ws.firstHeader):
        part.left.text, part.center.text = "&A", title
        part.right.text = f"inference-ledger {ctx.version}, {ctx.build_date:%Y-%m-%d}"
        part.left.size = part.center.size = part.right.size = 8
    for part in (ws.oddFooter, ws.evenFooter, ws.firstFooter):
        part.left.text, part.center.text, part.right.text = "&A", title, "Page &P of &N"
        part.left.size = part.center.size = part.right.size = 8


def streamed_print_setup(title: str, pages: int) -> str:
    """:func:`print_setup` as worksheet XML, for a sheet streamed without openpyxl (the Sweep): A4 landscape,
    ``pages`` across, the sheet name and title in the header, the page number in the footer."""
    title = escape(title)
    return ('<pageMargins left="0.4" right="0.4" top="0.6" bottom="0.6" header="0.25" footer="0.25"/>'
            f'<pageSetup paperSize="9" orientation="landscape" fitToWidth="{pages}" fitToHeight="0"/>'
            f'<headerFooter><oddHeader>&amp;L&amp;A&amp;C{title}</oddHeader>'
            f'<oddFooter>&amp;L&amp;A&amp;RPage &amp;P of &amp;N</oddFooter></headerFooter>')


def link_back(ws, ctx: Ctx) -> None:
    """'Back to Summary' in row 2, in the first empty column right of the master check's text."""
    if ws.title == HOME or HOME not in ws.parent.sheetnames:
        return
    merged = {c for m in ws.merged_cells.ranges if m.min_row <= 2 <= m.max_row
              for c in range(m.min_col, m.max_col + 1)}
    need, col, run = float(MASTER_WORDS_LONGEST), 1, 0.0   # the master check's longest words, about 1 unit a letter
    while run < need or ws.cell(2, col).value is not None or col in merged:
        run += column_width(ws, col)
        col += 1
    c = ctx.put(ws, f"{get_column_letter(col)}2", BACK, "Hyperlink")
    c.hyperlink = Hyperlink(ref=c.coordinate, location=f"'{HOME}'!A1", display=BACK)


#: A purpose line wraps within this width (character units).
PURPOSE_WIDTH = 150
#: Styles whose text may run over the next cells (titles, sections) or wraps by design (headers).
_FREE = (style.TITLE, style.SECTION, style.HEADER, "Hyperlink")


def _merged_cells(ws) -> set[tuple[int, int]]:
    return {(r, c) for m in ws.merged_cells.ranges for r in range(m.min_row, m.max_row + 1)
            for c in range(m.min_col, m.max_col + 1)}


def _style_facts(c) -> tuple:
    """What sizing reads of a cell's style: (left to itself: a free style or wrapped text, number format, width
    factors of its font's size and boldness, horizontal alignment)."""
    size = (c.font.sz or 10) if c.font else 10
    free = c.style in _FREE or bool(c.alignment and c.alignment.wrap_text)
    return (free, c.number_format, max(1.0, size / 10), 1.1 if c.font and c.font.b else 1.0,
            c.alignment.horizontal)


def _shown_width(v, facts: tuple, length=lambda v, fmt: len(style.display_text(v, fmt))) -> float:
    """Character units a value needs in a cell of these style facts (:func:`_style_facts`)."""
    _, number_format, scale, bold, _ = facts
    return length(v, number_format) * scale * bold + 2


@functools.lru_cache(maxsize=1 << 17)
def _number_length(v: float, fmt: str) -> int:
    """Characters a number block's value shows (the blocks of every build of a process repeat the catalog grid's)."""
    return len(style.display_text(v, fmt))


def fit_columns(ws, ctx: Ctx) -> None:
    """Columns as wide as the formatted values and labels they hold (numbers never show ###).

    A number needs its whole formatted text; a label that does not fit wraps where the cell to its right is
    not empty (else it runs over), so the sheet's own widths stay."""
    merged = _merged_cells(ws)
    printed = printed_columns(ws) if ws.print_area else (1, 16384)   # chart data beyond the print area stay as they are
    need: dict[int, float] = {}
    facts: dict[tuple, tuple] = {}   # a sheet has tens of thousands of cells and a few dozen distinct styles
    title, cached = ws.title, ctx.cached
    blocks = ctx.blocks.get(title, ())

    def filled(r: int, col: int) -> bool:
        return ws.cell(r, col).value is not None or any(b.holds(r, col) for b in blocks)

    for (r, col), c in list(ws._cells.items()):
        if c.value is None or (r, col) in merged:
            continue
        key = tuple(c._style) if c._style is not None else None
        f = facts.get(key)
        if f is None:
            f = facts[key] = _style_facts(c)
        free, horizontal = f[0], f[4]
        if free:
            continue
        v = cached.get((title, c.coordinate), c.value) if c.data_type == "f" or (
            isinstance(c.value, str) and c.value.startswith("=") and (title, c.coordinate) in cached) \
            else c.value
        width = _shown_width(v, f)
        if isinstance(v, str):
            # a label runs over an empty neighbour; else it wraps in its column (the sheet's widths stay)
            if filled(r, col + 1) and width > column_width(ws, col) and printed[0] <= col <= printed[1]:
                c.alignment = Alignment(wrap_text=True, vertical="top", horizontal=horizontal)
            continue
        need[col] = max(need.get(col, 0.0), width)
    for block in blocks:   # numbers written straight into the XML, styled as the row above them
        for j, values in enumerate(zip(*block.rows.values())):
            col = block.first_col + j
            above = ws.cell(block.first_row, col)
            f = _style_facts(above)
            if not f[0]:
                need[col] = max(need.get(col, 0.0), max(_shown_width(v, f, _number_length) for v in values))
    for col, w in need.items():
        dim = ws.column_dimensions[get_column_letter(col)]
        if not dim.hidden and column_width(ws, col) < w:
            dim.width = round(w, 1)


def wrap_purpose(ws) -> None:
    """The one-line purpose under the title (row 3) wraps in a merged block of readable width."""
    c = ws["A3"]
    # read row 3 without ws.cell(), which would create the cells it reads: 38 empty cells widened the used range
    # (max_column), so a sheet without a print area (Start) was set to print three pages wide and cut its text
    cells = ws._cells
    if not isinstance(c.value, str) or (3, 1) in _merged_cells(ws) or any(
            cells[(3, k)].value is not None for k in range(2, 40) if (3, k) in cells):
        return
    end, run = 1, column_width(ws, 1)
    while run < PURPOSE_WIDTH and end < 40:
        end += 1
        run += column_width(ws, end)
    ws.merge_cells(start_row=3, start_column=1, end_row=3, end_column=end)
    c.alignment = Alignment(wrap_text=True, vertical="top")


def first_page_last_column(ws) -> int:
    """The last column sure to print on the sheet's first page: its first column break; else, printed N pages wide,
    the columns within 1/N of the printed width (column A's print titles repeat on every further page), which the
    page's width holds whatever scale LibreOffice or Excel fits the columns at."""
    c0, c1 = printed_columns(ws)
    pages = int(ws.page_setup.fitToWidth or 1)
    if ws.col_breaks.brk:
        return min(int(ws.col_breaks.brk[0].id), c1)
    if pages <= 1:
        return c1
    widths = [column_width(ws, k) for k in range(c0, c1 + 1)]
    titles = column_width(ws, 1) if ws.print_title_cols else 0.0
    room, run, last = (sum(widths) + (pages - 1) * titles) / pages, 0.0, c0
    for k, w in zip(range(c0, c1 + 1), widths):
        run += w
        if run > room:
            break
        last = k
    return last


def fit_merged_text_to_page(ws) -> None:
    """A text merged along a row beyond the first printed page was cut at the page's edge (the purpose under the
    title; the Calibration sheet's notes beside its values): it is merged over the first page's columns instead and
    wraps, and its row then grows to the lines it needs (a formula's text is left as it is)."""
    last = first_page_last_column(ws)
    for m in list(ws.merged_cells.ranges):
        c = ws.cell(m.min_row, m.min_col)
        if m.min_row != m.max_row or not m.min_col < last < m.max_col or not isinstance(c.value, str) \
                or c.value.startswith("="):
            continue
        ws.unmerge_cells(str(m))
        ws.merge_cells(start_row=m.min_row, start_column=m.min_col, end_row=m.min_row, end_column=last)
        c.alignment = Alignment(wrap_text=True, vertical="top", horizontal=c.alignment.horizontal,
                                indent=c.alignment.indent)


def finish(wb, ctx: Ctx, title: str) -> None:
    """The central pass over every sheet of the workbook: widths, link, print setup, chart titles."""
    for ws in wb.worksheets:
        fit_columns(ws, ctx)
        wrap_purpose(ws)
        link_back(ws, ctx)
        print_setup(ws, ctx, title)
        fit_merged_text_to_page(ws)
        for chart in ws._charts:
            style.tidy_chart(chart)

