"""The Calibration sheet: paste measured TPOT, TTFT and KV tokens; back-solve the efficiencies.

For the deployment chosen on Plan (model, GPU, formats, TP, engine inputs), each row takes
one measured run: the batch and context it decoded at, its prompt length, and what was
measured.  The sheet then

* back-solves the **bandwidth fraction** the run achieved: the bytes one decode step reads
  per GPU over (HBM bandwidth x (measured TPOT - the all-reduce and overhead time the plan
  assigns)), the inverse of the plan's expected TPOT;
* back-solves the **prefill compute efficiency**: prefill FLOPs over (peak x TP x TTFT);
* shows each measurement's error against the plan's prediction (TPOT, TTFT, KV tokens).

The medians become ``calibrated_bw_efficiency`` and ``calibrated_prefill_efficiency``
(defined names), switched by ``use_calibration`` (1 = use the medians when there is data,
0 = use the uncalibrated values beside them).  To feed Plan, type
``=calibrated_bw_efficiency`` into Plan's "Decode bandwidth efficiency" input (and
``=calibrated_prefill_efficiency`` into "Prefill compute efficiency"): nothing here reads
those two inputs' cells for the back-solving, so there is no circular reference.

Every formula is portable (IF, ISNUMBER, AND, COUNT, MEDIAN, ABS, MAX, MIN) and uses the
plan's own defined names and :mod:`inference_ledger.core.expr` formula helpers, so it is the same arithmetic as
the plan; the values written with it are computed by the same functions in Python.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from openpyxl.utils import get_column_letter

from inference_ledger.catalogs import engines
from inference_ledger.graph import plan
from inference_ledger.validation.calibrate import (bw_fraction, calibrated, median_or_blank, overhead_ms, prefill_efficiency,
                                        step_bytes, tpot_predicted_ms, ttft_predicted_ms)
from inference_ledger.core.sheetfuncs import abs_, isnumber, where
from inference_ledger.core.refs import count_of
from inference_ledger.core.units import MS_PER_S

from . import style
from .context import Ctx

SHEET = "Calibration"
#: Measurement rows offered (blank rows compute nothing).
RUNS = 10
FIRST = 8  # first measurement row
#: (column, header, unit) of the input columns, then of the computed ones.
INPUT_COLS = (("B", "Batch (sequences decoding together)", "sequences"),
              ("C", "Context per sequence (tokens)", "tokens"),
              ("D", "Prompt tokens (for TTFT)", "tokens"),
              ("E", "Measured TPOT (ms)", "ms"),
              ("F", "Measured TTFT (ms)", "ms"),
              ("G", "Measured KV cache tokens (engine log)", "tokens"))
OUTPUT_COLS = (("H", "Bytes per step per GPU", "B"),
               ("I", "All-reduce + overhead (ms)", "ms"),
               ("J", "Bandwidth fraction (back-solved)", "fraction"),
               ("K", "TPOT predicted (ms)", "ms"),
               ("L", "TPOT error", "fraction"),
               ("M", "Prefill efficiency (back-solved)", "fraction"),
               ("N", "TTFT predicted (ms)", "ms"),
               ("O", "TTFT error", "fraction"),
               ("P", "KV tokens predicted", "tokens"),
               ("Q", "KV tokens error", "fraction"),
               ("R", "|TPOT error|", "fraction"),
               ("S", "|TTFT error|", "fraction"),
               ("T", "|KV error|", "fraction"))
FORMATS = {"B": "#,##0", "ms": "0.00", "fraction": "0.0%", "tokens": "#,##0", "sequences": "#,##0"}


class _Names:
    """Plan quantities by attribute: the plan's values (the formula side: :attr:`workbook.context.Ctx.q`)."""

    def __init__(self, values: dict):
        self._values = values

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values[name]


# --- one row: every formula written once, evaluated or rendered --------------------------


