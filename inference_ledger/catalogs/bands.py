"""Error bands: how far the plan's figures can be trusted, per segment of deployments (data, read at plan time).

``inference_ledger/data/error_bands.csv`` holds, per segment and metric, the 10th and 90th percentiles of
``measured / predicted`` over the held-out figures of the published load rows (``inference-ledger validate
--write-bands`` writes it; :mod:`inference_ledger.validation.accuracy` says how the figures are held out).  A plan's
band is ``predicted x [low, high]``: about 80% of new measurements should fall inside.

A segment is the engine family (:data:`SEGMENT_WORDS`).  A plan takes its own segment's band when the table lists it
(it holds at least ``MIN_BAND_ROWS`` figures of that metric from at least ``MIN_BAND_SOURCES`` sources; the
percentiles weigh each source the same, so a band describes the next source, not the largest one), else the band of
all rows, which is always listed; so every plan has a band.  The segments were chosen by how their bands do on a
source they have never seen (docs/accuracy.md compares the schemes, ``accuracy_report.SEGMENTATIONS``): split
further by GPU vendor and dense/MoE, most cells hold two or three sources, their bands describe those sources' own
bias, and fewer held-out figures fall inside (71% of the tokens/s figures against about 75% by engine family alone).

``inference_ledger/data/fitted_parameters.csv`` records the declared parameters fitted on every source (written
beside the bands): each row says what it was fitted on, and whether plans use it (``applied``; a resolved plan of
the row's scope then takes the value, and an explicit number still wins).  This module reads and picks; it fits
nothing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from inference_ledger.catalogs import catalog, catalog_facts
from inference_ledger.core import csvfile

BANDS_CSV = Path(__file__).resolve().parents[1] / "data" / "error_bands.csv"
FITTED_CSV = Path(__file__).resolve().parents[1] / "data" / "fitted_parameters.csv"
#: The band's percentiles of measured / predicted.
BAND_QUANTILES = (10.0, 90.0)
BAND_SHARE_WORDS = "about 80% of new measurements should fall inside"
#: A segment needs this many held-out figures of a metric for a band of its own; thinner ones use their parent.
MIN_BAND_ROWS = 12
#: ... from at least this many independent sources: a band says where a new source's figures fall, which one
#: source's spread cannot say (its figures share one harness and one bias).
MIN_BAND_SOURCES = 2
#: Segment fields, and the levels a band is looked up at, narrowest first (the fields each keeps; '*' the others).
SEGMENT_FIELDS = ("engine_family", "gpu_vendor", "architecture")
SEGMENT_CHAIN = (("engine_family",), ())
#: The segmentation in words (plan inputs' descriptions, the workbook, the accuracy page, the band table's header).
SEGMENT_WORDS = "the engine family (vLLM, SGLang, TensorRT-LLM, ATOM, LMDeploy, or unknown), else all rows"
#: measured metric -> (plan input of the band's low multiplier, of its high multiplier)
BAND_INPUTS = {"output_tok_s": ("band_low_tokens_per_second", "band_high_tokens_per_second"),
               "tpot_ms": ("band_low_tpot", "band_high_tpot"),
               "ttft_ms": ("band_low_ttft", "band_high_ttft")}
BAND_HEADER = ("engine_family", "gpu_vendor", "architecture", "metric", "rows", "sources", "low", "median", "high")
#: The default GPU when none is chosen (the plan's defaults are its catalog row).
DEFAULT_GPU = catalog_facts.DEFAULT_GPU


def engine_family(engine_id: Optional[str]) -> str:
    """``vllm``, ``sglang``, ``trtllm`` (an engines.csv id without its version); ``unknown`` for a blank id."""
    return engine_id.split("-")[0] if engine_id else "unknown"


def gpu_vendor(gpu_id: Optional[str]) -> str:
    """The GPU catalog's vendor (NVIDIA, AMD, ...); the default GPU's where none is chosen."""
    return catalog.get_gpu(gpu_id or DEFAULT_GPU).vendor


def architecture(num_experts: Optional[float]) -> str:
    """``moe`` for a model with routed experts, else ``dense`` (no model chosen: dense)."""
    return "moe" if (num_experts or 0) > 0 else "dense"


def segment_of(num_experts: Optional[float], gpu_id: Optional[str], engine_id: Optional[str]) -> dict[str, str]:
    """A deployment's segment: engine family, GPU vendor, dense/MoE (from the model's routed experts)."""
    return {"engine_family": engine_family(engine_id), "gpu_vendor": gpu_vendor(gpu_id),
            "architecture": architecture(num_experts)}


@dataclass(frozen=True)
class Band:
    """The band of one metric in one segment ('*' = any field): percentiles of measured/predicted."""

    engine_family: str
    gpu_vendor: str
    architecture: str
    metric: str
    n: int
    sources: int
    low: float
    median: float
    high: float

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.engine_family, self.gpu_vendor, self.architecture)

    def words(self) -> str:
        """'trtllm x NVIDIA x dense (64 figures, 1 source)', '*' fields as 'any ...'."""
        names = [v if v != "*" else f"any {f.replace('_', ' ')}" for f, v in zip(SEGMENT_FIELDS, self.key)]
        if all(v == "*" for v in self.key):
            names = ["all rows"]
        return f"{' x '.join(names)} ({self.n} figures, {self.sources} source{'s' if self.sources != 1 else ''})"


def level_key(segment: dict[str, str], level: Sequence[str]) -> tuple[str, str, str]:
    return tuple(segment[f] if f in level else "*" for f in SEGMENT_FIELDS)  # type: ignore[return-value]


def pick(table: Sequence[Band], metric: str, segment: dict[str, str]) -> Band:
    """The band of a segment: its own, else the first parent along :data:`SEGMENT_CHAIN` the table lists."""
    by_key = {(b.metric, b.key): b for b in table}
    for level in SEGMENT_CHAIN:
        b = by_key.get((metric, level_key(segment, level)))
        if b is not None:
            return b
    raise ValueError(f"the band table has no all-rows band of {metric}")


def load_bands(path: Path | str | None = None) -> list[Band]:
    """The rows of a band table ('#' lines are comments)."""
    p = Path(path) if path is not None else BANDS_CSV
    out = csvfile.load(Band, p, key="metric", make=lambda c: csvfile.as_dataclass(Band, c, n=c.whole("rows")))
    for b in out:
        if not 0 < b.low <= b.median <= b.high:
            raise ValueError(f"{p.name}: band {b.key} {b.metric} is not 0 < low <= median <= high")
    return out


_SHIPPED: list[list[Band]] = []


def shipped() -> list[Band]:
    """The shipped band table (read once)."""
    if not _SHIPPED:
        _SHIPPED.append(load_bands())
    return _SHIPPED[0]


def band_inputs(num_experts: Optional[float], gpu_id: Optional[str], engine_id: Optional[str]) -> dict[str, float]:
    """The band multipliers (plan inputs) of a deployment's segment."""
    seg = segment_of(num_experts, gpu_id, engine_id)
    out = {}
    for metric, (lo, hi) in BAND_INPUTS.items():
        b = pick(shipped(), metric, seg)
        out[lo], out[hi] = b.low, b.high
    return out


