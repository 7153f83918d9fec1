"""Sweeps as a library: every combination of models, GPUs, TP, formats, contexts and concurrencies.

A sweep is a :class:`Table`: label columns (model, GPU, formats), the plan inputs that
change from row to row as value columns, and every line of :mod:`inference_ledger.graph.plan`
(inputs that are the same for every row are shared).  Rows are produced and evaluated a
block at a time (``plan.evaluate`` over numpy arrays), so memory stays flat at any row count.
:mod:`inference_ledger.workbook.sweep` writes a Table as a streaming .xlsx (live formulas) or a .csv.

Which combinations can run is the resolver's decision (:mod:`inference_ledger.graph.resolve`:
TP within one node of the GPU, TP dividing the heads, context within the model's
maximum); the rest are listed with the reason and the number of rows they would have
been, never dropped silently.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from inference_ledger.catalogs import catalog, engines
from inference_ledger.graph import concurrency, plan, resolve, verdict
from inference_ledger.core.args import LedgerInputError

DEFAULT_MAX_ROWS = 100_000
BLOCK_ROWS = 2048                      # rows evaluated together and sharing one formula per column

#: The verdict's words: a text column in front of every row, over the row's ``verdict`` line.
VERDICT_WORDS = "verdict_words"

# Plan inputs a sweep row always shows as values: the catalog facts and the swept settings.
_ROW_GROUPS = ("model", "precision", "gpu")
_SWEPT = ("tp", "input_tokens", "concurrency")
_ROW_ALWAYS = ("price_per_gpu_hour", *_SWEPT)
#: The concurrency grid's value for "auto" (never a valid concurrency): the row's own choice replaces it.
AUTO_ROW = 0.0


# ----------------------------------------------------------------------------------------
# tables: what the writers write
# ----------------------------------------------------------------------------------------

@dataclass
class Table:
    """Rows to write: labels, per-row plan inputs, and inputs shared by every row.

    ``blocks()`` yields ``(labels, inputs)``: label key -> list of text, and row input
    name -> numpy array, all of one block's length.
    """

    labels: tuple[tuple[str, str], ...]            # (key, header)
    row_inputs: tuple[str, ...]
    fixed: dict[str, float]
    n_rows: int
    blocks: Callable[[], Iterator[tuple[dict[str, list], dict[str, np.ndarray]]]]
    skipped: list[tuple[str, str, str, int]] = field(default_factory=list)  # (model, setting, reason, rows)
    sheet: str = "Sweep"
    #: Each family's candidates, one column per member at each (plan.FAMILIES; e.g. the TP degrees of the largest node
    #: among the rows' GPUs); a family not listed follows the shared bound, else the largest node in the GPU catalog.
    candidates: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


def family_candidates(table: Table) -> dict[str, tuple[float, ...]]:
    """The candidates each family's columns are written for (every row's own are among them; a consumer such as
    min_gpus_to_fit masks those beyond a row's bound)."""
    out = {}
    for fam in plan.FAMILIES:
        if fam.name in table.candidates:
            out[fam.name] = tuple(table.candidates[fam.name])
        elif fam.bound in table.fixed:
            out[fam.name] = fam.candidates(table.fixed[fam.bound])
        else:
            out[fam.name] = fam.candidates(max(getattr(g, fam.bound) for g in catalog.load_gpus()))
    return out


def evaluate_block(table: Table, inputs: Mapping[str, np.ndarray], auto: bool = False) -> dict[str, np.ndarray]:
    """Every plan line and the verdict for one block (broadcast to the block's length).

    ``auto``: each row at the concurrency it runs at (:func:`inference_ledger.graph.concurrency.evaluate`: the largest
    meeting the targets), its ``concurrency`` input ignored; the values gain ``concurrency_used`` and its reason."""
    n = len(next(iter(inputs.values())))
    vals = concurrency.evaluate({**table.fixed, **inputs}, validate=False) if auto else \
        plan.evaluate({**table.fixed, **inputs}, validate=False)
    vals[VERDICT_WORDS] = np.array(verdict.WORDS, dtype=object)[np.asarray(vals["verdict"], dtype=int)]
    cands = family_candidates(table)
    for fam in plan.FAMILIES:   # the table's columns: every member at each of the table's candidates
        vals.update(fam.flatten(fam.evaluate(vals, cands[fam.name])))
    return {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in vals.items() if k not in plan.FAMILY_BY_NAME}


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    unit: str
    kind: str        # label | input | line
    doc: str


