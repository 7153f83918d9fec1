"""The Start sheet: what the workbook answers, how to use it, the legend, units and the master check."""

from __future__ import annotations

from openpyxl.styles import Font, PatternFill

from inference_ledger.graph import verdict

from . import style
from .cells import section
from .context import Ctx

TITLE = "inference-ledger: LLM inference memory, compute and bandwidth plan"
DESCRIPTION = ("How many GPUs, how fast, what it costs: the memory, compute and bandwidth ledgers of one LLM "
               "generation as live, portable formulas (no macros, no add-in).")


def start_sheet(wb, ctx: Ctx) -> None:
    ws = ctx.new_sheet("Start", TITLE, {"A": 34, "B": 30, "C": 100}, tab="1F3864")
    ctx.put(ws, "A3", "How the workbook works: what it answers, how to use it, the legend and the units. The answer "
            "itself is on the Summary sheet.", style.NOTE)
    r = 4
    section(ctx, ws, f"A{r}", "What this workbook answers")
    r += 1
    ctx.put(ws, f"A{r}", "For one LLM on one GPU type: does it fit (memory per GPU: weights + KV cache at peak "
            "concurrency + workspace), how fast is it (TTFT from prefill compute, TPOT from decode bandwidth), "
            "what does it serve and cost. Every number is a live formula: change an input and Excel or LibreOffice "
            "recalculates with nothing else installed.", style.NOTE)
    ws.merge_cells(f"A{r}:C{r}")
    ws.row_dimensions[r].height = 42
    r += 2
    section(ctx, ws, f"A{r}", "How to use it")
    steps = ("Plan: pick the model, the GPU, the weight and KV formats and the serving engine in the yellow dropdowns.",
             "Plan: set TP (GPUs per model copy), prompt and output tokens, and peak concurrent sequences.",
             "Plan: set the peak demand (target QPS, beside its monthly bill); adjust utilization, efficiencies and price.",
             "Read the verdict and charts on Plan; each line's formula and reason is on Memory, Compute, Bandwidth, Cost.",
             "Compare options on Scenarios (copy the last row to add one); keep the master check at 1.",
             "Own or rent: TCO (cost per used GPU-hour), Forecast (what to buy month by month, NPV), "
             "Sensitivity (what drives the cost); their inputs are Plan's Finance group.")
    for i, s in enumerate(steps, 1):
        r += 1
        ctx.put(ws, f"A{r}", f"Step {i}")
        ctx.put(ws, f"B{r}", s)
    r += 2
    section(ctx, ws, f"A{r}", "Legend")
    for name, _f, _fill, _b, text in style.STYLES:
        r += 1
        ctx.put(ws, f"A{r}", name.replace("IL ", ""), name)
        ctx.put(ws, f"B{r}", text)
    for fill, text in ((style.GREEN, f"{verdict.WORDS[3]}: the engine's KV budget holds the requested concurrency, TTFT and TPOT "
                                 "meet their targets"),
                       (style.AMBER, f"{verdict.WORDS[2]} / {verdict.WORDS[1]}: it runs, but a target is missed or the rest of the "
                                 "sequences queue"),
                       (style.RED, f"{verdict.WORDS[0]}: the engine refuses to start (weights + workspace + one sequence's KV over "
                               "its budget; and any 1/0 flag at 0)")):
        r += 1
        c = ctx.put(ws, f"A{r}", "Verdict")
        c.fill, c.font = PatternFill("solid", fgColor=fill[0]), Font(color=fill[1], bold=True)
        ctx.put(ws, f"B{r}", text)
    r += 2
    section(ctx, ws, f"A{r}", "Units")
    units = ("Values are stored in base units (bytes, seconds, FLOP, FLOP/s, B/s); number formats only change "
             "how they look.",
             "GB = 1e9 bytes (decimal, as vendors market memory); GiB = 2^30 bytes (binary, what CUDA, torch and "
             "vLLM logs print, often labelled 'GB'). An '80 GB' H100 is 79.19 GiB at runtime.",
             "TB/s and TFLOP/s are 1e12; FLOP/s are dense (vendors headline the 2x sparse figure).",
             "Latencies are seconds; the 'also' column shows milliseconds (x MS_PER_S), microseconds under one "
             "(x US_PER_S), minutes or hours over a minute.")
    for u in units:
        r += 1
        ctx.put(ws, f"B{r}", u, style.NOTE)
    r += 2
    section(ctx, ws, f"A{r}", "About")
    facts = (("Version", f"inference-ledger {ctx.version}"),
             ("Build date", ctx.build_date.strftime("%Y-%m-%d")),
             ("Method", "Inference Resource Accounting (seed article); KV = 2 x L x K x H x bytes per token "
                        "(the seed's own table drops the factor 2); FLOPs ~ 2N per token (Kaplan et al. 2020)."),
             ("Sources", "Per row on the GPUs, Models and Dtypes sheets (datasheets, Hugging Face config.json)."),
             ("Formulas", "Only portable functions (IF, MIN, MAX, INDEX, MATCH, ROUNDUP, INT, LOG, ...): Excel 2016+, "
                          "Excel 365, LibreOffice, Google Sheets. No macros, no external links."))
    for k, v in facts:
        r += 1
        ctx.put(ws, f"A{r}", k)
        ctx.put(ws, f"B{r}", v, style.NOTE)
    r += 2
    section(ctx, ws, f"A{r}", "Master check")
    r += 1
    ctx.formula(ws, f"A{r}", ctx.name("master_check", ctx.master_value), style.CHECK, style.PASS_FAIL)
    ctx.put(ws, f"B{r}", "pass (1) when every check on the Checks sheet passes and the verdict is \"fits, meets "
            "targets\", FAIL (0) otherwise.")
    for row in range(4, r + 1):
        if ws[f"B{row}"].value:
            ws.merge_cells(f"B{row}:C{row}")

