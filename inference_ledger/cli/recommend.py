"""`inference-ledger recommend`: a thin command over :func:`inference_ledger.graph.recommend.recommend`.

The deployments that meet a QPS, TTFT and TPOT target, cheapest per month first.

For each GPU, TP degree and format the plan already knows the answer in closed form:
the most sequences in flight that fit in memory *and* keep TPOT within its target
(``serving_concurrency`` = min(``max_concurrency``, ``tpot_max_batch``)).  QPS per replica,
B / (TTFT + (T - 1) x TPOT(B)), grows with B, so that concurrency needs the fewest replicas.
The plan is evaluated a second time at it (vectorized over every candidate) to get the
QPS per replica, the replicas and GPUs for the target, the headroom and the monthly bill.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

import click

from inference_ledger.catalogs import catalog, prices
from inference_ledger.cli.options import (Command, engine_option, calibrated_line, check_output, load_profile, profile_option,
                                          write_options)
from inference_ledger.cli.plan import Quantity, default_help, option_decls
from inference_ledger.cli.sweep import SWEPT, input_options, split_list, write_with_progress
from inference_ledger.graph.plan import INPUT_BY_NAME
from inference_ledger.graph.recommend import (DEFAULT_MAX_GPUS, TARGETS, Recommendation, cheapest_of_each_kind,
                                              plans_table, recommend, summary)
from inference_ledger.io.report import human, plan_json


#: Beside a monthly cost priced at a placeholder (catalog.Gpu.price_placeholder), and before the note that says so.
PLACEHOLDER_MARK = "*"


def _text(found: Sequence[Recommendation], top: int, multi_model: bool) -> str:
    head = (["model"] if multi_model else []) + ["GPU", "GPUs", "layout", "weights", "KV", "replicas", "batch",
                                                  "QPS/replica", "headroom", "TTFT at QPS", "TPOT", "$/month"]
    rows = []
    for r in found[:top]:
        s = summary(r)
        rows.append(([s["model"]] if multi_model else []) + [
            s["gpu"], str(s["gpus"]), s["layout"], s["weight_dtype"], s["kv_dtype"], str(s["replicas"]),
            str(s["concurrency"]), f"{s['qps_per_replica']:.2f}", f"{s['qps_headroom'] * 100:.0f}%",
            human(s["ttft_open_seconds"], "s"), human(s["tpot_seconds"], "s"),   # the TTFT the target is checked on
            f"${s['monthly_cost']:,.0f}" + (PLACEHOLDER_MARK if s["price_placeholder"] else "")])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    fmt = "  ".join("{:<%d}" % w if k < len(head) - 8 else "{:>%d}" % w for k, w in enumerate(widths))
    why = [f"  {k + 1}. {summary(r)['why']}" for k, r in enumerate(found[:top])]
    marked = sorted({summary(r)["gpu"] for r in found[:top] if summary(r)["price_placeholder"]})
    note = [f"{PLACEHOLDER_MARK} a placeholder price (the catalog has no public list price for {', '.join(marked)}): "
            f"a rank by cost means nothing until you {prices.PLACEHOLDER_REMEDY}."] if marked else []
    return "\n".join([*(fmt.format(*row) for row in [head, *rows]), *note, "", "why:", *why])


@click.command("recommend", cls=Command)
@click.option("--model", "-m", required=True, metavar="IDS", help="Model(s), comma-separated.")
@click.option(*option_decls(INPUT_BY_NAME["target_qps"]), "qps", type=Quantity(INPUT_BY_NAME["target_qps"]), required=True,
              help="Requests per second to sustain (target QPS).")
@click.option(*option_decls(INPUT_BY_NAME["ttft_target"]), "ttft", type=Quantity(INPUT_BY_NAME["ttft_target"]), default=None,
              help=f"TTFT target [s] (500ms or 0.5s).{default_help(INPUT_BY_NAME['ttft_target'])}")
@click.option(*option_decls(INPUT_BY_NAME["tpot_target"]), "tpot", type=Quantity(INPUT_BY_NAME["tpot_target"]), default=None,
              help=f"TPOT target [s] (50ms or 0.05s).{default_help(INPUT_BY_NAME['tpot_target'])}")
@click.option("--gpu", "-g", default=None, metavar="IDS", help="GPUs to consider (default: every GPU in the catalog).")
@click.option("--tp", default="1,2,4,8", show_default=True, metavar="LIST", help="Tensor-parallel degrees to consider.")
@click.option("--max-gpus", type=click.IntRange(1, 100_000), default=DEFAULT_MAX_GPUS, show_default=True,
              help="GPUs per replica the layout search may use: TP within a node x PP stages, and wide expert "
                   "parallelism with DP attention for MoE models (--pp/--ep/--dp-attention pin one layout instead).")
@click.option("--disaggregated", is_flag=True, help="Also find the cheapest disaggregated deployment (separate "
              "prefill and decode pools, each its own layout) per GPU and format, and compare it with aggregated "
              "serving by $/month.")
@click.option("--weight-dtype", default="native,fp8", show_default=True, metavar="LIST", help="Weight formats.")
@click.option("--kv-dtype", default="bf16", show_default=True, metavar="LIST", help="KV-cache formats.")
@engine_option("Serving engine whose memory rule, batching defaults and step traits apply (as for `plan`)")
@click.option("--top", type=click.IntRange(1), default=10, show_default=True, help="Plans to print.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the targets and the plans, each with its full plan.")
@click.option("--output", "-o", metavar="PATH", help="Also write the plans as a workbook (.xlsx, live formulas) or .csv.")
@input_options((SWEPT - {"input_tokens"}) | set(TARGETS.values()), scope="every plan")
@profile_option
@write_options
def recommend_cmd(model: str, qps: float, ttft: Optional[float], tpot: Optional[float], gpu: Optional[str], tp: str,
                  max_gpus: int, disaggregated: bool, weight_dtype: str, kv_dtype: str, engine: str, top: int, as_json: bool, output: Optional[str],
                  profile: Optional[str], **numbers: Optional[float]) -> None:
    """One per model, GPU and replica size (GPUs per replica), each with why it is the cheapest of its kind.

    \b
    inference-ledger recommend --model llama-3.1-70b --qps 20 --input-tokens 1024 --output-tokens 512 \\
        --ttft 0.5 --tpot 0.05 --gpu h100-sxm,h200,mi300x
    """
    if output is not None:
        check_output(output, "table")
    fixed = {k: v for k, v in numbers.items() if v is not None}
    prof = load_profile(profile)
    if prof is not None:
        fixed = {**prof.values, **fixed}          # the options given win over the fitted values
    for opt, name in TARGETS.items():   # checked by their Quantity type like every plan input
        value = {"qps": qps, "ttft": ttft, "tpot": tpot}[opt]
        if value is not None:
            fixed[name] = value
    gpus = split_list("gpu", gpu, ids=True) if gpu is not None else [g.id for g in catalog.load_gpus()]
    found, candidates = recommend(split_list("model", model, ids=True), gpus, tp=split_list("tp", tp, int, "tp"),
                                  weight_dtype=split_list("weight-dtype", weight_dtype),
                                  kv_dtype=split_list("kv-dtype", kv_dtype), engine=engine, fixed=fixed,
                                  max_gpus=max_gpus)
    found = sorted(cheapest_of_each_kind(found), key=lambda r: r.values["monthly_cost_qps"])
    if not found:
        t = candidates.fixed
        raise click.ClickException(   # a valid question without an answer: exit 1, like grep without a match
            f"no plan meets {t['target_qps']:g} QPS with TTFT <= {t['ttft_target']:g} s and TPOT <= {t['tpot_target']:g} s "
            f"({candidates.n_rows} GPU/TP/format combinations checked): relax a target or add GPUs/formats")
    pools = []
    if disaggregated:
        from inference_ledger.cli.disaggregated import disaggregated_text, recommend_disaggregated
        pools = recommend_disaggregated(split_list("model", model, ids=True), gpus, split_list("tp", tp, int, "tp"),
                                        split_list("weight-dtype", weight_dtype), kv_dtype, engine, fixed, max_gpus,
                                        found)
    if output is not None:
        write_with_progress(plans_table(found[:top], candidates), output, "recommend")
    if as_json:
        doc = {"targets": {k: candidates.fixed[n] for k, n in TARGETS.items()},
               "plans": [summary(r) | {"plan": plan_json(r.values, **r.labels)} for r in found[:top]]}
        if disaggregated:
            doc["disaggregated"] = pools[:top]
        if prof is not None:
            doc["calibration"] = prof.describe()
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(_text(found, top, len({r.labels["model"] for r in found}) > 1))
        if disaggregated:
            click.echo("\ndisaggregated (prefill pool + decode pool, the cheapest layout of each):\n"
                       + (disaggregated_text(pools[:top]) if pools else "none meets the targets"))
        if output is not None:
            click.echo(f"wrote {output}: the top {min(top, len(found))} of {len(found)} plans")
        if prof is not None:
            click.echo(f"every plan {calibrated_line(prof)}")
