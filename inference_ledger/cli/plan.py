"""`inference-ledger plan`: the three ledgers of one deployment, as a table or JSON.

Every numeric option is generated from :data:`inference_ledger.plan.INPUTS` (label, unit, doc,
default and allowed range come from there), so ``--help`` and validation never drift
from the plan.  A model (``--model`` from the catalog, or ``--config`` a config.json)
and a GPU (``--gpu``) fill in their facts; explicit numbers override them.

Other commands reuse :func:`plan_options` and :func:`plan_from_options`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

import click

from inference_ledger import engines, resolve, serving
from inference_ledger.args import LedgerInputError
from inference_ledger.plan import INPUT_BY_NAME, INPUTS, Input, evaluate
from inference_ledger.report import human, plan_json, plan_table

#: Option names that read better than the input names.
OPTION_NAMES = {
    "num_params": "params",
    "num_layers": "layers",
    "gpu_memory_bytes": "gpu-memory",
    "workspace_bytes_per_gpu": "workspace",
}

#: Plan inputs given as words (an option of their own, not a number).
WORD_INPUTS = ("batching",)

#: Inputs the catalog fills when --model/--config or --gpu is given.
FROM_CATALOG = resolve.FROM_CATALOG

# Suffixes each unit accepts (case-insensitive), value = multiplier to base units.
_SUFFIXES: dict[str, dict[str, float]] = {
    "B": {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40},
    "B/s": {"b/s": 1, "gb/s": 1e9, "tb/s": 1e12},
    "FLOP/s": {"flops": 1, "flop/s": 1, "tflops": 1e12, "tflop/s": 1e12, "pflops": 1e15, "pflop/s": 1e15},
    "params": {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12},
}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([a-z/]*)\s*$", re.IGNORECASE)


class Quantity(click.ParamType):
    """A number in an input's base unit, with the unit's suffixes (80GB, 79.19GiB, 3.35TB/s, 70B params)."""

    def __init__(self, inp: Input):
        self.inp = inp
        self.name = inp.unit or "number"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            x = float(value)
        else:
            m = _NUMBER.match(str(value))
            table = _SUFFIXES.get(self.inp.unit, {})
            if not m or (m.group(2) and m.group(2).lower() not in table):
                ok = f" (suffixes: {', '.join(table)})" if table else ""
                self.fail(f"{value!r} is not a number in {self.inp.unit}{ok}", param, ctx)
            x = float(m.group(1)) * table.get(m.group(2).lower(), 1) if m.group(2) else float(m.group(1))
        try:
            return self.inp.arg.check(x)
        except LedgerInputError as e:
            self.fail(str(e), param, ctx)


def option_name(inp: Input) -> str:
    return "--" + OPTION_NAMES.get(inp.name, inp.name.replace("_", "-"))


def _help(inp: Input) -> str:
    origin = " (or from the catalog)" if inp.name in FROM_CATALOG else ""
    default = "" if inp.default is None else f" Default: {human(inp.default, inp.unit)}{origin}."
    return f"{inp.label} [{inp.unit}]. {inp.doc}{default}".replace("%", "%%")


def plan_options(f: Callable) -> Callable:
    """Decorate a click command with --model/--config/--gpu, dtypes, --context and every plan input."""
    numeric = [click.option(option_name(i), i.name, type=Quantity(i), default=None, help=_help(i)) for i in INPUTS
               if i.name not in WORD_INPUTS]
    named = [
        click.option("--model", "-m", metavar="ID", help="Model from the catalog: id, alias or Hugging Face repo "
                     "(see `inference-ledger models`)."),
        click.option("--config", "config", metavar="PATH", type=click.Path(exists=True, dir_okay=False),
                     help="A Hugging Face config.json, read offline (never downloaded)."),
        click.option("--gpu", "-g", metavar="ID", help="GPU from the catalog: id or alias (see `inference-ledger gpus`)."),
        click.option("--weight-dtype", metavar="DTYPE", help="Weight format from inference_ledger/data/dtypes.csv: bf16, fp16, "
                     "fp8, int8, int4, mxfp4, nvfp4 (default: the checkpoint's, else bf16)."),
        click.option("--kv-dtype", metavar="DTYPE", default="bf16", show_default=True,
                     help="KV-cache format: bf16, fp16, fp8, int8, int4-kv."),
        click.option("--engine", type=click.Choice(engines.engine_ids(), case_sensitive=False),
                     default=engines.DEFAULT_ENGINE, show_default=True,
                     help="Serving engine whose memory budget and batching defaults apply (inference_ledger/data/engines.csv)."),
        click.option("--batching", type=click.Choice(list(serving.BATCHING), case_sensitive=False), default=None,
                     help="continuous (default): a client keeps the concurrency in flight, prompts prefilled in chunks "
                          "between decode steps; static: one batch prefilled, then decoded together."),
        click.option("--context", type=click.IntRange(1, 10**9), metavar="TOKENS",
                     help="Tokens per sequence (prompt + output): sets input tokens = context - output tokens."),
    ]
    for opt in reversed(named + numeric):
        f = opt(f)
    return f


def option_hint(name: str) -> str:
    """The command-line option of a plan input or choice name ('tp' -> "'--tp'")."""
    inp = INPUT_BY_NAME.get(name)
    return f"'{option_name(inp)}'" if inp is not None else "'--" + name.replace("_", "-") + "'"


def resolved_or_usage(**choice: Any) -> resolve.Resolved:
    """:func:`inference_ledger.resolve.resolve`, a refused choice as a usage error naming its option (exit 2)."""
    try:
        return resolve.resolve(**choice)
    except resolve.ChoiceError as e:
        raise click.BadParameter(str(e), param_hint=option_hint(e.option)) from None


def plan_from_options(*, model: Optional[str] = None, config: Optional[str] = None, gpu: Optional[str] = None,
                      weight_dtype: Optional[str] = None, kv_dtype: str = "bf16", context: Optional[int] = None,
                      engine: str = engines.DEFAULT_ENGINE, **numbers: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(plan inputs, description) from the options of :func:`plan_options`, through the resolver."""
    r = resolved_or_usage(model=model, gpu=gpu, config=config, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                          context=context, engine=engine, numbers=numbers)
    return r.inputs, r.describe()


