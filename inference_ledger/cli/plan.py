"""`inference-ledger plan`: the three ledgers of one deployment, as a table or JSON.

Every numeric option is generated from :data:`inference_ledger.graph.plan.INPUTS` (label, unit, doc,
default and allowed range come from there), so ``--help`` and validation never drift
from the plan.  A model (``--model`` from the catalog, or ``--config`` a config.json)
and a GPU (``--gpu``) fill in their facts; explicit numbers override them.

Other commands reuse :func:`plan_options` and :func:`plan_from_options`.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

import click

from inference_ledger.graph import concurrency, resolve, summary
from inference_ledger.catalogs import catalog_facts, engines
from inference_ledger.core import files, unit_registry
from inference_ledger.cli.options import Command, engine_option
from inference_ledger.core.args import LedgerInputError
from inference_ledger.cli.options import calibrated_line, load_profile, profile_option
from inference_ledger.graph.plan import CODES, ENGINE, INPUT_BY_NAME, INPUTS, Input
from inference_ledger.graph.recommend import TARGETS
from inference_ledger.io.report import human, plan_json, plan_table

#: Option names that read better than the input names.
OPTION_NAMES = {
    "num_params": "params",
    "num_layers": "layers",
    "gpu_memory_bytes": "gpu-memory",
    "workspace_bytes_per_gpu": "workspace",
}

#: Each target's short spelling (`recommend --qps 20 --ttft 0.5 --tpot 0.05`): every command takes both spellings.
SHORT_OPTIONS = {name: "--" + short for short, name in TARGETS.items()}

#: What --concurrency auto (the default) means, for every command's help.
AUTO_HELP = ("the largest concurrency whose expected TTFT and TPOT meet the targets, that the KV cache holds and the "
             "engine's batch limit (max_num_seqs x DP ranks) runs; the fleet for the target QPS is sized there. "
             "A number is used as given.")

#: Inputs the catalog fills when --model/--config or --gpu is given.
FROM_CATALOG = resolve.FROM_CATALOG

#: What --engine sets (its values for the GPU and TP) when neither --gpu nor --tp is given: the shown defaults.
ENGINE_DEFAULTS = ENGINE

#: Words a code input takes besides its number (kv_budget_rule: 1 vLLM, 2 SGLang, 3 TensorRT-LLM).
CODE_WORDS: dict[str, dict[str, int]] = {q: c.by_word for q, c in CODES.items() if q in INPUT_BY_NAME}


def parse_quantity(text: str, unit: str, name: str = "") -> float:
    """'500ms' -> 0.5, '90%' -> 0.9, '80GB' -> 8e10, '1,024 tokens' -> 1024, 'vLLM' -> 1 (a code's word).

    ValueError naming the unit and the suffixes it takes.
    """
    t = str(text).strip()
    words = {w.lower(): v for w, v in CODE_WORDS.get(name, {}).items()}
    if t.lower() in words:
        return float(words[t.lower()])
    try:
        return unit_registry.parse(text, unit)
    except ValueError:
        if not words:
            raise
        cases = ", ".join(f"{w} ({c})" for w, c in CODE_WORDS[name].items())   # the words as written, and their codes
        raise ValueError(f"{text!r} is not one of {cases}") from None


def shown_default(x: float, unit: str) -> str:
    """A default as the option itself accepts it: 500ms, 90%, 79.1875GiB, 3.35TB/s, 70B, $2.50/GPU-h."""
    return f"{x:g}" if unit in ("code", "1/0") else unit_registry.option_text(x, unit)   # a bare number, no unit


class Quantity(click.ParamType):
    """A number in an input's base unit, with the unit's suffixes (80GB, 79.19GiB, 3.35TB/s, 70B params, 500ms, 90%)."""

    def __init__(self, inp: Input):
        self.inp = inp
        self.name = (inp.unit or "number") + ("|auto" if inp.name == "concurrency" else "")

    def convert(self, value, param, ctx):
        if self.inp.name == "concurrency" and isinstance(value, str) and concurrency.is_auto(value):
            return None   # --concurrency auto: the plan chooses it (inference_ledger.graph.concurrency)
        if isinstance(value, (int, float)):
            x = float(value)
        else:
            try:
                x = parse_quantity(value, self.inp.unit, self.inp.name)
            except ValueError as e:
                self.fail(str(e), param, ctx)
        try:
            return self.inp.arg.check(x)
        except LedgerInputError as e:
            self.fail(str(e), param, ctx)


def option_name(inp: Input) -> str:
    return "--" + OPTION_NAMES.get(inp.name, inp.name.replace("_", "-"))


def option_decls(inp: Input) -> tuple[str, ...]:
    """The option's spellings: its name, then a target's short one (:data:`SHORT_OPTIONS`)."""
    return (option_name(inp),) + ((SHORT_OPTIONS[inp.name],) if inp.name in SHORT_OPTIONS else ())


def default_help(inp: Input, per_row: bool = False) -> str:
    """' Default: ...' as the option accepts it, saying when the catalog or --engine supplies it; a code's words.

    per_row: every row has a catalog model and GPU (sweep, recommend), so their values always apply.
    """
    codes = CODE_WORDS.get(inp.name)
    words = f" Codes: {', '.join(f'{v} {w}' for w, v in codes.items())} (the words work too)." if codes else ""
    if inp.name in ENGINE_DEFAULTS:
        own = shown_default(ENGINE_DEFAULTS[inp.name], inp.unit)
        return f" Default: set by --engine for the GPU and TP ({engines.DEFAULT_ENGINE}, no --gpu, " \
               f"TP {INPUT_BY_NAME['tp'].default:g}: {own}).{words}"
    if inp.default is None:
        return words
    if inp.name == "concurrency":
        return f" Default: {concurrency.AUTO}, {AUTO_HELP}"
    own = shown_default(inp.default, inp.unit)
    if inp.name in FROM_CATALOG:
        src = {"model": "--model/--config", "gpu": "--gpu", "gpu_cost": "--gpu", "weight_dtype": "--weight-dtype",
               "kv_dtype": "--kv-dtype"}[catalog_facts.fact(inp.name).choice]
        return " Default: the catalog's value for each row's model and GPU." if per_row else \
            f" Default: the catalog's value for {src} ({own} without it).{words}"
    return f" Default: {own}.{words}"


def _help(inp: Input) -> str:
    return f"{inp.label} [{inp.unit}]. {inp.doc}{default_help(inp)}"


def plan_options(f: Callable) -> Callable:
    """Decorate a click command with --model/--config/--gpu, dtypes, --context and every plan input."""
    numeric = [click.option(*option_decls(i), i.name, type=Quantity(i), default=None, help=_help(i)) for i in INPUTS]
    named = [
        click.option("--model", "-m", metavar="ID", help="Model from the catalog: id, alias or Hugging Face repo "
                     "(see `inference-ledger models`)."),
        click.option("--config", "config", metavar="PATH", type=click.Path(exists=True, dir_okay=False),
                     help=f"A Hugging Face config.json, read offline (never downloaded): {files.limit_words('config')}."),
        click.option("--gpu", "-g", metavar="ID", help="GPU from the catalog: id or alias (see `inference-ledger gpus`)."),
        click.option("--weight-dtype", metavar="DTYPE", help="Weight format from inference_ledger/data/dtypes.csv: bf16, fp16, "
                     "fp8, int8, int4, mxfp4, nvfp4 (default: the checkpoint's, else bf16)."),
        click.option("--kv-dtype", metavar="DTYPE", default="bf16", show_default=True,
                     help="KV-cache format: bf16, fp16, fp8, int8, int4-kv."),
        engine_option("Serving engine whose memory budget, batching defaults and step traits apply "
                      "(inference_ledger/data/engines.csv)"),
        click.option("--context", type=click.IntRange(1, 10**9), metavar="TOKENS",
                     help="Tokens per sequence (prompt + output): sets input tokens = context - output tokens."),
    ]
    for opt in reversed(named + numeric):
        f = opt(f)
    return profile_option(f)


def option_hint(name: str) -> str:
    """The command-line option of a plan input or choice name ('tp' -> "'--tp'")."""
    inp = INPUT_BY_NAME.get(name)
    return f"'{option_name(inp)}'" if inp is not None else "'--" + name.replace("_", "-") + "'"


def resolved_or_usage(**choice: Any) -> resolve.Resolved:
    """:func:`inference_ledger.graph.resolve.resolve`, a refused choice as a usage error naming its option (exit 2)."""
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
    model = summary.model_words(values, desc)
    gpu = desc["gpu_name"] or "GPU"
    dtypes = f"weights {desc['weight_dtype'] or human(values['weight_bytes'], 'B/param')}, KV {desc['kv_dtype']}"
    layout = " x ".join(f"{k} {int(values[n])}" for k, n in (("TP", "tp"), ("DP attention", "dp_attention"),
                                                            ("PP", "pp")) if n == "tp" or values.get(n, 1) > 1)
    layout += f", EP {int(values['ep'])}" if values.get("ep", 1) > 1 else ""
    gpus = int(values.get("gpus_per_replica", values["tp"]))
    return f"{model} on {gpus} x {gpu} ({layout}); {dtypes}"


#: The prefill pool's layout options of `plan --disaggregated` (the decode pool takes --tp/--pp/--ep/--dp-attention).
PREFILL = {f"prefill_{k}": k for k in ("tp", "pp", "ep", "dp_attention")}


def prefill_options(f: Callable) -> Callable:
    """--disaggregated and --prefill-tp/--prefill-pp/--prefill-ep/--prefill-dp-attention."""
    for name, k in reversed(list(PREFILL.items())):
        f = click.option("--" + name.replace("_", "-"), name, type=Quantity(INPUT_BY_NAME[k]), default=None,
                         help=f"With --disaggregated: the prefill pool's {INPUT_BY_NAME[k].label.lower()} "
                              f"(default: the decode pool's {option_name(INPUT_BY_NAME[k])}).")(f)
    return click.option("--disaggregated", is_flag=True,
                        help="Plan separate prefill and decode pools (xPyD): each its own layout, the KV cache moved "
                             "between them over the scale-out network, pool sizes for --target-qps.")(f)


@click.command("plan", cls=Command)
@plan_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (base units, snake_case keys) instead of the table.")
@prefill_options
def plan_cmd(as_json: bool, disaggregated: bool, **options: Any) -> None:
    """Give a model (--model or --config) and a GPU (--gpu), or the numbers themselves;
    explicit numbers override the catalog. Byte options take GB/GiB suffixes, bandwidth
    TB/s, FLOP/s TFLOPS, parameters K/M/B/T.

    \b
    inference-ledger plan --model llama-3.1-70b --gpu h100-sxm --tp 4 --context 4096 --concurrency 16
    inference-ledger plan --config cfg.json --gpu h100-sxm --tp 2 --weight-dtype fp8 --kv-dtype fp8 --json
    inference-ledger plan --model deepseek-v3 --gpu h100-sxm --tp 8 --pp 2
    inference-ledger plan --model deepseek-v3 --gpu h800 --tp 1 --dp-attention 144 --ep 144 --redundant-experts 32 \\
        --disaggregated --prefill-dp-attention 32 --prefill-ep 32 --target-qps 50
    inference-ledger plan --params 70e9 --layers 80 --kv-heads 8 --head-dim 128 --gpu-memory 80GB \\
        --hbm-bw 3.35TB/s --peak-flops 989TFLOPS --tp 4
    """
    prefill = {k: options.pop(k) for k in PREFILL}
    given = [k for k, v in prefill.items() if v is not None]
    if given and not disaggregated:
        raise click.UsageError(f"--{given[0].replace('_', '-')} sets the prefill pool of --disaggregated: "
                               "give --disaggregated too, or drop it")
    profile = load_profile(options.pop("profile", None))
    if profile is not None:
        options.update({k: v for k, v in profile.values.items() if options.get(k) is None})
    if disaggregated:
        from inference_ledger.cli.disaggregated import plan_disaggregated  # only this mode needs it
        click.echo(plan_disaggregated(options, prefill, as_json))
        return
    inputs, desc = plan_from_options(**options)
    values = concurrency.evaluate(inputs, options.get("concurrency"))
    if as_json:
        doc = plan_json(values, model=desc["model"], gpu=desc["gpu"], weight_dtype=desc["weight_dtype"],
                        kv_dtype=desc["kv_dtype"], engine=desc["engine"])
        if profile is not None:
            doc["calibration"] = profile.describe()
        click.echo(json.dumps(doc, indent=2))
    else:
        # the answer first, in the sentences the email and the workbook's Summary say; then every line
        click.echo(summary.summary_text(summary.quantities({**inputs, **values}, desc)) + "\n")
        click.echo(plan_table(values, title=title(values, desc)))
        if profile is not None:
            click.echo(calibrated_line(profile))