def columns(table: Table) -> list[Column]:
    """Labels, the verdict, the row inputs (the swept settings first), every plan line in plan order, then each
    family's members at each candidate (``tp_candidates.4.fits``)."""
    out = [Column(k, h, "", "label", "") for k, h in table.labels]
    line = plan.LINE_BY_NAME["verdict"]
    out.append(Column(VERDICT_WORDS, line.label, "", "line", "The verdict in words: " + ", ".join(
        f"{k} {w}" for k, w in enumerate(verdict.WORDS)) + "."))
    swept = [n for n in _SWEPT if n in table.row_inputs]
    for name in swept + [n for n in table.row_inputs if n not in swept]:
        i = plan.INPUT_BY_NAME[name]
        out.append(Column(name, i.label, i.unit, "input", i.doc))
    out += [Column(l.name, l.label, l.unit, "line", l.doc) for l in plan.LINES]
    cands = family_candidates(table)
    out += [Column(fam.flat_name(c, m.name), f"{m.label} at {fam.param.upper()} {fam.key(c)}", m.unit, "line", m.doc)
            for fam in plan.FAMILIES for c in cands[fam.name] for m in fam.members]
    return out


# ----------------------------------------------------------------------------------------
# the sweep: lists of settings -> a Table
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepSpec:
    """Lists of settings; every combination is one row (options named as on the command line)."""

    model: Sequence[str]
    gpu: Sequence[str]
    tp: Sequence[int] = (1, 2, 4, 8)
    weight_dtype: Sequence[str] = ("native",)
    kv_dtype: Sequence[str] = ("bf16",)
    context: Sequence[int] = (4096,)
    concurrency: Sequence[int | str] = (concurrency.AUTO,)   # numbers, or auto: the largest meeting the targets
    engine: str = engines.DEFAULT_ENGINE                        # whose memory rule and batching defaults apply
    fixed: Mapping[str, float] = field(default_factory=dict)   # any other plan input, for every row


def _nonempty(option: str, values: Sequence) -> list:
    values = [v for v in values]
    if not values:
        raise LedgerInputError(f"--{option}: empty list")
    return values


def _dedupe(items):
    return list(dict.fromkeys(items))


