"""The plan's answer in sentences: one definition for `plan`'s first lines, the email body and the Summary sheet.

Each sentence is written once with the :mod:`inference_ledger.core.expr` helpers over named quantities
(plan inputs and lines, and the choice ids ``model_id``, ``gpu_id``, ``weight_dtype``, ``kv_dtype``,
``engine_id``).  Called with numbers it returns the text (:func:`sentences_of`); called with
:class:`~inference_ledger.core.expr.Sym` references it returns one Excel formula per sentence, so the
workbook's Summary says the same words and stays live.  The numbers in words are rounded for a
reader (GB to 0.1, milliseconds to 0.1, money to the unit or the cent, counts with separators).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from inference_ledger.catalogs import catalog, prices
from inference_ledger.formulas import serving
from inference_ledger.graph import verdict
from inference_ledger.core.sheetfuncs import concat, eq, ge, gt, text, where
from inference_ledger.core.units import BYTES_PER_GB, MS_PER_S

#: The choice ids a sentence names (the workbook's defined names of the dropdowns).
CHOICE_NAMES = ("model_id", "gpu_id", "weight_dtype", "kv_dtype", "engine_id")


class _Q:
    """Attribute access over a mapping of quantities (numbers or Sym references)."""

    def __init__(self, values: Mapping[str, Any]):
        self._v = values

    def __getattr__(self, name: str):
        try:
            return self._v[name]
        except KeyError:
            raise AttributeError(f"the summary needs {name!r}") from None


def count(x):
    return text(x, "#,##0")


def gb(x):
    return concat(text(x / BYTES_PER_GB, "#,##0.0"), " GB")


def ms(x):
    return concat(text(x * MS_PER_S, "#,##0.0"), " ms")


def pct(x):
    return text(x, "0%")


def money(x, symbol: str, cents: bool = False):
    return concat(symbol, text(x, "#,##0.00" if cents else "#,##0"))


#: How the sentences write seconds.
SECONDS_FORMAT = "#,##0.00"


def seconds(x):
    return concat(text(x, SECONDS_FORMAT), " s")


def _noun(n, one: str, many: str):
    """The noun a count takes: singular at 1."""
    return where(eq(n, 1), one, many)


def _counted(n, one: str, many: str):
    """A whole count and its noun: '1 replica', '3 replicas'."""
    return concat(count(n), _noun(n, one, many))


def figures_overridden(n):
    """After a catalog model's name: ' (n of its figures overridden)' when the plan replaces n > 0 of its figures (the
    Plan sheet's model overrides; a model with figures replaced is not that model), else nothing."""
    return where(gt(n, 0), concat(" (", count(n), " of its figures overridden)"), "")


def overridden_words(desc: Mapping[str, Any]) -> str:
    """:func:`figures_overridden` of a ``Resolved.describe()`` (its ``model_figures_given``), as text."""
    return str(figures_overridden(desc.get("model_figures_given") or 0))


def model_words(values: Mapping[str, Any], desc: Mapping[str, Any]) -> str:
    """The model a title names: its name (and what was overridden), or its size where only numbers describe it."""
    return (desc["model_name"] + overridden_words(desc) if desc["model_name"]
            else f"{values['num_params'] / 1e9:,.1f}B-parameter model")


def _question(q, cur):
    # model_overridden: figures_overridden of the model's overridden figures, a cell of its own in the workbook (the
    # Plan sheet's, beside the model group's title), which keeps this formula short
    return concat(q.model_id, q.model_overridden, " on ", q.gpu_id, " (", q.weight_dtype, " weights, ", q.kv_dtype,
                  " KV cache, ", q.engine_id, "), ", _counted(q.gpus_per_replica, " GPU", " GPUs"), " per replica.")


def _targets(q, cur):
    return concat("Targets: ", text(q.target_qps, "#,##0.0"), " requests/s, TTFT under ", seconds(q.ttft_target),
                  ", TPOT under ", ms(q.tpot_target), ".")


def _verdict(q, cur):
    return concat("Verdict: ", verdict.words(q.verdict), ".")


