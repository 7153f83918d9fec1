"""`inference-ledger validate`: predictions against measured deployments, row by row.

Runs every row of a measured CSV (this project's copy of the public measurements by
default, or ``--data FILE.csv`` in the same columns, or in the public file's own columns)
through the plan graph and prints predicted vs measured with the relative error, then a
summary per metric against its target.  Exits 1 when a TPOT floor is above a measured TPOT
(the floor would not be a floor); ``--strict`` also exits 1 when a target is missed.
"""

from __future__ import annotations

import csv
import io
from typing import Optional

import click

from inference_ledger import deployments, fidelity, files
from inference_ledger.cli.options import Command
from inference_ledger.files import csv_text


def _fmt(metric: str, x: float) -> str:
    if metric == "started":
        return str(int(x))
    if metric in ("kv_tokens", "kv_bytes_per_token"):
        return f"{x:,.0f}"
    return f"{x:,.2f}" if abs(x) < 1000 else f"{x:,.0f}"


def _verdict(c: fidelity.Check) -> str:
    if not c.checked:
        return "not held: " + c.reason if c.reason else "reported"
    return "ok" if c.passed else "MISS"


def row_table(checks: list[fidelity.Check]) -> list[list[str]]:
    head = ["row", "metric", "measured", "predicted", "error", "target"]
    body = [[c.row, c.metric, _fmt(c.metric, c.measured), _fmt(c.metric, c.predicted),
             "" if c.metric == "started" else f"{c.error:+.1%}", _verdict(c)] for c in checks]
    return [head] + body


def summary_table(summary: list[fidelity.Summary]) -> list[list[str]]:
    head = ["metric", "rows", "median abs. error", "max abs. error", "target", "met"]
    body = []
    for s in summary:
        label, unit, target = fidelity.METRICS[s.metric]
        body.append([f"{label} ({unit})", str(s.n),
                     "-" if s.metric == "started" else f"{s.median_abs_error:.1%}",
                     "-" if s.metric == "started" else f"{s.max_abs_error:.1%}", target, "yes" if s.passed else "NO"])
    return [head] + body


def load_table(summary: list) -> list[list[str]]:
    """Per metric and regime over the load rows (inference_ledger/data/measured_load.csv): median |error| and bias."""
    from inference_ledger import load_fidelity
    head = ["metric under load", "regime", "rows", "median abs. error", "median error"]
    return [head] + [[load_fidelity.METRICS[s.metric], s.regime, str(s.n), f"{s.median_abs_error:.1%}",
                      f"{s.median_error:+.1%}"] for s in summary]


def _text(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _markdown(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    out.insert(1, "|" + "---|" * len(rows[0]))
    return "\n".join(out)


def _csv(rows: list[list[str]]) -> str:
    """CSV; the first column (row ids and metric names, from data) as text no spreadsheet runs as a formula."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[csv_text(r[0]), *r[1:]] for r in rows])
    return buf.getvalue().rstrip("\n")


def deployments_table(checked) -> list[list[str]]:
    """One line per published deployment: pool, layout, published and predicted throughput, error."""
    rows = [["deployment", "pool", "GPU", "layout", "metric", "published", "predicted", "error"]]
    for d, predicted, error in checked:
        lay = f"TP {d.layout['tp']} x DP {d.layout['dp_attention']}, EP {d.layout['ep']} on {d.nodes} nodes"
        unit = "tok/s/node" if d.scope == "per_node" else "tok/s/GPU"
        rows.append([d.id, d.role, d.gpu_id, lay, f"{d.metric.split('_')[0]} {unit}", f"{d.value:,.0f}",
                     f"{predicted:,.0f}", f"{error:+.1%}"])
    return rows


@click.command("validate", cls=Command)
@click.option("--data", "data", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Measured CSV (default: the shipped inference_ledger/data/measured.csv; the public file's columns also "
                   f"work): {files.limit_words('data')}.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "csv"]), default="text", show_default=True,
              help="Output format of the two tables.")
@click.option("--summary-only", is_flag=True, help="Print the per-metric summary only.")
@click.option("--strict", is_flag=True, help="Also exit 1 when an accuracy target is missed.")
def validate_cmd(data: Optional[str], fmt: str, summary_only: bool, strict: bool) -> None:
    """Compare predictions with measured deployments (weights, KV cache, engine start, TPOT)."""
    checks = fidelity.compare(fidelity.load_measured(data))
    summary = fidelity.summarize(checks)
    render = {"text": _text, "markdown": _markdown, "csv": _csv}[fmt]
    if not summary_only:
        click.echo(render(row_table(checks)))
        click.echo("")
    if data is None and not summary_only:  # the shipped load rows: steady-state figures at concurrency > 1
        from inference_ledger import load_fidelity
        click.echo(render(load_table(load_fidelity.summarize(load_fidelity.compare()))))
        click.echo("")
    click.echo(render(summary_table(summary)))
    if data is None:  # the shipped data: the published large deployments too
        click.echo("\npublished large deployments (inference_ledger/data/measured_deployments.csv):")
        click.echo(render(deployments_table(deployments.check())))
    bad = fidelity.floor_violations(checks)
    if bad:
        names = ", ".join(f"{c.row} ({c.predicted:.2f} > {c.measured:.2f} ms)" for c in bad)
        raise click.ClickException(f"TPOT floor above a measured TPOT: {names}")
    if strict and not all(s.passed for s in summary):
        missed = ", ".join(s.metric for s in summary if not s.passed)
        raise click.ClickException(f"accuracy target missed: {missed}")
