"""The catalogs: GPUs, models and number formats, each fact with its source.

Data lives in files, not code:

* ``inference_ledger/data/gpus.csv``: one row per accelerator, base units (bytes, B/s, dense FLOP/s, W, $);
* ``inference_ledger/data/models/*.json``: Hugging Face ``config.json`` files, parsed offline by
  :mod:`inference_ledger.catalogs.hfconfig`; ``inference_ledger/data/models/sources.csv`` adds names, aliases, official
  parameter counts and where each config came from.  Dropping a config.json into that folder
  adds a model (its id is the file name);
* ``inference_ledger/data/dtypes.csv``: weight and KV-cache formats (bits, group scales, compute unit).

Names match case-insensitively, with spaces/underscores read as dashes, by id, alias, display
name or Hugging Face repo.  An unknown name raises :class:`UnknownId` with the closest matches.

Turning these facts into plan inputs (and refusing choices that cannot run) is
:mod:`inference_ledger.graph.resolve`'s job; this module only reads and finds.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from inference_ledger.core import csvfile
from inference_ledger.core.args import LedgerInputError, echo
from inference_ledger.catalogs.prices import PLACEHOLDER_PRICE, on_placeholder
from inference_ledger.core.sheetfuncs import starts_with
from inference_ledger.catalogs.hfconfig import Architecture, load_config, parse
from inference_ledger.formulas.ledger import bytes_per_element

DATA = Path(__file__).resolve().parents[1] / "data"
GPUS_CSV = DATA / "gpus.csv"
MODELS_DIR = DATA / "models"
DTYPES_CSV = DATA / "dtypes.csv"

#: Format every module outside the quantized linear layers stays in (embeddings, norms, routers).
UNQUANTIZED_DTYPE = "bf16"
#: GPU column used when the chip has no unit for the weight format's compute_field (A100: no FP8).
FALLBACK_COMPUTE_FIELD = "bf16_flops"


class UnknownId(LedgerInputError):
    """A GPU, model or format name that is not in the catalog (the message suggests the closest)."""


# ----------------------------------------------------------------------------------------
# records
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    """One accelerator, base units; FLOP/s are dense (None where the chip has no such unit)."""

    id: str
    name: str
    vendor: str
    memory_bytes: float
    memory_runtime_bytes: float
    hbm_bw: float
    bf16_flops: float
    fp8_flops: Optional[float]
    int8_ops: Optional[float]
    fp4_flops: Optional[float]
    interconnect_bw: Optional[float]
    tdp_w: Optional[float]
    price_per_gpu_hour: Optional[float]
    price_source: str
    price_date: str
    source: str
    date: str
    aliases: tuple[str, ...]
    notes: str
    gpus_per_node: int = 8
    gpus_per_node_source: str = ""
    scaleout_bw: float = 50e9          # scale-out network per GPU per direction, B/s
    scaleout_source: str = ""

    @property
    def price_placeholder(self) -> bool:
        """Whether the catalog's hourly price is a placeholder (price_source starts with :data:`PLACEHOLDER_PRICE`)."""
        return bool(starts_with(self.price_source, PLACEHOLDER_PRICE))


@dataclass(frozen=True)
class Model:
    """One model as its config.json describes it, counts in parameters."""

    id: str
    name: str
    hf_repo: str
    aliases: tuple[str, ...]
    num_params: int
    active_params: int
    quantized_params: int
    active_quantized_params: int
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    mla_latent_dim: int
    sliding_layers: int
    window: int
    num_experts: int
    experts_per_token: int
    weight_dtype: str
    max_position_embeddings: int
    params_official: Optional[float]
    active_official: Optional[float]
    source: str
    date: str
    # beyond the contract: provenance and what the official counts include
    provenance: str = ""
    active_convention: str = "all"
    embedding_params: int = 0
    notes: str = ""
    moe_layers: int = 0               # layers whose MLP is routed experts
    dense_intermediate_size: int = 0  # a MoE model's dense layers' MLP width (0: intermediate_size)
    shared_intermediate_size: int = 0  # the shared experts' width per MoE layer (0: none)


@dataclass(frozen=True)
class Dtype:
    """A number format: bits per element plus any per-group scale."""

    id: str
    aliases: tuple[str, ...]
    bits: float
    group_size: int
    scale_bits: float
    bytes_per_element: float
    use: str
    compute_field: str
    moe_kernel_pads: int
    source: str
    date: str
    notes: str