def _row_cells(p, c: dict) -> dict[str, tuple[str, Callable[[], Any]]]:
    """column -> (the column whose number it needs, expression thunk) for one row; c maps columns to refs or values."""
    return {
        "H": ("E", lambda: step_bytes(p, c["B"], c["C"])),
        "I": ("E", lambda: overhead_ms(p, c["B"])),
        "J": ("E", lambda: bw_fraction(p, c["H"], c["I"], c["E"])),
        "K": ("E", lambda: tpot_predicted_ms(p, c["H"], c["I"], c["B"])),
        "L": ("E", lambda: c["K"] / c["E"] - 1),
        "M": ("F", lambda: prefill_efficiency(p, c["D"], c["F"])),
        "N": ("F", lambda: ttft_predicted_ms(p, c["D"])),
        "O": ("F", lambda: c["N"] / c["F"] - 1),
        "P": ("G", lambda: p.kv_capacity_tokens),
        "Q": ("G", lambda: c["P"] / c["G"] - 1),
        "R": ("L", lambda: abs_(c["L"])),
        "S": ("O", lambda: abs_(c["O"])),
        "T": ("Q", lambda: abs_(c["Q"])),
    }


# --- the sheet ----------------------------------------------------------------------------


def add_calibration_sheet(wb, ctx: Ctx, measurements: Optional[list[dict[str, float]]] = None) -> None:
    """Add the Calibration sheet (a workbook sheet builder: ``builder(wb, ctx)``).

    ``measurements``: optional rows to pre-fill, dicts keyed by the input columns' letters
    (B batch, C context, D prompt, E TPOT ms, F TTFT ms, G KV tokens).
    """
    ws = ctx.new_sheet(SHEET, "Calibration: your measurements against the plan",
                       {"A": 44, **{col: 14 for col, _, _ in INPUT_COLS + OUTPUT_COLS}})
    ctx.put(ws, "A3", "Paste measured runs of the deployment chosen on Plan (same model, GPU, formats, TP). Each row "
            "back-solves the HBM bandwidth fraction from TPOT (use batch-1 or small-batch runs: bandwidth-bound) and "
            "the prefill compute efficiency from TTFT (long prompts, no queueing), and shows the plan's error. To "
            "feed Plan, type =calibrated_bw_efficiency into Plan's decode bandwidth efficiency input and "
            "=calibrated_prefill_efficiency into its prefill efficiency input.", style.NOTE)
    ws.merge_cells("A3:T3")
    ctx.put(ws, "A5", "Measurements", style.SECTION)
    head = FIRST - 1
    ctx.put(ws, f"A{head}", "Run", style.HEADER)
    for col, text, _unit in INPUT_COLS + OUTPUT_COLS:
        ctx.put(ws, f"{col}{head}", text, style.HEADER)
    ctx.put(ws, f"B{head - 1}", "Your figures (inputs)", style.NOTE)
    ctx.put(ws, f"H{head - 1}", "Computed from the plan's named quantities", style.NOTE)
    fill = list(measurements or [])
    last = FIRST + RUNS - 1
    for k in range(RUNS):
        r = FIRST + k
        ctx.put(ws, f"A{r}", f"Run {k + 1}")
        given = fill[k] if k < len(fill) else {}
        refs: dict[str, Any] = {}
        for col, _text, unit in INPUT_COLS:
            ctx.put(ws, f"{col}{r}", given.get(col), style.INPUT, FORMATS.get(unit))
            refs[col] = ctx.at(ws, f"{col}{r}")
        cells = _row_cells(ctx.q, refs)   # each column's thunk reads the columns before it from refs
        for col, _text, unit in OUTPUT_COLS:
            guard, expr = cells[col]
            ctx.formula(ws, f"{col}{r}", where(isnumber(refs[guard]), expr(), ""), style.FORMULA, FORMATS.get(unit))
            refs[col] = ctx.at(ws, f"{col}{r}")
    _summary(ctx, ws, last + 2, last, [col for col, _, _ in OUTPUT_COLS])


