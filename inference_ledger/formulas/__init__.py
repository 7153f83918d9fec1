"""The topic formulas and their lines: the paper's ledgers (:mod:`.ledger`), what an engine adds
(:mod:`.engine_ledger`), serving and the step model (:mod:`.serving` with its lines in :mod:`.serving_lines`,
:mod:`.step_lines`, :mod:`.step_inverse_lines`), layouts beyond one node (:mod:`.parallel`), the closed-form inverses
(:mod:`.whatif`, its lines in :mod:`.whatif_lines`), money (:mod:`.finance`), the measured-kernel step model
(:mod:`.kernel_tables`, :mod:`.gemm_shapes`, :mod:`.kernels`, :mod:`.kernels_fused`) and the checked public functions (:mod:`.functions`).
Where a line is a formula, the ``@line`` sits on the formula itself (parallel, finance).  Imports only the core; knows
no catalog and no plan."""
