"""What ``inference-ledger calibrate`` prints and writes, and the profile file read back for ``--profile``.

The profile is a commented CSV in the project's data-file style: a header of comments (date, the deployment it
was fitted on, every source file with its hash, what was not fitted and why, each measured row), then one row
per fitted plan input with its value, the default it replaces, its unit and what it was fitted on.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from inference_ledger.catalogs import bands
from inference_ledger.core import csvfile
from inference_ledger.core.unit_registry import count_text
from inference_ledger.core.args import LedgerInputError
from inference_ledger.graph import plan
from inference_ledger.io.benchfiles import BadFile, Record, Run, read_text
from inference_ledger.validation.calibrate import Calibration, _workload
from inference_ledger.validation.calibrate_fit import METRICS, PARAM_BY_NAME
from inference_ledger.io.report import human


# ----------------------------------------------------------------------------------------
# the report and the profile file
# ----------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{(math.exp(x) - 1) * 100:+.1f}%"


def _value(name: str, v: float) -> str:
    unit = plan.INPUT_BY_NAME[name].unit
    if unit == "s" and 0 < abs(v) < 1e-4:            # kernel times per token: too small for milliseconds
        return f"{v * 1e9:.4g} ns"
    return human(v, unit)


def report(cal: Calibration) -> str:
    """The words calibrate prints: what it fitted, what it left and why, residuals, outliers, leave-one-out."""
    d = cal.resolved.describe()
    out = [f"Calibrated {d['model'] or 'the given model'} on {d['gpu'] or 'the given GPU'}, TP "
           f"{int(cal.resolved.inputs['tp'])}, engine {d['engine']}, from {count_text(len(cal.files), 'files')}."]
    out += [f"  {line}" for line in cal.accepted]
    for g in cal.groups:
        kind = "benchmark runs" if g.kind == "benchmark" else "start-up logs"
        out.append(f"{kind.capitalize()}: {count_text(g.points, 'measured points')}, "
                   f"{count_text(len(g.fitted), 'parameters')} fitted.")
        for n, v in g.fitted.items():
            p = PARAM_BY_NAME[n]
            edge = " [at its bound: the data asks for more than the step model allows]" \
                if math.isclose(v, p.hi, rel_tol=1e-6) or v <= p.lo + 1e-9 * max(p.hi, 1e-300) else ""
            out.append(f"  fitted {n} = {_value(n, v)} (default {_value(n, g.defaults[n])}): {p.what}{edge}")
        for n, why in g.left.items():
            out.append(f"  left {n} at its default: {why}")
        if g.thin:
            out.append(f"  thin data: {count_text(g.points, 'points')} for {count_text(len(g.fitted), 'parameters')} "
                       "(fewer than twice as many); "
                       "measure more runs before trusting these values")
        out.append(f"  RMS residual {g.rms_before * 100:.1f}% before, {g.rms_after * 100:.1f}% after")
        bands_ = {n: v for n, (v, _) in residual_bands(cal).items()}
        for words, (lo_name, hi_name) in BAND_ROWS.items():
            if g.kind == "benchmark" and lo_name in bands_:
                out.append(f"  error band of {words} from your held-out runs: measured = predicted x "
                           f"[{bands_[lo_name]:.3f}, {bands_[hi_name]:.3f}]")
        for fr in g.files:
            res = ", ".join(f"{w} {_pct(x)}" for w, x in fr.residuals.items())
            loo = ", ".join(f"{w} {_pct(x)}" for w, x in fr.loo.items())
            flag = "  OUTLIER (over 3 median absolute deviations)" if fr.outlier else ""
            out.append(f"  {fr.file}: {res}" + (f"; left out: {loo}" if loo else "") + flag)
    return "\n".join(out)


PROFILE_HEADER = "name,value,default,unit,fitted_on"
#: The plan's error-band inputs a calibration replaces with its own held-out residuals: metric -> (low, high).
BAND_ROWS = {"output tokens/s": ("band_low_tokens_per_second", "band_high_tokens_per_second"),
             "TPOT": ("band_low_tpot", "band_high_tpot"), "TTFT": ("band_low_ttft", "band_high_ttft")}
#: Held-out files a band needs (fewer: the catalog's band stays).
MIN_BAND_FILES = 3


def residual_bands(cal: Calibration) -> dict[str, tuple[float, int]]:
    """Band multipliers from the calibration's own leave-one-out residuals: the 10th and 90th percentiles of
    measured / predicted over the held-out benchmark files (name -> (value, files))."""
    out: dict[str, tuple[float, int]] = {}
    for g in cal.groups:
        for words, names in BAND_ROWS.items():
            ratios = [math.exp(-fr.loo[words]) for fr in g.files if words in fr.loo]
            if len(ratios) < MIN_BAND_FILES or not all(n in plan.INPUT_BY_NAME for n in names):
                continue
            for name, q in zip(names, bands.BAND_QUANTILES):
                out[name] = (float(np.percentile(ratios, q)), len(ratios))
    return out


def _sha(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return "unreadable"


#: What a profile keeps of each measured record (the Calibration sheet shows them against the predictions).
MEASURED_KEYS = ("concurrency", "input_tokens", "output_tokens", "max_model_len", "gpu_memory_utilization",
                 "tokens_per_second", "tpot_seconds", "ttft_seconds", "kv_capacity_tokens")


def _measured(rec: Record) -> dict[str, float]:
    """A record's workload and measured figures under the plan's names."""
    out: dict[str, float] = {}
    if isinstance(rec, Run):
        out.update(_workload(rec))
    else:
        for k in ("max_model_len", "gpu_memory_utilization"):
            if getattr(rec, k) is not None:
                out[k] = float(getattr(rec, k))
    for line, attr, _ in METRICS[rec.kind]:
        v = getattr(rec, attr)
        if v is not None and line in MEASURED_KEYS:
            out[line] = float(v)
    return out


def _measured_line(rec: Record) -> str:
    m = _measured(rec)
    return f"file={rec.path.replace(' ', '%20')} kind={rec.kind} " + " ".join(f"{k}={m[k]:.10g}" for k in
                                                                                 MEASURED_KEYS if k in m)


def profile_csv(cal: Calibration) -> str:
    """The profile in the project's commented-CSV style: sources, date, and what each value was fitted on."""
    d = cal.resolved.describe()
    inp = cal.resolved.inputs
    buf = io.StringIO()
    buf.write("# Calibration profile: plan inputs fitted on your measurements by `inference-ledger calibrate`.\n")
    buf.write("# Use it with --profile on plan, build, sweep and recommend: these values replace the defaults,\n")
    buf.write("# options you give still win. One row per fitted plan input.\n")
    buf.write(f"# date: {cal.date}\n")
    buf.write(f"# deployment: model={d['model'] or ''} gpu={d['gpu'] or ''} tp={int(inp['tp'])} pp={int(inp['pp'])} "
              f"ep={int(inp['ep'])} weight_dtype={d['weight_dtype'] or ''} kv_dtype={d['kv_dtype']} "
              f"engine={d['engine']}\n")
    for f in cal.files:
        buf.write(f"# source: {f} (sha256 {_sha(f)})\n")
    for g in cal.groups:
        for n, why in g.left.items():
            buf.write(f"# not fitted: {n} ({why})\n")
        if g.thin:
            buf.write(f"# thin data: {count_text(g.points, 'points')} for {count_text(len(g.fitted), 'parameters')} "
                      f"of the {g.kind} fit\n")
    for rec in cal.records:
        buf.write(f"# measured: {_measured_line(rec)}\n")
    buf.write("#   name       the plan input (inference_ledger/graph/plan.py INPUTS)\n")
    buf.write("#   value      the fitted value, base units; default: the value it replaces for this deployment\n")
    buf.write("#   fitted_on  what measured it: the points, files and residual of the fit\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PROFILE_HEADER.split(","))
    for name, (v, n) in residual_bands(cal).items():
        q = "10th" if "_low_" in name else "90th"
        w.writerow([name, f"{v:.10g}", f"{inp[name]:.10g}", plan.INPUT_BY_NAME[name].unit,
                    f"{q} percentile of measured / predicted over {n} benchmark files each predicted by a fit "
                    "without it (leave-one-out): the calibrated plan's own error band"])
    for g in cal.groups:
        nfiles = len(g.files)
        for n, v in g.fitted.items():
            w.writerow([n, f"{v:.10g}", f"{g.defaults[n]:.10g}", plan.INPUT_BY_NAME[n].unit,
                        f"{PARAM_BY_NAME[n].what}: {count_text(g.points, 'points')} of "
                        f"{count_text(nfiles, g.kind + ' files')}, RMS residual "
                        f"{g.rms_after * 100:.1f}%"])
    return buf.getvalue()


@dataclass
class Profile:
    """A profile file read back: fitted plan inputs, the files they came from, the deployment they were fitted on."""

    path: str
    values: dict[str, float]
    sources: list[str]
    deployment: dict[str, str]
    date: str
    measured: list[dict[str, Any]] = field(default_factory=list)   # each record's workload and measured figures

    def describe(self) -> dict[str, Any]:
        return {"note": "calibrated from your measurements", "profile": self.path, "date": self.date,
                "files": self.sources, "fitted_on": self.deployment, "values": dict(self.values)}


class ProfileRowError(ValueError):
    """A bad (name, value) row of a profile: ``where`` names the row and column."""

    def __init__(self, where: str, why: str):
        super().__init__(f"{where}: {why}")
        self.where, self.why = where, why


def profile_values(rows) -> dict[str, float]:
    """Fitted plan inputs from (name, value) rows: a profile file's rows, or an Excel range of the Calibration
    sheet's fitted values (blank rows and a 'name' header skipped); each value checked against its input's range."""
    values: dict[str, float] = {}
    n = 0
    for row in rows:
        cells = list(row) + [None, None]
        name = "" if cells[0] is None else str(cells[0]).strip()
        if not name or name.lower() == "name":
            continue
        n += 1
        if name not in plan.INPUT_BY_NAME:
            raise ProfileRowError(f"row {n}, column 'name'", f"{name!r} is not a plan input")
        try:
            v = float(cells[1] if cells[1] is not None and str(cells[1]).strip() else "")
        except (TypeError, ValueError):
            raise ProfileRowError(f"row {n} ({name}), column 'value'", f"{cells[1]!r} is not a number") from None
        try:
            values[name] = plan.INPUT_BY_NAME[name].arg.check(v)
        except ValueError as e:
            raise ProfileRowError(f"row {n} ({name}), column 'value'", str(e)) from None
    # a profile's plan prices its step on the roofline the profile calibrated, not on the published kernel tables
    return {"kernel_tables": 0.0, **values} if values else values


def read_profile(path: str | os.PathLike) -> Profile:
    """A profile CSV, every row checked against its plan input's range; BadFile naming the row otherwise."""
    p = os.fspath(path)
    text = read_text(p)
    try:
        table = csvfile.parse(text, Path(p).name)
    except LedgerInputError as e:
        raise BadFile(p, "csv", str(e)) from None
    sources, dep, date, measured = [], {}, "", []
    for c in table.comments:
        if c.startswith("source:"):
            sources.append(c[len("source:"):].split(" (sha256")[0].strip())
        elif c.startswith("deployment:"):
            dep = dict(kv.split("=", 1) for kv in c[len("deployment:"):].split() if "=" in kv)
        elif c.startswith("date:"):
            date = c[len("date:"):].strip()
        elif c.startswith("measured:"):
            row: dict[str, Any] = {}
            for kv in c[len("measured:"):].split():
                k, _, v = kv.partition("=")
                if k in ("file", "kind"):
                    row[k] = v.replace("%20", " ")
                elif k in MEASURED_KEYS:
                    try:
                        row[k] = float(v)
                    except ValueError:
                        raise BadFile(p, "measured", f"{k}={v!r} is not a number") from None
            measured.append(row)
    if ",".join(table.header) != PROFILE_HEADER:
        raise BadFile(p, "header", f"not a calibration profile (expected the header {PROFILE_HEADER!r}; write one "
                                   "with `inference-ledger calibrate`)")
    rows = [(r.get("name"), r.get("value")) for r in table.rows]
    try:
        values = profile_values(rows)
    except ProfileRowError as e:
        raise BadFile(p, e.where, e.why) from None
    return Profile(p, values, sources, dep, date, measured)


def with_profile(profile: Optional[Profile], numbers: Mapping[str, Any]) -> dict[str, Any]:
    """Plan numbers with a profile's values beneath the ones given (given options win)."""
    out = dict(numbers)
    if profile is not None:
        for k, v in profile.values.items():
            if out.get(k) is None:
                out[k] = v
    return out