def _note(ctx: Ctx, ws, r: int, text: str) -> None:
    """An explanation beside a value, spanning the measurement columns (the print pass keeps it on the first page)."""
    ctx.put_beside(ws, f"C{r}", text, style.NOTE)
    ws.merge_cells(f"C{r}:{get_column_letter(20)}{r}")


def _summary(ctx: Ctx, ws, r: int, last: int, computed: list[str]) -> None:
    ctx.put(ws, f"A{r}", "Calibrated values", style.SECTION)
    rng = {col: ctx.span(ws, f"{col}{FIRST}", f"{col}{last}") for col in computed}

    def median(col: str):
        return median_or_blank(rng[col])

    rows = [("Measured runs with TPOT", count_of(rng["J"]), "General", None),
            ("Median bandwidth fraction (back-solved)", median("J"), "0.0%", "calibrated_bw_fraction_median"),
            ("Median prefill efficiency (back-solved)", median("M"), "0.0%", "calibrated_prefill_median"),
            ("Median |TPOT error| at Plan's efficiencies", median("R"), "0.0%", None),
            ("Median |TTFT error| at Plan's efficiencies", median("S"), "0.0%", None),
            ("Median |KV tokens error|", median("T"), "0.0%", None)]
    for label, formula, fmt, name in rows:
        r += 1
        ctx.put(ws, f"A{r}", label)
        ctx.formula(ws, f"B{r}", formula, style.FORMULA, fmt)
        if name:
            ctx.define(name, ws, f"B{r}")
    r += 2
    ctx.put(ws, f"A{r}", "Feed Plan", style.SECTION)
    r += 1
    ctx.put(ws, f"A{r}", "Use calibrated values (1 = yes, 0 = no)")
    ctx.put(ws, f"B{r}", 1, style.INPUT, "0")
    ctx.define("use_calibration", ws, f"B{r}")
    _note(ctx, ws, r, "1: the medians above replace the uncalibrated values whenever there is a measurement.")
    for key, label, col, default_input in (
            ("bw", "Decode bandwidth efficiency", "J", "bw_efficiency"),
            ("prefill", "Prefill compute efficiency", "M", "prefill_efficiency")):
        r += 1
        default = plan.INPUT_BY_NAME[default_input].default
        ctx.put(ws, f"A{r}", f"{label}, uncalibrated")
        ctx.put(ws, f"B{r}", default, style.INPUT, "0.0%")
        uncal = ctx.at(ws, f"B{r}")
        ctx.define(f"uncalibrated_{default_input}", ws, f"B{r}")
        _note(ctx, ws, r, f"Used when there is no measurement or the switch is 0 (Plan's default "
                          f"{default:g}: {plan.INPUT_BY_NAME[default_input].doc})")
        r += 1
        ctx.put(ws, f"A{r}", f"{label}, for Plan")
        formula = calibrated(ctx.name("use_calibration"), rng[col], uncal)
        name = "calibrated_bw_efficiency" if key == "bw" else "calibrated_prefill_efficiency"
        ctx.formula(ws, f"B{r}", formula, style.FORMULA, "0.0%")
        ctx.define(name, ws, f"B{r}")
        _note(ctx, ws, r, f"Type ={name} into Plan's '{plan.INPUT_BY_NAME[default_input].label}' input to use it.")
    r = _profile_section(ctx, ws, r + 2)
    ws.freeze_panes = f"B{FIRST}"
    ws.print_area = f"A1:{get_column_letter(20)}{r}"


#: The profile section's comparisons: (plan line, header, unit, factor to the shown unit, format).
PROFILE_COLS = (("tokens_per_second", "Output tokens/s", "tokens/s", 1, "#,##0.0"),
                ("tpot_seconds", "TPOT (ms)", "ms", MS_PER_S, "0.00"),
                ("ttft_seconds", "TTFT (ms)", "ms", MS_PER_S, "#,##0"),
                ("kv_capacity_tokens", "KV cache tokens", "tokens", 1, "#,##0"))
#: Workload columns of a measured row.
PROFILE_WORKLOAD = (("concurrency", "Concurrency"), ("input_tokens", "Prompt tokens"),
                    ("output_tokens", "Output tokens"), ("max_model_len", "max_model_len"))


