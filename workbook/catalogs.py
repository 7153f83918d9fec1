"""The catalog sheets (GPUs, Models, Dtypes, GPU costs): the tables every lookup and dropdown reads."""

from __future__ import annotations

from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter


from . import style
from .cells import ROW_LINES_MAX, shown
from .context import Ctx, SheetBuilder
from .tables import FIELD_ROW, FIRST_ROW, HEADER_ROW, TABLE_ROWS, UNIT_ROW

#: A catalog text column holding an entry longer than this (characters) is shown wrapped in a wide column
#: (sources, quotes, notes and the engines' trait sources run long); a shorter one is as wide as its label.
LONG_TEXT, WIDE_COLUMN = 60, 48


def catalog_sheet(sheet: str) -> SheetBuilder:
    def build(wb, ctx: Ctx) -> None:
        t = ctx.tables[sheet]
        ws = ctx.new_sheet(sheet, t.title, tab="A5A5A5")
        ctx.put(ws, "A3", f"Add a row at the bottom (keep the field ids in row {FIELD_ROW}): it appears in the Plan and "
                "Scenarios dropdowns. Values in base units (bytes, B/s, FLOP/s); formats show GB, TB/s, TFLOP/s. A long "
                f"source shows its first {ROW_LINES_MAX} lines: the cell holds all of it.",
                style.NOTE)
        ws.merge_cells("A3:L3")
        ncol = len(t.columns)
        last_col = get_column_letter(ncol)
        end = FIRST_ROW + TABLE_ROWS - 1
        wide = {col.field for col in t.columns
                if any(isinstance(v := t.value(e.id, col.field), str) and len(v) > LONG_TEXT for e in t.rows)}
        for j, col in enumerate(t.columns):
            L = get_column_letter(j + 1)
            ctx.put(ws, f"{L}{FIELD_ROW}", col.field, style.NOTE)
            ctx.put(ws, f"{L}{HEADER_ROW}", col.label, style.HEADER)
            sample = next((v for e in t.rows if isinstance(v := t.value(e.id, col.field), (int, float))), None)
            ctx.put(ws, f"{L}{UNIT_ROW}", shown(col.unit, sample), style.NOTE)
            ws.column_dimensions[L].width = WIDE_COLUMN if col.field in wide else max(11, min(24, len(col.label) + 2))
        cells = {c.field: get_column_letter(k + 1) for k, c in enumerate(t.columns)}
        for i, entry in enumerate(t.rows):
            r = FIRST_ROW + i
            for j, col in enumerate(t.columns):
                coord = f"{get_column_letter(j + 1)}{r}"
                value = t.value(entry.id, col.field)
                fmt = style.number_format(col.unit, value if isinstance(value, (int, float)) else None)
                if col.field in t.formulas:
                    expr = t.formulas[col.field](lambda f, r=r: ctx.at(ws, f"{cells[f]}{r}"))
                    ctx.formula(ws, coord, expr, style.FORMULA, fmt)
                else:
                    c = ctx.put(ws, coord, value, style.INPUT, fmt)
                    if col.field in wide:
                        c.alignment = Alignment(wrap_text=True, vertical="top")
        ctx.define(t.ids, ws, f"A{FIRST_ROW}:A{end}")
        ctx.define(t.table, ws, f"A{FIRST_ROW}:{last_col}{end}")
        ctx.define(t.fields_name, ws, f"A{FIELD_ROW}:{last_col}{FIELD_ROW}")
        ws.freeze_panes = f"B{FIRST_ROW}"
        ws.auto_filter.ref = f"A{HEADER_ROW}:{last_col}{FIRST_ROW + len(t.rows) - 1}"
        ws.print_title_rows = f"{HEADER_ROW}:{UNIT_ROW}"
        ws.print_area = f"A1:{last_col}{FIRST_ROW + len(t.rows) - 1}"
    build.__name__ = f"{sheet.lower()}_sheet"
    return build

