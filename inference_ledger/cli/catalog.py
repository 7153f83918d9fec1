"""`inference-ledger models`, `gpus` and `engines`: the catalogs, one line each.

Each line gives the id (what --model/--gpu/--engine take), the name, the facts a plan uses, with
units, and where they come from.  ``--json`` prints every field in base units.
"""

from __future__ import annotations

import dataclasses
import json

import click

from inference_ledger.catalogs import catalog, engines
from inference_ledger.graph import resolve
from inference_ledger.cli.options import Command
from inference_ledger.core.unit_registry import value_in


def _first_source(text: str) -> str:
    parts = [p.strip() for p in text.split(";") if p.strip()]
    return parts[0] + (f" (+{len(parts) - 1} more)" if len(parts) > 1 else "") if parts else "no source"


def _count(n: float) -> str:
    return f"{value_in(n, 'B', 'params'):,.2f}B"


def model_line(m: catalog.Model, id_width: int = 16, name_width: int = 20) -> str:
    """id, name and the plan's facts about one model, with units and its config's provenance."""
    params = f"{_count(m.num_params)} params"
    if m.num_experts:
        params += f" ({_count(m.active_params)} active; {m.num_experts} experts, {m.experts_per_token} per token)"
    attn = (f"MLA latent {m.mla_latent_dim}" if m.mla_latent_dim
            else f"{m.kv_heads} KV heads x {m.head_dim}")
    window = f", {m.sliding_layers} layers windowed at {m.window:,}" if m.sliding_layers else ""
    kv = resolve.model_spec(m.id, "kv_bytes_per_token")
    origin = f"{m.provenance + ' ' if m.provenance else ''}{m.source}"
    return (f"{m.id:<{id_width}} {m.name:<{name_width}} {params}, {m.num_layers} layers, {attn}{window}, "
            f"KV {kv:,.0f} B/token (BF16), {m.weight_dtype}, context {m.max_position_embeddings:,} tokens  [{origin}]")


def gpu_line(g: catalog.Gpu, id_width: int = 10, name_width: int = 34) -> str:
    """id, name, memory (GB marketed and GiB at runtime), bandwidth, dense FLOP/s, power, price, source."""
    flops = f"BF16 {value_in(g.bf16_flops, 'TFLOP/s'):,.0f}"
    for label, v in (("FP8", g.fp8_flops), ("FP4", g.fp4_flops)):
        if v:
            flops += f" / {label} {value_in(v, 'TFLOP/s'):,.0f}"
    tdp = f", {g.tdp_w:,.0f} W" if g.tdp_w else ""
    price = (f", ${g.price_per_gpu_hour:,.2f}/GPU-h ({'placeholder' if g.price_placeholder else g.price_date})"
             if g.price_per_gpu_hour is not None else "")
    return (f"{g.id:<{id_width}} {g.name:<{name_width}} {value_in(g.memory_bytes, 'GB'):,.0f} GB "
            f"({value_in(g.memory_runtime_bytes, 'GiB'):,.2f} GiB runtime), {value_in(g.hbm_bw, 'TB/s'):,.3g} TB/s, "
            f"{flops} TFLOP/s dense{tdp}{price}  [{_first_source(g.source)}]")


def engine_line(e: engines.Engine, id_width: int = 12, name_width: int = 40) -> str:
    """id, name, the releases it covers, the step traits that set its speed, the other ids it answers to, source."""
    on = lambda flag, words: words if flag else f"no {words}"  # noqa: E731
    gqa = {0: "GQA decode one pass per query head", 1: "GQA-aware decode"}.get(
        e.gqa_decode, f"GQA-aware decode for {e.gqa_decode}-head groups only")
    traits = ", ".join((on(e.chunked_prefill, "chunked prefill"), on(e.cuda_graphs, "CUDA graphs"),
                        on(e.overlap_scheduling, "overlap scheduling"), gqa, f"max_num_seqs {e.max_num_seqs:,}"))
    ids = [a for a in e.aliases if a.lower() in engines.engine_names()]
    also = f"; also {', '.join(ids)}" if ids else ""
    return (f"{e.id:<{id_width}} {e.name:<{name_width}} releases {e.releases}: {traits}{also}  "
            f"[{_first_source(e.source)}]")


def _listing(items, line, as_json: bool) -> None:
    """A catalog on stdout: every field as JSON, or one ``line`` each in columns as wide as the longest id and name."""
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(x) for x in items], indent=2))
        return
    widths = max(len(x.id) for x in items), max(len(x.name) for x in items)
    click.echo("\n".join(line(x, *widths) for x in items))


@click.command("models", cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Every field of every model, as JSON (counts in parameters).")
def models_cmd(as_json: bool) -> None:
    _listing(catalog.load_models(), model_line, as_json)


@click.command("gpus", cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Every field of every GPU, as JSON (base units).")
def gpus_cmd(as_json: bool) -> None:
    _listing(catalog.load_gpus(), gpu_line, as_json)


@click.command("engines", cls=Command)
@click.option("--json", "as_json", is_flag=True, help="Every field of every engine version, as JSON (base units).")
def engines_cmd(as_json: bool) -> None:
    _listing(engines.load_engines(), engine_line, as_json)
