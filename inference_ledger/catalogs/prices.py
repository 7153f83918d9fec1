"""Where a GPU's hourly price comes from: a public list price, or the catalog's placeholder (gpus.csv price_source).

One rule, :func:`on_placeholder`, that the commands evaluate (``catalog.placeholder_price``) and the Checks sheet
renders as its finding "Hourly price of the chosen GPU is a public list price".
"""

from __future__ import annotations

from inference_ledger.core.sheetfuncs import and_, eq, starts_with

#: How gpus.csv's price_source starts where no public on-demand list price was found.
PLACEHOLDER_PRICE = "placeholder"
#: What the commands tell a user whose bill rests on a placeholder price.
PLACEHOLDER_REMEDY = "give --price-per-gpu-hour or edit inference_ledger/data/gpus.csv"
#: ... and a reader of the workbook (its Checks finding).
WORKBOOK_REMEDY = "type your price in the Plan's override"
#: What the summary's price sentence tells every reader (`plan`, the email, the Summary sheet).
PRICE_REMEDY = "give the price you pay (--price-per-gpu-hour, or the Plan sheet's override)"


def on_placeholder(price_source, price_per_gpu_hour, catalog_price):
    """A plan's hourly price is a placeholder when its GPU's price_source says so and it is that catalog price (one
    typed over it is the user's).  Values in, a truth value out; the Checks sheet's lookups in, its formula out."""
    return and_(starts_with(price_source, PLACEHOLDER_PRICE), eq(price_per_gpu_hour, catalog_price))