#: (field, label, unit) in table order, for the workbook sheets and the `gpus` command.
GPU_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("id", "GPU", ""),
    ("name", "Name", ""),
    ("vendor", "Vendor", ""),
    ("memory_bytes", "Memory (marketed, GB x 1e9)", "B"),
    ("memory_runtime_bytes", "Memory as torch reports it", "B"),
    ("hbm_bw", "HBM bandwidth", "B/s"),
    ("bf16_flops", "BF16/FP16 dense", "FLOP/s"),
    ("fp8_flops", "FP8 dense", "FLOP/s"),
    ("int8_ops", "INT8 dense", "OP/s"),
    ("fp4_flops", "FP4 dense", "FLOP/s"),
    ("interconnect_bw", "Interconnect per direction", "B/s"),
    ("tdp_w", "TDP", "W"),
    ("price_per_gpu_hour", "Price per GPU-hour", "$/GPU-h"),
    ("price_source", "Price source", ""),
    ("price_date", "Price date", ""),
    ("gpus_per_node", "GPUs per node (TP limit)", "GPUs"),
    ("gpus_per_node_source", "Node source", ""),
    ("scaleout_bw", "Scale-out network per GPU", "B/s"),
    ("scaleout_source", "Scale-out source", ""),
    ("source", "Source", ""),
    ("date", "Date", ""),
    ("aliases", "Aliases", ""),
    ("notes", "Notes", ""),
)

MODEL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("id", "Model", ""),
    ("name", "Name", ""),
    ("hf_repo", "Hugging Face repo", ""),
    ("num_params", "Total parameters", "params"),
    ("active_params", "Active parameters per token", "params"),
    ("quantized_params", "Parameters in quantizable linear layers", "params"),
    ("active_quantized_params", "Active parameters in quantizable layers", "params"),
    ("num_layers", "Layers", "layers"),
    ("hidden_size", "Hidden size", "elements"),
    ("num_attention_heads", "Attention heads", "heads"),
    ("kv_heads", "KV heads", "heads"),
    ("head_dim", "Head dimension", "elements"),
    ("intermediate_size", "MLP / expert width", "elements"),
    ("dense_intermediate_size", "Dense-layer MLP width (0 = the MLP width)", "elements"),
    ("shared_intermediate_size", "Shared-expert width (0 = none)", "elements"),
    ("vocab_size", "Vocabulary", "tokens"),
    ("mla_latent_dim", "MLA latent width (0 = none)", "elements"),
    ("sliding_layers", "Sliding-window layers", "layers"),
    ("window", "Sliding window", "tokens"),
    ("num_experts", "Routed experts", "experts"),
    ("experts_per_token", "Experts per token", "experts"),
    ("moe_layers", "MoE layers", "layers"),
    ("weight_dtype", "Checkpoint weight format", ""),
    ("max_position_embeddings", "Max context", "tokens"),
    ("params_official", "Official total", "params"),
    ("active_official", "Official active", "params"),
    ("source", "Config source", ""),
    ("date", "Date", ""),
    ("aliases", "Aliases", ""),
)

#: Derived model fields model_spec also answers.
MODEL_DERIVED = ("kv_bytes_per_token", "weights_bytes")
#: Friendlier names accepted by gpu_spec (=GPU_SPEC("h100-sxm","hbm_bandwidth")).
GPU_FIELD_ALIASES = {"hbm_bandwidth": "hbm_bw", "memory": "memory_bytes", "memory_runtime": "memory_runtime_bytes",
                     "runtime_memory_bytes": "memory_runtime_bytes", "price": "price_per_gpu_hour", "tdp": "tdp_w"}


# ----------------------------------------------------------------------------------------
# file reading
# ----------------------------------------------------------------------------------------


def _num(row: dict, key: str, where: str, required: bool = True) -> Optional[float]:
    return csvfile.Cells(row, where).number(key, required)


def _aliases(text: str) -> tuple[str, ...]:
    return tuple(a.strip() for a in text.split("|") if a.strip())


@functools.lru_cache(maxsize=None)
def _load_gpus(path: Path) -> tuple[Gpu, ...]:
    return tuple(csvfile.load(Gpu, path, make=lambda c: csvfile.as_dataclass(
        Gpu, c, required=("id",), name=c.text("name") or c.text("id", True))))


