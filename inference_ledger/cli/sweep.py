"""`inference-ledger sweep`: every combination of the lists, one row each, as live formulas (.xlsx) or values (.csv).

List options take comma-separated values.  Plan inputs that are not swept (output tokens,
efficiencies, targets, prices ...) are options too, generated from :data:`inference_ledger.graph.plan.INPUTS`
like `plan`'s, and hold for every row; in the .xlsx they are named cells on the Inputs sheet.
"""

from __future__ import annotations

import math

import sys
from contextlib import nullcontext
from typing import Any, Callable, Iterable, Optional

import click

from inference_ledger.graph import concurrency as concurrency_choice
from inference_ledger.core.args import LedgerInputError
from inference_ledger.cli.options import (Command, engine_option, calibrated_line, check_output, load_profile, profile_option,
                                          write_options)
from inference_ledger.cli.plan import AUTO_HELP, Quantity, default_help, option_decls, parse_quantity
from inference_ledger.graph.plan import INPUT_BY_NAME, INPUTS
from inference_ledger.graph.sweep import DEFAULT_MAX_ROWS, SweepSpec, Table, build_sweep
from inference_ledger.workbook.sweep import write

#: Inputs a sweep sets per row (the lists, and the catalog's model, format and GPU facts): no option for them.
SWEPT = {"tp", "input_tokens", "concurrency"} | {i.name for i in INPUTS if i.group in ("model", "precision", "gpu")}


def split_list(option: str, text: str, kind: Callable[[str], Any] = str, check: Optional[str] = None,
               ids: bool = False) -> list:
    """'1, 2,4' -> [1, 2, 4]; one clear line for an empty list, an empty or repeated item, or a bad item.

    kind: int for whole numbers, read in the notation `plan` takes (1e3, 1,024, 4K suffixes of the unit).
    check: a plan input whose range each item must be in (the same test and message as `plan`'s option).
    ids: an empty list of ids goes on to the resolver, which refuses an empty id as everywhere else.
    """
    hint = f"'--{option}'"
    raw = [t.strip() for t in str(text).split(",")]
    items = [t for t in raw if t]
    if not items and ids:
        return []
    if not items:
        raise click.BadParameter("empty list", param_hint=hint)
    if len(items) < len(raw):
        raise click.BadParameter(f"{text!r} has an empty item: give comma-separated values, none empty",
                                 param_hint=hint)
    out, seen = [], {}
    for t in items:
        x = _item(t, kind, check, hint)
        key = x.lower() if isinstance(x, str) else x
        if key in seen:
            raise click.BadParameter(f"{t!r} is listed twice in {text!r}: give each value once", param_hint=hint)
        seen[key] = t
        out.append(x)
    return out


def _item(t: str, kind: Callable[[str], Any], check: Optional[str], hint: str) -> Any:
    """One list item: text as given, or a whole number in plan's notation, checked against its input's range."""
    if kind is str:
        return t
    inp = INPUT_BY_NAME.get(check) if check else None
    unit, name = (inp.unit, inp.name) if inp is not None else ("tokens", "")
    try:
        x = parse_quantity(t, unit, name)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=hint) from None
    try:
        if inp is not None:
            inp.arg.check(x)
        elif not math.isfinite(x) or x != int(x):
            raise LedgerInputError(f"{t!r} is not a whole number")
    except LedgerInputError as e:
        raise click.BadParameter(str(e), param_hint=hint) from None
    return kind(x)


def input_options(exclude: Iterable[str], scope: str = "every row") -> Callable:
    """One option per plan input not in ``exclude`` (same names, units and checks as `plan`)."""
    skip = set(exclude)

    def deco(f):
        for i in reversed([i for i in INPUTS if i.name not in skip]):
            f = click.option(*option_decls(i), i.name, type=Quantity(i), default=None,
                             help=f"{i.label} [{i.unit}], {scope}.{default_help(i, per_row=True)}")(f)
        return f
    return deco


def progress_bar(total: int, label: str):
    """A progress bar on a terminal; nothing at all when stderr is piped or redirected."""
    if sys.stderr.isatty():
        return click.progressbar(length=total, label=label, file=sys.stderr)
    return nullcontext(None)


