"""Regenerate tests/fixtures/transformers-param-counts.json: every built-in config.json counted by transformers.

Needs torch and transformers (not project dependencies; nothing is downloaded: each model is built from its
config.json on the meta device, without weights). For each ``udfs/data/models/*.json``:

* the config's quantization_config is dropped, so quantized checkpoints (FP8, MXFP4) are counted at their
  unquantized shapes, as the ledger counts parameters;
* ``AutoConfig.for_model(model_type, **fields)`` builds the config, so every field the file leaves out takes the
  default of that architecture's config class;
* ``AutoModelForCausalLM.from_config`` builds the model under ``torch.device("meta")``; ``params`` is the sum of
  ``numel()`` over ``model.parameters()``, which yields a tied embedding once and leaves buffers out.

    python scripts/transformers_param_counts.py -o tests/fixtures/transformers-param-counts.json

The file is written atomically, keys sorted, so a rerun with the same transformers version gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "udfs" / "data" / "models"


def count(path: Path) -> dict:
    import torch
    import transformers

    fields = json.loads(path.read_text(encoding="utf-8"))
    fields.pop("quantization_config", None)
    cfg = transformers.AutoConfig.for_model(fields.pop("model_type"), **fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    inp, out = model.get_input_embeddings(), model.get_output_embeddings()
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "tied": out is not None and out.weight is inp.weight,
        "tie_word_embeddings_cfg": bool(getattr(cfg.get_text_config(), "tie_word_embeddings", False)),
        "embedding_params": inp.weight.numel(),
        "class": type(model).__name__,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True, help="JSON file to write")
    args = ap.parse_args(argv)
    import transformers

    counts = {p.name: count(p) for p in sorted(MODELS.glob("*.json"))}
    doc = {"note": f"parameter counts of transformers {transformers.__version__} models built from each config.json "
                   "on the meta device (no weights), unique parameters (tied embeddings counted once)",
           "counts": counts}
    fd, tmp = tempfile.mkstemp(dir=args.output.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, args.output)
    print(f"{len(counts)} models -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