def _memory(q, cur):
    # what is left is the engine's KV budget after the peak KV (what `fits` tests): usable - total under vLLM's rule,
    # more under SGLang's (its activations live outside the budget), so the sentence says it is free for KV
    return concat("Memory per GPU: ", gb(q.total_bytes_per_gpu), " of ", gb(q.usable_bytes_per_gpu), " usable",
                  where(ge(q.headroom_bytes_per_gpu, 0), concat(", ", gb(q.headroom_bytes_per_gpu), " free for KV."),
                        ": it does not fit."))


def _fleet(q, cur):
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No fleet: the plan does not fit.",
                 # the replicas are the GPUs over the first sentence's GPUs per replica (and a key number)
                 concat("For the target QPS: ", _counted(q.gpus_for_qps, " GPU", " GPUs"), " in ",
                        _counted(q.servers_for_qps, " server", " servers"), ", ", pct(q.qps_headroom),
                        " QPS headroom."))


def _cost(q, cur):
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No bill: the plan does not fit.",
                 concat("Cost: ", money(q.monthly_cost_qps, cur), " per month on demand, ",
                        money(q.cost_per_million_output_tokens, cur, True), " per million output tokens (",
                        money(q.owned_cost_per_million_output_tokens, cur, True), " owned)."))


def _own(q, cur):
    # buy or rent compares two bills of a fleet: a plan that does not fit has neither
    owns = eq(q.owned_beats_rent, 1)
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No own-or-rent answer: the plan does not fit.",
                 concat(where(owns, "Owning", "Renting"), " is cheaper at this utilization (break-even ", pct(q.breakeven_utilization),
                        where(owns, concat(", payback ", count(q.payback_months), " months"), ""), ")."))


def _ttft(q, cur):
    # the target is checked on requests arriving one by one at the target QPS (ttft_ok); a benchmark's clients start
    # together, so its mean TTFT (ttft_seconds, and its band) is the next sentence, never compared in its place; the
    # requests spread over the fleet, and a plan that does not fit has none
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No TTFT at the target QPS: the plan does not fit.",
                 concat("TTFT at the target QPS ", seconds(q.ttft_open_seconds),
                        where(eq(q.ttft_ok, 1), " meets", " misses"), " the ", seconds(q.ttft_target), " target."))


def _ttft_benchmark(q, cur):
    # one client is not "started together": its TTFT is a lone prompt's
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No benchmark TTFT: the plan does not fit.",
                 concat("A benchmark of ", count(q.concurrency),
                        where(eq(q.concurrency, 1), " client", " clients started together"), " reports TTFT ",
                        seconds(q.ttft_seconds), "."))


def _ttft_band(q, cur):
    # the band is the left-out measurements' spread around the estimate (the GPU band's sentence says how much of it
    # falls inside); where even its low end is above the estimate, such deployments ran longer than the model says
    lo = q.ttft_seconds_low
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No TTFT band: the plan does not fit.",
                 concat("Its band: ", text(lo, SECONDS_FORMAT), " to ",
                        seconds(q.ttft_seconds_high),
                        where(gt(lo, q.ttft_seconds), "; measured TTFTs run longer than modelled.", ".")))


def _tpot(q, cur):
    # a plan that does not fit still has a step (one sequence's weights and KV read), but no target to meet or miss
    return concat("TPOT ", ms(q.tpot_seconds),
                  where(eq(q.verdict, verdict.DOES_NOT_FIT), " for one sequence, but the plan does not fit.",
                        concat(where(eq(q.tpot_ok, 1), " meets", " misses"), " the ", ms(q.tpot_target), " target.")))


def _band(q, cur):
    # a band whose ends meet (the fleet rounds to the same count at both) says its count once
    lo, hi = q.gpus_for_qps_low, q.gpus_for_qps_high
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No band: the plan does not fit.",
                 concat("Band (about 80% of new measurements fall inside): ", count(lo),
                        where(eq(lo, hi), concat(_noun(hi, " GPU", " GPUs"), " at either end."),
                              concat(" to ", count(hi), " GPUs."))))


def _band_cost(q, cur):
    lo, hi = q.monthly_cost_qps_low, q.monthly_cost_qps_high
    return where(eq(q.verdict, verdict.DOES_NOT_FIT), "No cost band: the plan does not fit.",
                 concat("Monthly cost over the band: ", money(lo, cur),
                        where(eq(lo, hi), " on demand at either end.", concat(" to ", money(hi, cur), " on demand."))))