def write_with_progress(table: Table, output: str, label: str) -> None:
    with progress_bar(table.n_rows, label) as bar:
        write(table, output, progress=bar.update if bar is not None else None)


def report_skipped(table: Table, output: str) -> None:
    skipped = sum(n for *_, n in table.skipped)
    where = "the Notes sheet" if output.lower().endswith(".xlsx") else "below"
    extra = f"; {skipped:,} combinations cannot run (see {where})" if skipped else ""
    click.echo(f"wrote {output}: {table.n_rows:,} rows{extra}")
    if not output.lower().endswith(".xlsx"):
        for model, setting, reason, n in table.skipped:
            click.echo(f"note: {model}, {setting}: {reason} ({n:,} rows skipped)", err=True)


@click.command("sweep", cls=Command)
@click.option("--model", "-m", required=True, metavar="IDS", help="Models, comma-separated (ids or aliases).")
@click.option("--gpu", "-g", required=True, metavar="IDS", help="GPUs, comma-separated.")
@click.option("--tp", default="1,2,4,8", show_default=True, metavar="LIST", help="Tensor-parallel degrees.")
@click.option("--weight-dtype", default="native", show_default=True, metavar="LIST",
              help="Weight formats (native = the checkpoint's): bf16, fp8, int8, int4, mxfp4, nvfp4.")
@click.option("--kv-dtype", default="bf16", show_default=True, metavar="LIST", help="KV-cache formats.")
@click.option("--context", default="4096", show_default=True, metavar="LIST",
              help="Tokens per sequence (input + output); input tokens = context - output tokens.")
@click.option("--concurrency", default=concurrency_choice.AUTO, show_default=True, metavar="LIST",
              help="Peak concurrent sequences, numbers or auto: " + AUTO_HELP)
@engine_option("Serving engine whose memory rule, batching defaults and step traits apply (as for `plan`)")
@click.option("--output", "-o", required=True, metavar="PATH", help="sweep.xlsx (live formulas) or sweep.csv (values).")
@click.option("--max-rows", type=click.IntRange(1), default=DEFAULT_MAX_ROWS, show_default=True,
              help="Refuse sweeps with more rows than this (an .xlsx sheet holds 1,048,575).")
@input_options(SWEPT)
@profile_option
@write_options
def sweep_cmd(model: str, gpu: str, tp: str, weight_dtype: str, kv_dtype: str, context: str, concurrency: str,
              engine: str, output: str, max_rows: int, profile: Optional[str], **numbers: Optional[float]) -> None:
    """The .xlsx keeps every plan line as a live formula over its row (change an input on
    the Inputs sheet and every row recalculates); combinations that cannot run (a TP
    that does not split the heads, TP beyond one node, a context past the model's maximum) are listed
    on the Notes sheet with the reason.

    \b
    inference-ledger sweep --model llama-3.1-70b,qwen2.5-72b --gpu h100-sxm,h200,mi300x \\
        --tp 1,2,4,8 --weight-dtype bf16,fp8 --context 4096,32768 --concurrency 1,16,64 -o sweep.xlsx
    """
    check_output(output, "table")
    prof = load_profile(profile)
    if prof is not None:
        numbers = {**numbers, **{k: v for k, v in prof.values.items() if numbers.get(k) is None}}
    spec = SweepSpec(
        model=split_list("model", model, ids=True), gpu=split_list("gpu", gpu, ids=True),
        tp=split_list("tp", tp, int, "tp"),
        weight_dtype=split_list("weight-dtype", weight_dtype), kv_dtype=split_list("kv-dtype", kv_dtype),
        context=split_list("context", context, int), concurrency=[c if concurrency_choice.is_auto(c) else
                                                          split_list("concurrency", c, int, "concurrency")[0]
                                                          for c in split_list("concurrency", concurrency)],
        engine=engine, fixed={k: v for k, v in numbers.items() if v is not None})
    table = build_sweep(spec, max_rows=max_rows)
    write_with_progress(table, output, "sweep")
    report_skipped(table, output)
    if prof is not None:
        click.echo(f"every row {calibrated_line(prof)}")