def build_sweep(spec: SweepSpec, max_rows: int = DEFAULT_MAX_ROWS) -> Table:
    """Resolve ids, validate every setting, count rows and list the combinations that cannot run.

    Each row's inputs are what `plan` would use: the catalog's facts, the engine's defaults
    for that GPU and TP, then the options given for every row: :func:`inference_ledger.graph.resolve.resolve`.
    """
    # an empty list of ids is the resolver's "empty id" refusal, as for one empty id
    models = _dedupe(resolve.find_model(m) for m in (list(spec.model) or [""]))
    gpus = _dedupe(resolve.find_gpu(g) for g in (list(spec.gpu) or [""]))
    wds = _dedupe(None if str(w).strip().lower() == resolve.NATIVE else resolve.find_dtype(w, "weight").id
                  for w in _nonempty("weight-dtype", spec.weight_dtype))
    kds = _dedupe(resolve.find_dtype(k, "kv").id for k in _nonempty("kv-dtype", spec.kv_dtype))
    tps = _dedupe(int(resolve.check_number("tp", t)) for t in _nonempty("tp", spec.tp))
    # auto (the largest concurrency meeting the targets, per row) is the grid value 0, chosen as the rows are made
    concs = _dedupe(AUTO_ROW if concurrency.is_auto(c) else int(resolve.check_number("concurrency", c))
                    for c in _nonempty("concurrency", spec.concurrency))
    engine = engines.get_engine(spec.engine)
    fixed = {k: resolve.check_number(k, v) for k, v in spec.fixed.items()}
    out_tokens = fixed.get("output_tokens", plan.INPUT_BY_NAME["output_tokens"].default)
    ctxs = [int(resolve.input_tokens_of(c, out_tokens) + out_tokens) for c in _nonempty("context", spec.context)]
    ctxs = _dedupe(ctxs)

    # which (GPU, TP) and contexts each model can run (the resolver's rules); the rest go to the notes
    per_combo = len(wds) * len(kds) * len(concs)
    ok_tp, ok_ctx, notes = {}, {}, {}
    off_engine = {g.id: resolve.engine_problem(engine, g) for g in gpus}   # GPUs the engine does not run on
    for m in models:
        ok_tp[m.id] = [(g, t) for g in gpus for t in tps
                       if not off_engine[g.id] and resolve.tp_problem(m, g, t) is None]
        ok_ctx[m.id] = [c for c in ctxs if resolve.context_problem(m, c) is None]
        for g in gpus:
            if off_engine[g.id]:
                key = (g.id, f"engine {engine.id}", off_engine[g.id])
                notes[key] = notes.get(key, 0) + per_combo * len(ctxs) * len(tps)
                continue
            for t in tps:
                reason = resolve.tp_problem(m, g, t)
                if reason:
                    who = g.id if resolve.node_problem(g, t) else m.id
                    key = (who, f"TP {t}", reason)
                    notes[key] = notes.get(key, 0) + per_combo * len(ctxs)
        for c in ctxs:
            reason = resolve.context_problem(m, c)
            if reason:
                notes[(m.id, f"context {c}", reason)] = per_combo * len(ok_tp[m.id])
    skipped = [(*k, n) for k, n in notes.items()]

    # base rows: plan inputs for (model, gpu, weight dtype, kv dtype, TP); contexts x concurrencies vary within
    # "native" is the checkpoint's own format: a model whose checkpoint is FP8 lists native and fp8 once
    base = _dedupe((m, g, wd or m.weight_dtype, kd, t) for m in models for g in gpus for wd in wds for kd in kds
                   for t in tps if (g, t) in ok_tp[m.id])
    sub = {m.id: len(ok_ctx[m.id]) * len(concs) for m in models}
    n_rows = sum(sub[m.id] for m, *_ in base)
    total = len(models) * len(gpus) * len(wds) * len(kds) * len(tps) * len(ctxs) * len(concs)
    if n_rows == 0:
        raise LedgerInputError(f"none of the {total:,} combinations can run: {skipped[0][2]}")
    if n_rows > max_rows:
        raise LedgerInputError(
            f"the sweep has {n_rows:,} rows ({total:,} combinations, {total - n_rows:,} cannot run), over the limit "
            f"of {max_rows:,} rows: shorten a list or raise --max-rows")
    base_inputs = []
    for m, g, wd, kd, t in base:
        first = {"tp": t, "input_tokens": ok_ctx[m.id][0] - out_tokens}
        base_inputs.append(resolve.resolve(m, g, weight_dtype=wd, kv_dtype=kd, engine=engine.id,
                                           numbers=fixed | first).inputs)
    varying = {k for k in base_inputs[0] if any(b[k] != base_inputs[0][k] for b in base_inputs)}
    row_inputs = tuple(i.name for i in plan.INPUTS
                       if i.group in _ROW_GROUPS or i.name in _ROW_ALWAYS or i.name in varying)
    shared = {k: v for k, v in base_inputs[0].items() if k not in row_inputs}
    base_cols = [n for n in row_inputs if n not in ("input_tokens", "concurrency")]
    matrix = np.array([[b[n] for n in base_cols] for b in base_inputs], dtype=float)
    grids = {m.id: (np.array(ok_ctx[m.id], float), np.array(concs, float)) for m in models}

    labels = (("model", "Model"), ("gpu", "GPU"), ("weight_dtype", "Weight dtype"), ("kv_dtype", "KV dtype"))
    base_labels = {
        "model": np.array([m.id for m, *_ in base], dtype=object),
        "gpu": np.array([g.id for _, g, *_ in base], dtype=object),
        "weight_dtype": np.array([wd or m.weight_dtype for m, _, wd, *_ in base], dtype=object),
        "kv_dtype": np.array([kd for *_, kd, _ in base], dtype=object),
    }

    def pieces() -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(base index, context, concurrency) arrays, a base row at a time, split to blocks."""
        for b, (m, *_rest) in enumerate(base):
            c, k = grids[m.id]
            size = sub[m.id]
            for start in range(0, size, BLOCK_ROWS):
                ci, ki = np.unravel_index(np.arange(start, min(start + BLOCK_ROWS, size)), (len(c), len(k)))
                yield b, c[ci], k[ki]

    def blocks():
        buf, count = [], 0
        for p in itertools.chain(pieces(), [None]):
            if p is not None:
                buf.append(p)
                count += len(p[1])
            if buf and (count >= BLOCK_ROWS or p is None):
                yield _assemble(buf)
                buf, count = [], 0

    def _assemble(buf):
        bidx = np.concatenate([np.full(len(p[1]), p[0]) for p in buf])
        ctx = np.concatenate([p[1] for p in buf])
        conc = np.concatenate([p[2] for p in buf])
        facts = matrix[bidx]
        inputs = {n: facts[:, j] for j, n in enumerate(base_cols)}
        auto = conc == AUTO_ROW
        if auto.any():   # each auto row at the concurrency it runs at (the rule plan and recommend use)
            at = {n: v[auto] for n, v in inputs.items()} | {"input_tokens": (ctx - out_tokens)[auto]}
            conc = conc.copy()
            conc[auto] = concurrency.choose({**shared, **at})["concurrency_used"]
        inputs.update(input_tokens=ctx - out_tokens, concurrency=conc)
        labels_ = {k: arr[bidx].tolist() for k, arr in base_labels.items()}
        return labels_, {n: inputs[n] for n in row_inputs}

    bound = {f.name: f.candidates(max(getattr(g, f.bound) for g in gpus)) for f in plan.FAMILIES}
    return Table(labels, row_inputs, shared, n_rows, blocks, skipped, candidates=bound)
