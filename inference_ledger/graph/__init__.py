"""The plan graph: the plan's inputs and the glue lines that combine topics (:mod:`.plan`, :mod:`.plan_lines`,
:mod:`.band_lines`), the resolver and its rules (:mod:`.resolve`, :mod:`.rules`), the verdict (:mod:`.verdict`) and
what a plan that does not start has no figure for (:mod:`.bills`), the concurrency choice (:mod:`.concurrency`), sweeps
(:mod:`.sweep`), the layout search (:mod:`.recommend`), disaggregated prefill and decode pools (:mod:`.disaggregated`) and the answer in sentences (:mod:`.summary`)."""