def title(values: dict[str, Any], desc: dict[str, Any]) -> str:
    model = desc["model_name"] or f"{values['num_params'] / 1e9:,.1f}B-parameter model"
    gpu = desc["gpu_name"] or "GPU"
    dtypes = f"weights {desc['weight_dtype'] or human(values['weight_bytes'], 'B/param')}, KV {desc['kv_dtype']}"
    return f"{model} on {int(values['tp'])} x {gpu} (TP {int(values['tp'])}); {dtypes}"


@click.command("plan")
@plan_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (base units, snake_case keys) instead of the table.")
def plan_cmd(as_json: bool, **options: Any) -> None:
    """The memory, compute and bandwidth ledgers of one deployment.

    Give a model (--model or --config) and a GPU (--gpu), or the numbers themselves;
    explicit numbers override the catalog. Byte options take GB/GiB suffixes, bandwidth
    TB/s, FLOP/s TFLOPS, parameters K/M/B/T.

    \b
    inference-ledger plan --model llama-3.1-70b --gpu h100-sxm --tp 4 --context 4096 --concurrency 16
    inference-ledger plan --config cfg.json --gpu h100-sxm --tp 2 --weight-dtype fp8 --kv-dtype fp8 --json
    inference-ledger plan --params 70e9 --layers 80 --kv-heads 8 --head-dim 128 --gpu-memory 80GB \\
        --hbm-bw 3.35TB/s --peak-flops 989TFLOPS --tp 4
    """
    inputs, desc = plan_from_options(**options)
    values = evaluate(inputs)
    if as_json:
        doc = plan_json(values, model=desc["model"], gpu=desc["gpu"], weight_dtype=desc["weight_dtype"],
                        kv_dtype=desc["kv_dtype"], engine=desc["engine"])
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(plan_table(values, title=title(values, desc)))
