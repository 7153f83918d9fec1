"""Catalogs and data readers: models and GPUs (:mod:`.catalog`, with Hugging Face configs read by :mod:`.hfconfig` and
:mod:`.hfdefaults`), catalog facts as plan inputs (:mod:`.catalog_facts`), engines (:mod:`.engines`), measured load
rows (:mod:`.load_measurements`) and the error bands (:mod:`.bands`), read from ``inference_ledger/data/``.
Imports the core and the formulas."""
