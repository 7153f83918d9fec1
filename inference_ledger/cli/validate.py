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
from pathlib import Path
from typing import Optional

import click

from inference_ledger.validation import deployments, fidelity
from inference_ledger.core import files
from inference_ledger.cli.options import Command
from inference_ledger.core.files import csv_text


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
    from inference_ledger.validation import load_fidelity
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


def accuracy_tables(st) -> list[tuple[str, list[list[str]]]]:
    """The leave-one-source-out report: (title, table) in print order."""
    from inference_ledger.validation import accuracy_report, load_fidelity
    return [("leave one source out, load rows (inference_ledger/data/measured_load.csv):",
             accuracy_report.loso_table(st)),
            ("the plan's held-out figures against the targets:", accuracy_report.targets_table(st)),
            ("the typical request's TTFT: the plan's steady-state TTFT against the median the source prints:",
             load_fidelity.median_ttft_table(st.rowset.rows)),
            (f"bands of the plan ({st.served_words}), each drawn without the source it is scored on:",
             accuracy_report.coverage_table(st)),
            ("declared parameters, fitted on every source:", accuracy_report.fitted_table(st)),
            ("in-sample, for reference only (not a measure of accuracy on new deployments):",
             accuracy_report.in_sample_table(st))]


def accuracy_line(st) -> str:
    """The README's one headline line (generated): the plan's held-out median errors, linking the accuracy page."""
    from inference_ledger.validation import accuracy, accuracy_report
    h = accuracy_report.headline(st)
    cov = {c.metric: c for c in accuracy_report.coverage(st.served)}
    parts = [f"{accuracy_report.SHORT[m]} {h[m]:.1%}" for m in accuracy.METRICS if m in h]
    band = cov.get("output_tok_s")
    tail = (f"; {band.inside:.1%} of the tokens/s figures fall inside a band drawn without their source (median "
            f"high/low {band.median_width:.2f})" if band else "")
    return (f"**Accuracy on deployments it was not fitted on** ({len(st.rowset)} published load rows, "
            f"{len(st.sources)} sources; no figure is predicted with anything fitted on its own source): median abs. "
            f"error {', '.join(parts)}{tail}. Every plan carries a band ({accuracy_report.BAND_SHARE_WORDS}): "
            "[docs/accuracy.md](docs/accuracy.md).")


def _fit_verdict(st) -> str:
    """Which does better on the held-out rows, the left-out fit or the defaults (output tokens/s and TPOT)."""
    from inference_ledger.validation import accuracy_report
    lo = {g.metric: g.median_abs_error for g in accuracy_report.groups(st.left_out) if g.breakdown == "all"}
    de = {g.metric: g.median_abs_error for g in accuracy_report.groups(st.defaults) if g.breakdown == "all"}
    parts = [f"{accuracy_report.SHORT[m]} {lo[m]:.1%} left out vs {de[m]:.1%} with the defaults"
             for m in ("output_tok_s", "tpot_ms") if m in lo and m in de]
    better = all(lo[m] < de[m] for m in ("output_tok_s", "tpot_ms") if m in lo and m in de)
    return (f"On this set the fit, left out source by source, does {'better' if better else 'worse'} than the "
            f"defaults ({'; '.join(parts)}).")


def _segment_verdict(st) -> str:
    """Which segmentations meet the tokens/s band target on the held-out figures (none, so far)."""
    from inference_ledger.validation import accuracy_report
    inside, width = accuracy_report.BAND_TARGET
    met = [words for words, chain, n in accuracy_report.SEGMENTATIONS
           for c in accuracy_report.coverage(st.served, chain=chain, min_sources=n)
           if c.metric == "output_tok_s" and c.inside >= inside and c.median_width <= width]
    if met:
        return f"The tokens/s target ({inside:.0%} inside, median high/low <= {width:g}) is met by {', '.join(met)}."
    return (f"None of them meets the tokens/s target ({inside:.0%} inside, median high/low <= {width:g}): where the "
            "next source's bias is as wide as the sources' spread, only a more accurate plan narrows the band.")