def _limit(q, cur):
    return concat("What limits a replica: ", serving.limit_words(q.binding_limit), ".")


def _fails(q, cur):
    return where(eq(q.fits * q.kv_fits * q.ttft_ok * q.tpot_ok, 1), "Nothing fails: memory, concurrency, TTFT, TPOT.",
                 concat("Fails:", where(eq(q.fits, 0), " the KV cache is over its budget.",
                                        where(eq(q.kv_fits, 0), " fewer sequences fit than asked.", "")),
                        # a plan that does not start misses no target: no replica runs
                        where(eq(q.verdict, verdict.DOES_NOT_FIT), "",
                              concat(where(eq(q.ttft_ok, 0), " TTFT over target.", ""),
                                     where(eq(q.tpot_ok, 0), " TPOT over target.", "")))))


def _price(q, cur):
    # a bill at the catalog's placeholder hourly price (catalogs.prices) says so; a listed or typed price says nothing
    return where(eq(q.price_listed, 1), "", concat("Price: ", money(q.price_per_gpu_hour, cur, True), " per GPU-hour is a "
                                                   "placeholder (no public list price for ", q.gpu_id, "): every "
                                                   "cost here rests on it; ", prices.PRICE_REMEDY, "."))


#: The sentences, in reading order: (key, label, definition(quantities, currency symbol)).
SENTENCES: tuple[tuple[str, str, Callable[[Any, str], Any]], ...] = (
    ("question", "The question", _question),
    ("targets", "Targets", _targets),
    ("verdict", "Does it fit", _verdict),
    ("memory", "Memory per GPU", _memory),
    ("fleet", "GPUs and servers", _fleet),
    ("cost", "Monthly cost", _cost),
    ("own", "Own or rent", _own),
    ("ttft", "Time to first token", _ttft),
    ("ttft_benchmark", "TTFT a benchmark reports", _ttft_benchmark),
    ("ttft_band", "Its band", _ttft_band),
    ("tpot", "Time per output token", _tpot),
    ("band", "How far to trust it", _band),
    ("band_cost", "Its monthly cost", _band_cost),
    ("limit", "What limits it", _limit),
    ("fails", "What fails", _fails),
    ("price", "Its hourly price", _price),   # last: where the price is listed it says nothing
)


def alternative(label, monthly_cost, symbol: str = "$"):
    """The cheapest alternative that meets the targets (a scenario's label and monthly cost; "" when none does)."""
    return where(eq(label, ""), "Alternatives: no scenario on the Scenarios sheet meets the targets.",
                 concat("Cheapest scenario that meets the targets: ", label, ", ", money(monthly_cost, symbol),
                        " per month."))


def sentence(key: str, quantities: Mapping[str, Any], symbol: str = "$"):
    """One sentence: its text for numbers, its Excel formula (a Sym) for Sym references."""
    fn = {k: f for k, _, f in SENTENCES}[key]
    return fn(_Q(quantities), symbol)


def quantities(values: Mapping[str, Any], desc: Mapping[str, Optional[str]]) -> dict[str, Any]:
    """A plan's evaluated values (inputs included) with the choice ids of ``Resolved.describe()``."""
    ids = {"model_id": desc.get("model") or "the model given by its numbers",
           "model_overridden": overridden_words(desc),
           "gpu_id": desc.get("gpu") or "the GPU given by its numbers",
           "weight_dtype": desc.get("weight_dtype") or "checkpoint", "kv_dtype": desc.get("kv_dtype") or "bf16",
           "engine_id": desc.get("engine") or "",
           "price_listed": 0 if catalog.placeholder_price(desc.get("gpu"), values["price_per_gpu_hour"]) else 1}
    return {**{k: (v.item() if hasattr(v, "item") else v) for k, v in values.items()}, **ids}


def sentences_of(quantities: Mapping[str, Any], symbol: str = "$") -> list[str]:
    """Every sentence of the summary as text, in reading order."""
    return [str(said) for k, _, _ in SENTENCES if (said := sentence(k, quantities, symbol))]   # none is blank


def summary_text(quantities: Mapping[str, Any], symbol: str = "$") -> str:
    """The summary as a paragraph per sentence (what `plan` prints before its table and the email says)."""
    return "\n".join(sentences_of(quantities, symbol))
