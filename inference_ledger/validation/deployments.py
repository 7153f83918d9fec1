"""Published large deployments against the plan: multi-node EP, DP attention, PD disaggregation.

``inference_ledger/data/measured_deployments.csv`` holds the throughput DeepSeek, SGLang and vLLM published
for DeepSeek-V3/R1 at scale, each with its layout and the quoted line.  Each row is one pool of a
disaggregated deployment; the plan of that pool (:mod:`inference_ledger.graph.disaggregated`'s formulas over
:mod:`inference_ledger.graph.plan`, through the resolver) predicts the same figure:

* decode: output tokens/s of one instance at the largest batch that fits and meets the published decode
  speed (``serving_concurrency`` at ``tpot_target`` = TPOT; no stated speed: the largest batch memory holds);
* prefill: input tokens/s of one instance, one prompt per DP rank at a time (``dp_attention x pp / TTFT``).

Both are divided by the published nodes (per node) or GPUs (per GPU).  Nothing is fitted per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from inference_ledger.core import csvfile
from inference_ledger.graph import disaggregated
from inference_ledger.core.units import MS_PER_S

DEPLOYMENTS_CSV = Path(__file__).resolve().parents[1] / "data" / "measured_deployments.csv"
#: "No decode speed stated": a TPOT target no batch reaches, so memory sets the batch.
NO_TPOT_TARGET = 100.0


@dataclass(frozen=True)
class Deployment:
    id: str
    model_id: str
    gpu_id: str
    engine: str
    role: str                       # prefill | decode
    layout: dict[str, int]          # tp, pp, ep, dp_attention, redundant_experts
    nodes: int
    gpus: int
    input_tokens: int
    output_tokens: int
    tpot_ms: Optional[float]
    metric: str
    value: float
    scope: str                      # per_node | per_gpu
    source: str
    date: str
    quote: str
    notes: str


def load(path: Path | str | None = None) -> list[Deployment]:
    """The rows of measured_deployments.csv ('#' lines are comments)."""
    def make(c: csvfile.Cells) -> Deployment:
        layout = {k: c.whole(k, False) or 1 for k in ("tp", "pp", "ep", "dp_attention")}
        layout["redundant_experts"] = c.whole("redundant_experts", False) or 0
        return csvfile.as_dataclass(Deployment, c, required=("id", "model_id", "gpu_id", "source", "date", "quote"),
                                    layout=layout)
    return csvfile.load(Deployment, path or DEPLOYMENTS_CSV, make=make)


def predict(d: Deployment) -> float:
    """The plan's figure for the row's pool, in the row's metric and scope."""
    tpot = d.tpot_ms / MS_PER_S if d.tpot_ms else NO_TPOT_TARGET
    numbers = {**d.layout, "input_tokens": d.input_tokens, "output_tokens": d.output_tokens, "tpot_target": tpot}
    if d.role == "decode":
        _, v = disaggregated.decode_pool(d.model_id, d.gpu_id, {}, numbers)
        rate = v["effective_concurrency"] / v["tpot_seconds"]
    else:
        v = disaggregated.prefill_pool(d.model_id, d.gpu_id, d.layout, numbers)
        rate = disaggregated.prefill_requests_per_second(v["dp_attention"], v["pp"], v["ttft_service_seconds"]) \
            * d.input_tokens
    return float(rate / (d.nodes if d.scope == "per_node" else d.gpus))


def check(rows: Optional[list[Deployment]] = None) -> list[tuple[Deployment, float, float]]:
    """(row, predicted, relative error) for every row."""
    out = []
    for d in rows if rows is not None else load():
        p = predict(d)
        out.append((d, p, p / d.value - 1))
    return out
