"""The topic formulas and their lines: the paper's ledgers (:mod:`.ledger`), what an engine adds
(:mod:`.engine_ledger`), serving and the step model (:mod:`.serving`, :mod:`.step_lines`, :mod:`.step_inverse_lines`),
layouts beyond one node (:mod:`.parallel`), the closed-form inverses (:mod:`.whatif`), money (:mod:`.finance`), the
measured-kernel step model (:mod:`.kernel_tables`, :mod:`.kernels`, :mod:`.kernels_fused`) and the checked public
functions (:mod:`.functions`).  Imports only the core; knows no catalog and no plan."""