def accuracy_page(st) -> str:
    """docs/accuracy.md, generated from the leave-one-source-out study (tests/test_accuracy.py keeps it fresh)."""
    from inference_ledger.validation import accuracy, accuracy_report, load_fidelity
    from inference_ledger.catalogs import bands
    rows, srcs = len(st.rowset), st.sources
    h = accuracy_report.headline(st)
    out = ["# How accurate is the plan on deployments it has not seen?", "",
           "<!-- generated by `inference-ledger validate --accuracy-page docs/accuracy.md`; do not edit -->", "",
           f"Data: `inference_ledger/data/measured_load.csv` (sha256 {accuracy_report.data_fingerprint()}), {rows} published "
           f"rows under load from {len(srcs)} independent sources. A source is the file's `source_group`: one team "
           "with one harness, whatever documents it published (held out together, so a sibling document cannot "
           "leak the held-out harness).", "",
           "Every error on this page is **held out**: a figure is never predicted with anything fitted on its own "
           "source. The declared parameters (table below) are fitted on all sources but one, by a coarse grid "
           "search per parameter minimising the median |log(predicted/measured)| of output tokens/s and TPOT, each "
           "source weighing the same; the source left out is then predicted (the *left out* column). The plan "
           f"itself runs {st.served_words} (the *defaults* column): "
           + ", ".join(f"{accuracy_report.SHORT[m]} {h[m]:.1%}" for m in accuracy.METRICS if m in h)
           + " median abs. error over every row. In-sample figures appear once, labelled, at the end.", "",
           "## Against the targets", "",
           _markdown(accuracy_report.targets_table(st)), "",
           "## Per source, engine family, GPU vendor, dense/MoE and regime", "",
           _markdown(accuracy_report.loso_table(st)), "",
           "## The typical request's TTFT", "",
           "A closed-loop benchmark's clients start together, so the mean TTFT it prints also carries its first wave "
           "(C prompts at once) and its tail; where a source prints the median too and the first wave is under half "
           "of the run's requests, the median request is a later one, and the plan's steady-state TTFT (a request "
           "arriving after a finished one, plus its wait for a slot: the figure a plan reports at its target QPS) is "
           "compared with it (`load_fidelity.median_ttft`). The mean TTFT of the same runs is beside it. Reported, "
           "not fitted, and not a target.", "",
           _markdown(load_fidelity.median_ttft_table(st.rowset.rows)), "",
           "## Error bands", "",
           f"Every plan carries `tokens_per_second_low`/`_high`, `tpot_seconds_low`/`_high`, `ttft_seconds_low`/"
           "`_high`, `gpus_for_qps_low`/`_high`, `monthly_cost_qps_low`/`_high` and "
           "`cost_per_million_output_tokens_low`/`_high` (`plan --json`, `=PLAN`, the workbook's Plan sheet): the "
           f"prediction times the {bands.BAND_QUANTILES[0]:g}th and {bands.BAND_QUANTILES[1]:g}th percentiles of "
           f"measured/predicted in the plan's segment, each source weighing the same, so {bands.BAND_SHARE_WORDS}. "
           f"A segment is {bands.SEGMENT_WORDS}: one with fewer than "
           f"{bands.MIN_BAND_ROWS} figures of a metric or fewer than {bands.MIN_BAND_SOURCES} sources uses all rows, "
           "so every plan has a band; the table below the next shows why not finer segments. Where a segment's low is above 1 or its high below 1 the plan's own figure lies outside its band: "
           "the plan is biased there, and the band says by how much. The table is data, `inference_ledger/data/error_bands.csv` (`validate --write-bands`), read when "
           "a plan is resolved. GPUs and monthly cost scale with the throughput band (low GPUs at high throughput); "
           "cost per million tokens likewise.", "",
           "How a band drawn this way does on a source it has never seen (for each source, the bands are drawn "
           "from the other sources' figures and the source's figures are checked against them):", "",
           _markdown(accuracy_report.coverage_table(st)), "",
           "Other ways to segment, held out the same way (`accuracy_report.SEGMENTATIONS`: each figure's band drawn "
           "from the other sources' figures, at the first level of the scheme whose segment holds "
           f"{bands.MIN_BAND_ROWS} figures from enough sources, else all rows). " + _segment_verdict(st), "",
           _markdown(accuracy_report.segmentation_table(st)), "",
           "The shipped band table:", "",
           _markdown([list(bands.BAND_HEADER)] + [[b.engine_family, b.gpu_vendor, b.architecture, b.metric, str(b.n),
                                                   str(b.sources), f"{b.low:.3f}", f"{b.median:.3f}", f"{b.high:.3f}"]
                                                  for b in accuracy_report.bands(st.served)]), "",
           "## Declared parameters, fitted on every source", "",
           "A few global, physically named plan inputs per GPU vendor or engine family "
           f"(inference_ledger/validation/accuracy.py `PARAMETERS`), never one per row; a scope with fewer than {accuracy.MIN_FIT_ROWS} training figures "
           f"or {accuracy.MIN_FIT_SOURCES} sources keeps its default. Recorded in "
           "`inference_ledger/data/fitted_parameters.csv`; plans use the fitted values only where its `applied` "
           f"column says so (`accuracy.PLAN_USES_FIT`, now {accuracy.PLAN_USES_FIT}). " + _fit_verdict(st), "",
           _markdown(accuracy_report.fitted_table(st)), "",
           "## In-sample (for reference only)", "",
           _markdown(accuracy_report.in_sample_table(st)), "",
           "Reproduce: `inference-ledger validate --accuracy` prints these tables.", ""]
    return "\n".join(out)