def engine_band_inputs(engine_id: Optional[str]) -> dict[str, float]:
    """The band multipliers of every deployment on an engine: the segment is the engine family alone
    (:data:`SEGMENT_CHAIN`), so a workbook can keep them on the engine's row and look them up by engine."""
    if any(set(level) - {"engine_family"} for level in SEGMENT_CHAIN):
        raise ValueError("the band segments read more than the engine family: a band is not an engine's constant")
    return band_inputs(None, None, engine_id)


def band_rows(num_experts: Optional[float], gpu_id: Optional[str], engine_id: Optional[str]) -> dict[str, Band]:
    """metric -> the band row a deployment's figure is drawn from (its segment or the parent it falls back to)."""
    seg = segment_of(num_experts, gpu_id, engine_id)
    return {metric: pick(shipped(), metric, seg) for metric in BAND_INPUTS}


FITTED_HEADER = ("name", "by", "group", "value", "default", "fitted", "applied", "rows", "sources", "loss")


@dataclass(frozen=True)
class FittedRow:
    """One fitted parameter as recorded: its scope (``by`` a segment field or ``*``; ``group`` its value)."""

    name: str
    by: str
    group: str
    value: float
    default: float
    fitted: bool
    applied: bool
    rows: int
    sources: tuple[str, ...]
    loss: float


def load_fitted(path: Path | str | None = None) -> list[FittedRow]:
    """The rows of a fitted-parameters table ('#' lines are comments); none when the file does not exist."""
    p = Path(path) if path is not None else FITTED_CSV
    if not p.exists():
        return []
    return csvfile.load(FittedRow, p, key="name", make=lambda c: csvfile.as_dataclass(
        FittedRow, c, loss=c.number("loss", False) if c.text("loss") else float("nan")))


_FITTED: list[list[FittedRow]] = []
_OFF: list[bool] = [False]


@contextlib.contextmanager
def unfitted():
    """Resolve without the fitted values (what a fit starts from: the sourced defaults)."""
    before = _OFF[0]
    _OFF[0] = True
    try:
        yield
    finally:
        _OFF[0] = before


def fitted_inputs(num_experts: Optional[float], gpu_id: Optional[str], engine_id: Optional[str]) -> dict[str, float]:
    """The applied fitted parameters of a deployment's segment, by plan input name (none unless a row is applied)."""
    if _OFF[0]:
        return {}
    if not _FITTED:
        _FITTED.append(load_fitted())
    seg = segment_of(num_experts, gpu_id, engine_id)
    return {r.name: r.value for r in _FITTED[0]
            if r.applied and r.fitted and (r.by == "*" or seg.get(r.by) == r.group)}
