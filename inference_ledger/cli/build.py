"""`inference-ledger build`: write the live Excel workbook (no Python needed to use it).

:func:`build_options` adds every option the workbook takes (the plan's: model, GPU,
formats, every plan input; plus ``--scenarios``) so another command (``email``) can
build the same workbook with ``inference_ledger.workbook.build.build_workbook(path, **options)``.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from inference_ledger.core import files
from inference_ledger.graph import verdict
from inference_ledger.core.args import LedgerInputError
from inference_ledger.cli.options import Command, write_options
from inference_ledger.cli.plan import plan_options
from inference_ledger.formulas.finance import DEFAULT_MONTHS, MONTHS_RANGE, finance_options

DEFAULT_OUTPUT = "inference-ledger.xlsx"


def _currency(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Check --currency / --currency-symbol as the workbook will (one line naming the option)."""
    if value is None:
        return value
    try:
        if param.name == "currency":
            return finance_options(None, value, None)[1]
        finance_options(None, None, value)
    except LedgerInputError as e:
        raise click.BadParameter(str(e)) from None
    return value


def _input_file(kind: str) -> Callable:
    """A click callback refusing, before the workbook writer loads, a path that is no regular file within the kind's
    limit (a FIFO, a device: one line, exit 2, as the reader would refuse it seconds later)."""
    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        return value if value is None else files.check_input(value, kind)

    return check


#: The options :func:`build_options` adds beyond the plan's: how the workbook is built, not plan inputs.
BUILD_PARAMETERS = ("scenarios", "forecast_months", "currency", "currency_symbol", "profile")


def build_options(f: Callable) -> Callable:
    """The plan's options (--model, --gpu, --weight-dtype, --kv-dtype, every input), --scenarios, and the
    finance view's --forecast-months, --currency and --currency-symbol."""
    f = click.option("--currency-symbol", metavar="SYMBOL", callback=_currency,
                     help="Symbol every money format shows (default: the currency's, e.g. EUR -> €).")(f)
    f = click.option("--currency", metavar="CODE", callback=_currency,
                     help="ISO 4217 code of the workbook's one currency (default USD). Amounts are not converted: "
                          "give prices in that currency.")(f)
    f = click.option("--forecast-months", type=click.IntRange(*MONTHS_RANGE), metavar="N",
                     help=f"Months in the Forecast sheet's timeline (default {DEFAULT_MONTHS}; "
                          f"{MONTHS_RANGE[0]}-{MONTHS_RANGE[1]}). The growth per month is --growth.")(f)
    f = click.option("--scenarios", metavar="FILE.csv", type=click.Path(exists=True, dir_okay=False),
                     callback=_input_file("scenarios"),
                     help="Scenario rows for the what-if grid: columns label, model, gpu, weight_dtype, kv_dtype "
                          f"and any plan input name (default: ~20 built-in comparisons); {files.limit_words('scenarios')}.")(f)
    return plan_options(f)


@click.command("build", cls=Command)
@click.option("-o", "--output", metavar="FILE", default=DEFAULT_OUTPUT,
              show_default=True, help="Workbook to write (.xlsx; .xltx writes an Excel template).")
@build_options
@write_options
def build_cmd(output: str, **options: Any) -> None:
    """Every number is a live formula that Excel 2016+, LibreOffice and Google Sheets
    recalculate; cached values make it readable in a mail preview. The same inputs
    give the same bytes (set SOURCE_DATE_EPOCH to fix the build date).

    \b
    inference-ledger build
    inference-ledger build -o plan.xlsx --model llama-3.1-70b --gpu h200 --tp 2 --weight-dtype fp8
    inference-ledger build --scenarios my-scenarios.csv
    """
    # openpyxl loads only for the commands that write workbooks
    from inference_ledger.workbook.build import build_workbook

    from inference_ledger.cli.options import calibrated_line, load_profile

    options["profile"] = prof = load_profile(options.get("profile"))
    path, values = build_workbook(output, **options)
    click.echo(f"wrote {path}: {verdict.words_of(values['verdict'])} ({values['total_bytes_per_gpu'] / 1e9:,.1f} GB per GPU of "
               f"{values['usable_bytes_per_gpu'] / 1e9:,.1f} GB usable)")
    if prof is not None:
        click.echo(calibrated_line(prof))