@functools.lru_cache(maxsize=None)
def _load_dtypes(path: Path) -> tuple[Dtype, ...]:
    def make(c: csvfile.Cells) -> Dtype:
        bits, group, scale = c.number("bits"), c.whole("group_size"), c.number("scale_bits")
        return csvfile.as_dataclass(Dtype, c, required=("id",), group_size=group,
                                    bytes_per_element=float(bytes_per_element(bits, group, scale)),
                                    compute_field=c.text("compute_field") or FALLBACK_COMPUTE_FIELD,
                                    moe_kernel_pads=c.whole("moe_kernel_pads"))
    return tuple(csvfile.load(Dtype, path, make=make))


def model_from_arch(arch: Architecture, *, id: str, name: str = "", hf_repo: str = "", aliases: Sequence[str] = (),
                    source: str = "", date: str = "", meta: Optional[dict] = None) -> Model:
    """A Model record from a parsed config plus its catalog row (meta = sources.csv fields)."""
    meta = meta or {}
    where = f"sources.csv row {id}"
    return Model(
        id=id, name=name or id, hf_repo=hf_repo, aliases=tuple(aliases),
        num_params=arch.num_params, active_params=arch.active_params, quantized_params=arch.quantized_params,
        active_quantized_params=arch.active_quantized_params, num_layers=arch.num_layers,
        hidden_size=arch.hidden_size, num_attention_heads=arch.num_attention_heads, kv_heads=arch.kv_heads,
        head_dim=arch.head_dim, intermediate_size=arch.intermediate_size, vocab_size=arch.vocab_size,
        mla_latent_dim=arch.mla_latent_dim, sliding_layers=arch.sliding_layers, window=arch.window,
        num_experts=arch.num_experts, experts_per_token=arch.experts_per_token, weight_dtype=arch.weight_dtype,
        max_position_embeddings=arch.max_position_embeddings,
        params_official=_num(meta, "params_official", where, False), active_official=_num(meta, "active_official", where, False),
        source=source, date=date, provenance=meta.get("provenance", ""),
        active_convention=meta.get("active_convention") or "all", embedding_params=arch.embedding_params,
        notes=meta.get("notes", ""), moe_layers=arch.moe_layers, dense_intermediate_size=arch.dense_intermediate_size,
        shared_intermediate_size=arch.shared_intermediate_size,
    )


def model_from_config(path: str | Path) -> Model:
    """A Model straight from any config.json (``plan --config``); its id is the file name."""
    p = Path(path)
    cfg = load_config(p)
    stem = p.resolve().parent.name if p.stem == "config" else p.stem  # .../Llama-3.1-8B/config.json
    mid = re.sub(r"[_-]config$", "", stem or "config").lower()
    return model_from_arch(parse(cfg, where=p.name), id=mid, hf_repo=str(cfg.get("_name_or_path", "")),
                           source=str(p), date=_mtime(p))


def _mtime(p: Path) -> str:
    return _dt.date.fromtimestamp(p.stat().st_mtime).isoformat()


@functools.lru_cache(maxsize=None)
def _load_models(folder: Path) -> tuple[Model, ...]:
    meta = {r["id"]: r for r in csvfile.read(folder / "sources.csv").rows} if (folder / "sources.csv").exists() else {}
    out = []
    for p in sorted(folder.glob("*.json")):
        mid = p.stem.lower()
        m = meta.get(mid, {})
        arch = parse(load_config(p), where=f"models/{p.name}")
        source = m.get("config_source") or f"inference_ledger/data/models/{p.name} (added by the user)"
        out.append(model_from_arch(arch, id=mid, name=m.get("name", ""), hf_repo=m.get("hf_repo", ""),
                                   aliases=_aliases(m.get("aliases", "")), source=source,
                                   date=m.get("date") or _mtime(p), meta=m))
    order = list(meta)
    out.sort(key=lambda x: (order.index(x.id) if x.id in order else len(order), x.id))
    return tuple(out)


def load_gpus() -> list[Gpu]:
    """Every GPU of inference_ledger/data/gpus.csv, in file order."""
    return list(_load_gpus(GPUS_CSV))


def load_models(folder: str | Path | None = None) -> list[Model]:
    """Every model of inference_ledger/data/models/ (or folder): sources.csv order first, then other config files by name."""
    return list(_load_models(Path(folder) if folder else MODELS_DIR))


