"""`inference-ledger calibrate`: benchmark results and engine logs of one deployment in, a profile of fitted plan inputs out.

Takes plan's options (model or config, GPU, layout, formats, engine: :func:`inference_ledger.cli.plan.plan_options`,
resolved by the one resolver) and the files; the fit is :mod:`inference_ledger.validation.calibrate`.
"""

from __future__ import annotations

from typing import Any

import click

from inference_ledger.core import files as _files
from inference_ledger.core.unit_registry import count_text
from inference_ledger.cli.options import Command, check_output, write_options
from inference_ledger.cli.plan import option_hint, plan_options

#: Options that describe a workload: each file states its own, so calibrate refuses them.
WORKLOAD = ("input_tokens", "output_tokens", "concurrency", "context")


@click.command("calibrate", cls=Command)
@click.argument("files", nargs=-1, required=True, metavar="FILE...", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, metavar="PROFILE.csv",
              help="Profile to write (.csv): the fitted plan inputs, for --profile on plan, build, sweep and recommend.")
@plan_options
@write_options
def calibrate_cmd(files: tuple[str, ...], output: str, **options: Any) -> None:
    """FILE... are results of one deployment: `vllm bench serve --save-result` JSON, SGLang
    bench_serving JSONL, AIPerf / genai-perf profile_export JSON or CSV, trtllm-bench
    --report_json, vLLM or SGLang start-up logs. Give the deployment as for `plan` (model, GPU,
    --tp/--pp/--ep, formats, engine); each file's workload (prompt and output tokens,
    concurrency) comes from the file. Prints what was fitted, what was left at its default and
    why, the residual of every file, outliers and a leave-one-out check.

    \b
    inference-ledger calibrate results/*.json --model llama-3.1-70b --gpu h100-sxm --tp 2 \\
        --weight-dtype fp8 --kv-dtype fp8 -o profile.csv
    inference-ledger calibrate vllm-startup.log --model llama-3.1-8b --gpu h100-sxm -o kv.csv
    """
    from inference_ledger.io import benchfiles
    from inference_ledger.validation import calibrate as cal, calibrate_profile

    check_output(output, "csv")
    for k in WORKLOAD:
        if options.get(k) is not None:
            raise click.BadParameter("each file states its own workload; leave this option out",
                                     param_hint=option_hint(k))
    if options.pop("profile", None) is not None:
        raise click.BadParameter("calibrate fits from the catalog's defaults; leave --profile out",
                                 param_hint="'--profile'")
    model, config, gpu = options.pop("model"), options.pop("config"), options.pop("gpu")
    dep = cal.Deployment(model=model, config=config, gpu=gpu, weight_dtype=options.pop("weight_dtype"),
                         kv_dtype=options.pop("kv_dtype"), engine=options.pop("engine"),
                         numbers={k: v for k, v in options.items() if v is not None and k not in WORKLOAD})
    from inference_ledger.cli.plan import resolved_or_usage

    resolved_or_usage(model=model, config=config, gpu=gpu, weight_dtype=dep.weight_dtype, kv_dtype=dep.kv_dtype,
                      engine=dep.engine, numbers=dep.numbers)    # a refused choice names its option (exit 2)
    records = benchfiles.read_all(files)
    result = cal.calibrate(records, dep)
    _files.write_bytes(output, calibrate_profile.profile_csv(result).encode("utf-8"), "csv", "--output")
    click.echo(calibrate_profile.report(result))
    click.echo(f"wrote {output}: {count_text(len(result.values), 'fitted plan inputs')}; use it with --profile {output}")