def profile_predictions(ctx: Ctx, row: dict) -> dict[str, tuple[float, float]]:
    """(catalog prediction, calibrated prediction) of each measured figure of a profile row, by the plan's lines
    at that row's workload: the Plan's inputs without the profile and with it."""
    def at(inputs: dict) -> dict:
        v = dict(inputs)
        for k in ("concurrency", "input_tokens", "output_tokens", "gpu_memory_utilization"):
            if k in row:
                v[k] = row[k]
        if "max_model_len" in row:   # a start-up log: the engine's prefill chunk follows its max_model_len
            v["max_num_batched_tokens"] = engines.get_engine(ctx.engine).batched_tokens(
                v["gpu_memory_bytes"], ctx.choice.get("gpu", ""), int(row["max_model_len"]))
        return plan.evaluate(v, validate=False)

    cat, cal = at(ctx.catalog_inputs), at(ctx.inputs)
    return {line: (float(cat[line]), float(cal[line])) for line, *_ in PROFILE_COLS if line in row}


def _profile_section(ctx: Ctx, ws, r: int) -> int:
    """The measured rows of a --profile beside the catalog's and the calibrated predictions (values)."""
    prof = getattr(ctx, "profile", None)
    if prof is None:
        return r - 2
    ctx.put(ws, f"A{r}", "Calibrated from your measurements", style.SECTION)
    r += 1
    fitted = ", ".join(f"{k} = {v:.4g}" for k, v in prof.values.items()) or "nothing fitted"
    _note(ctx, ws, r, f"Profile {prof.path} (fitted {prof.date or 'undated'}): {fitted}. Plan uses these values "
                      "(options given to build win). Each row: what the file measured, what the plan predicts at "
                      "its workload from the catalog defaults, and with the fitted values (the plan's own lines).")
    ctx.put(ws, f"A{r}", "Profile", style.HEADER)
    r += 1
    ctx.put(ws, f"A{r}", "name", style.HEADER)
    ctx.put(ws, f"B{r}", "value", style.HEADER)
    first = r + 1
    for name, value in prof.values.items():
        r += 1
        ctx.put(ws, f"A{r}", name)
        ctx.put(ws, f"B{r}", value, style.INPUT, "General")
    if prof.values:
        ctx.define("calibration_profile", ws, f"A{first}:B{r}")
        _note(ctx, ws, first, "The fitted values as a range: =PLAN(model, gpu, key, ..., calibration_profile) plans "
                              "with them in any cell.")
    r += 2
    heads = ["File"] + [h for _, h in PROFILE_WORKLOAD]
    for _, h, _, _, _ in PROFILE_COLS:
        heads += [f"{h} measured", f"{h} catalog", f"{h} calibrated"]
    for j, h in enumerate(heads):
        ctx.put(ws, f"{get_column_letter(j + 1)}{r}", h, style.HEADER)
    for row in prof.measured:
        r += 1
        pred = profile_predictions(ctx, row)
        cells: list = [Path_name(row.get("file", ""))] + [row.get(k) for k, _ in PROFILE_WORKLOAD]
        for line, _h, _u, factor, _fmt in PROFILE_COLS:
            if line in row:
                c, k = pred[line]
                cells += [row[line] * factor, c * factor, k * factor]
            else:
                cells += [None, None, None]
        fmts = [None] + ["#,##0"] * len(PROFILE_WORKLOAD) + [f for *_, f in PROFILE_COLS for _ in range(3)]
        for j, (v, f) in enumerate(zip(cells, fmts)):
            ctx.put(ws, f"{get_column_letter(j + 1)}{r}", v, style.INPUT if j == 0 else None, f)
    return r


def Path_name(path: str) -> str:
    """A file as the sheet names it: its last two path parts (the sheet may be mailed; no local folders)."""
    parts = str(path).replace("\\", "/").split("/")
    return "/".join(parts[-2:])