def load_dtypes() -> list[Dtype]:
    """Every number format of inference_ledger/data/dtypes.csv, in file order."""
    return list(_load_dtypes(DTYPES_CSV))


# ----------------------------------------------------------------------------------------
# lookup by name
# ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


_INDEXES: dict[str, tuple[list, dict[str, Any]]] = {}   # per kind: the rows last indexed, and their index by name


def _index(kind: str, items: Iterable[Any], names_of) -> dict[str, Any]:
    """Each name of the rows -> the first row holding it; rebuilt only when the loaded rows change."""
    items, last = list(items), _INDEXES.get(kind)
    if last is None or len(last[0]) != len(items) or any(a is not b for a, b in zip(last[0], items)):
        last = _INDEXES[kind] = (items, {_key(n): it for it in reversed(items) for n in reversed(names_of(it)) if n})
    return last[1]


def _find(kind: str, items: Iterable[Any], name: Any, names_of) -> Any:
    if not isinstance(name, str) or not name.strip():
        raise UnknownId(f"{kind} must be a name (got {echo(name)})")
    index = _index(kind, items, names_of)
    k = _key(name)
    if k in index:
        return index[k]
    ids: list[str] = []
    for m in difflib.get_close_matches(k, list(index), n=10, cutoff=0.5):
        if index[m].id not in ids:
            ids.append(index[m].id)
    hint = f": did you mean {', '.join(ids[:3])}?" if ids else \
        f" (known: {', '.join(sorted({it.id for it in index.values()}))})"
    raise UnknownId(f"unknown {kind} {echo(name)}{hint}")


def get_gpu(name: str) -> Gpu:
    """A GPU by id, alias or name (case-insensitive): 'h100-sxm', 'H100', 'H100 SXM5 80GB'."""
    return _find("GPU", load_gpus(), name, lambda g: (g.id, g.name, *g.aliases))


def placeholder_price(gpu_id: Optional[str], price_per_gpu_hour: float) -> bool:
    """:func:`on_placeholder` for a catalog GPU by id (False for one not in the catalog)."""
    g = find_gpu_or_none(gpu_id)
    return bool(g and on_placeholder(g.price_source, float(price_per_gpu_hour), g.price_per_gpu_hour))


def find_gpu_or_none(gpu_id: Optional[str]) -> Optional[Gpu]:
    """A catalog GPU by id, None for none or one not in the catalog."""
    try:
        return get_gpu(gpu_id) if gpu_id else None
    except UnknownId:
        return None


def fp4_tensor_cores(gpu_id: Optional[str]) -> bool:
    """Whether a catalog GPU multiplies FP4 natively (an FP4 dense rate in gpus.csv: Blackwell, MI355X); False for
    a GPU not in the catalog."""
    g = find_gpu_or_none(gpu_id)
    return bool(g and g.fp4_flops)


def get_model(name: str) -> Model:
    """A model by id, alias, name or Hugging Face repo: 'llama-3.1-70b', 'meta-llama/Llama-3.1-70B'."""
    return _find("model", load_models(), name, lambda m: (m.id, m.name, m.hf_repo, *m.aliases))


def get_dtype(name: str) -> Dtype:
    """A number format by id or alias: 'bf16', 'bfloat16', 'fp8', 'int4', 'mxfp4'."""
    return _find("dtype", load_dtypes(), name, lambda d: (d.id, *d.aliases))


def field_name(kind: str, fields: Sequence[str], field: Any, aliases: dict | None = None) -> str:
    f = _key(str(field)).replace("-", "_")
    f = (aliases or {}).get(f, f)
    if f not in fields:
        close = difflib.get_close_matches(f, list(fields), n=3, cutoff=0.5)
        hint = f": did you mean {', '.join(close)}?" if close else f" (fields: {', '.join(fields)})"
        raise UnknownId(f"unknown {kind} field {echo(field)}{hint}")
    return f


def gpu_spec(gpu_id: str, field: str) -> Any:
    """One GPU fact by field name, base units (None where the chip has no such unit)."""
    g = get_gpu(gpu_id)
    f = field_name("GPU", [x.name for x in dataclasses.fields(Gpu)], field, GPU_FIELD_ALIASES)
    return getattr(g, f)