@click.command("validate", cls=Command)
@click.option("--data", "data", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Measured CSV (default: the shipped inference_ledger/data/measured.csv; the public file's columns also "
                   f"work): {files.limit_words('data')}.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "csv"]), default="text", show_default=True,
              help="Output format of the two tables.")
@click.option("--summary-only", is_flag=True, help="Print the per-metric summary only.")
@click.option("--strict", is_flag=True, help="Also exit 1 when an accuracy target is missed.")
@click.option("--accuracy", "accuracy_only", is_flag=True,
              help="Print only the leave-one-source-out tables of the shipped load rows.")
@click.option("--write-bands", is_flag=True,
              help="Write inference_ledger/data/error_bands.csv from the held-out figures (the plan's bands); "
                   "prints the --accuracy tables.")
@click.option("--accuracy-page", "page", type=click.Path(dir_okay=False), default=None,
              help="Write the accuracy page (docs/accuracy.md) generated from the leave-one-source-out study; "
                   "prints the --accuracy tables.")
def validate_cmd(data: Optional[str], fmt: str, summary_only: bool, strict: bool, accuracy_only: bool,
                 write_bands: bool, page: Optional[str]) -> None:
    """Under load, errors leave one source out (--accuracy); --write-bands writes the plans' error bands."""
    render = {"text": _text, "markdown": _markdown, "csv": _csv}[fmt]
    if accuracy_only or write_bands or page:
        if data is not None:
            raise click.UsageError("--accuracy, --write-bands and --accuracy-page use the shipped load rows; "
                                   "drop --data")
        from inference_ledger.validation import accuracy, accuracy_report
        from inference_ledger.core.files import write_with
        st = accuracy.study()
        if write_bands:
            click.echo(f"wrote {accuracy_report.write_bands(st)}", err=True)
            click.echo(f"wrote {accuracy_report.write_fitted(st)}", err=True)
        if page:
            text = accuracy_page(st)
            write_with(page, "md", lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), "--accuracy-page")
            click.echo(f"wrote {page}", err=True)
        click.echo("\n\n".join(f"{title}\n{render(t)}" for title, t in accuracy_tables(st)))
        return
    checks = fidelity.compare(fidelity.load_measured(data))
    summary = fidelity.summarize(checks)
    if not summary_only:
        click.echo(render(row_table(checks)))
        click.echo("")
    if data is None and not summary_only:  # the shipped load rows: steady-state figures at concurrency > 1
        from inference_ledger.validation import load_fidelity
        click.echo(render(load_table(load_fidelity.summarize(load_fidelity.checks()))))
        click.echo("")
        from inference_ledger.validation import accuracy, accuracy_report
        for title, t in accuracy_tables(accuracy.study()):
            click.echo(title)
            click.echo(render(t))
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
