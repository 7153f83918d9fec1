"""Named constants and unit conversions.

Every number that is not an input lives here with a name, a unit and a reason, so that
the workbook can show it as a labelled cell (FAST: no constants inside formulas) and
the Python formulas use exactly the same value.

Units: GB = 1e9 bytes (decimal, what vendors print on the box) and GiB = 2**30 bytes
(binary, what CUDA, torch and the engines' logs report, often labelled "GB").
"""

from __future__ import annotations

from inference_ledger.core.expr import Const

KV_FACTOR = Const(2, "KV_FACTOR", "one key and one value vector are cached per KV head, per layer, per token", "x")
FLOPS_PER_PARAM = Const(2, "FLOPS_PER_PARAM", "one multiply and one add per weight per token (Kaplan et al. 2020, C ~ 2N per token forward)", "FLOP/param/token")
BITS_PER_BYTE = Const(8, "BITS_PER_BYTE", "8 bits in a byte", "bit/B")
BYTES_PER_GB = Const(1e9, "BYTES_PER_GB", "decimal gigabyte (SI), as marketed", "B/GB")
BYTES_PER_GIB = Const(2**30, "BYTES_PER_GIB", "binary gibibyte, as CUDA/torch/vLLM report (often labelled 'GB')", "B/GiB")
SECONDS_PER_MINUTE = Const(60, "SECONDS_PER_MINUTE", "60 seconds in a minute", "s/min")
SECONDS_PER_HOUR = Const(3600, "SECONDS_PER_HOUR", "60 x 60", "s/h")
SECONDS_PER_DAY = Const(86400, "SECONDS_PER_DAY", "24 x 3600", "s/day")
HOURS_PER_MONTH = Const(730, "HOURS_PER_MONTH", "8760 h per year / 12 (the cloud-billing convention)", "h/month")
DAYS_PER_MONTH = Const(365 / 12, "DAYS_PER_MONTH", "365 / 12", "day/month")
TOKENS_PER_MILLION = Const(1e6, "TOKENS_PER_MILLION", "prices are quoted per million tokens", "tokens/Mtok")
TP_BASE = Const(2, "TP_BASE", "tensor-parallel degrees are powers of two (1, 2, 4, 8): they must divide the attention heads", "x")
MS_PER_S = Const(1000, "MS_PER_S", "milliseconds per second", "ms/s")
US_PER_S = Const(1e6, "US_PER_S", "microseconds per second", "us/s")
# engines (inference_ledger.catalogs.engines): how each sizes its KV cache, and what a prefill chunk keeps alive
KV_RULE_VLLM = Const(1, "KV_RULE_VLLM", "kv_budget_rule code: vLLM, gpu_memory_utilization x total - weights - activation peak - non-torch", "code")
KV_RULE_SGLANG = Const(2, "KV_RULE_SGLANG", "kv_budget_rule code: SGLang, mem_fraction_static x (total - non-torch) - weights", "code")
KV_RULE_TRTLLM = Const(3, "KV_RULE_TRTLLM", "kv_budget_rule code: TensorRT-LLM, free_gpu_memory_fraction x memory free after weights, activations and non-torch", "code")
ACT_HIDDEN_COPIES = Const(3, "ACT_HIDDEN_COPIES", "hidden-wide tensors live at the MLP's peak: residual, normed input, MLP output (vLLM LlamaMLP.forward)", "tensors")
ACT_MLP_COPIES = Const(3, "ACT_MLP_COPIES", "MLP-wide tensors live at the down projection: gate+up output (2) and the SiLU-and-mul output (1)", "tensors")
GLU_MATRICES = Const(3, "GLU_MATRICES", "weight matrices of a gated MLP / expert: gate, up, down (each hidden x intermediate)", "matrices")
ALLREDUCES_PER_LAYER = Const(2, "ALLREDUCES_PER_LAYER", "tensor parallelism all-reduces twice per layer, after attention and after the MLP (Megatron-LM, arXiv:1909.08053 s3)", "all-reduces/layer")
RING_ALLREDUCE_FACTOR = Const(2, "RING_ALLREDUCE_FACTOR", "a ring all-reduce sends 2 (TP-1)/TP of the message per GPU (reduce-scatter + all-gather)", "x")
EP_PASSES = Const(2, "EP_PASSES", "expert parallelism moves each token twice per MoE layer: dispatch to its experts and combine back (DeepEP; DeepSeek-V3 report arXiv:2412.19437 s3.2.2)", "passes")
DP_MLP_COLLECTIVES = Const(2, "DP_MLP_COLLECTIVES", "attention DP with the experts split over the stage (no EP all-to-all): each MoE layer all-gathers the DP ranks' tokens before the experts and reduce-scatters their output back (TensorRT-LLM _torch/modules/fused_moe: allgather under enable_attention_dp, reducescatter after run_moe; SGLang layers/dp_attention.py dp_gather / dp_scatter)", "collectives/layer")
ELEMENTWISE_NORM_ELEMENTS = Const(8, "ELEMENTWISE_NORM_ELEMENTS", "a layer's two residual-add + RMSNorm passes each read 2 x hidden elements (input and residual) and write 2 x hidden, on every TP rank (NVIDIA aiconfigurator-core 0.12.0's model ops add_norm_1 and add_norm_2: ElementWise dim_in = dim_out = 2h, bytes per token 2 x (dim_in + dim_out) in BF16)", "x hidden/layer")
ELEMENTWISE_GATE_ELEMENTS = Const(3, "ELEMENTWISE_GATE_ELEMENTS", "a dense layer's gated activation (SiLU-and-mul) reads gate and up, 2 x intermediate / TP elements, and writes intermediate / TP (aiconfigurator-core 0.12.0's act_gate op)", "x intermediate/layer")
VERDICT_MISSES = Const(2, "VERDICT_MISSES", "verdict code: fits at the requested concurrency but misses the TTFT or TPOT target", "code")
VERDICT_MEETS = Const(3, "VERDICT_MEETS", "verdict code: fits at the requested concurrency and meets the targets", "code")
# steady-state serving (inference_ledger.formulas.serving)
BATCHING_STATIC = Const(2, "BATCHING_STATIC", "batching code: static, one batch prefilled then decoded together (1 = continuous)", "code")
RAMP_MEAN_DIVISOR = Const(2, "RAMP_MEAN_DIVISOR", "the mean of a context growing by one token per step from S to S + T is S + T/2", "x")
MOE_SATURATION = Const(300, "MOE_SATURATION", "decades below 1 beyond which (1 - k/E)^tokens is left out: every routed expert is touched (E x 10^-300 missed), and the power is still a normal number above it (LibreOffice answers #NUM! below about 10^-308)", "decades")
LIMIT_NONE = Const(0, "LIMIT_NONE", "binding-limit code: nothing caps the requested concurrency (bandwidth-bound)", "code")
LIMIT_KV = Const(1, "LIMIT_KV", "binding-limit code: the KV cache holds fewer sequences than requested", "code")
LIMIT_MAX_NUM_SEQS = Const(2, "LIMIT_MAX_NUM_SEQS", "binding-limit code: the engine's max_num_seqs caps the batch", "code")
LIMIT_TPOT = Const(3, "LIMIT_TPOT", "binding-limit code: the batch runs but misses the TPOT target", "code")
LIMIT_COMPUTE = Const(4, "LIMIT_COMPUTE", "binding-limit code: the step is compute-bound (more sequences add little)", "code")
ADMISSION_ON_DEMAND = Const(0, "ADMISSION_ON_DEMAND", "KV-admission code: a request is admitted on its prompt (and a share of its output), running sequences are preempted when the cache runs out (vLLM, SGLang)", "code")
ADMISSION_NO_EVICT = Const(1, "ADMISSION_NO_EVICT", "KV-admission code: a request is admitted only when its whole S + T fits and is never evicted (TensorRT-LLM GUARANTEED_NO_EVICT)", "code")
KERNEL_GEMM_POWER = Const(2, "KERNEL_GEMM_POWER", "p of a GEMM's curve t(M) = (a^p + (r M)^p)^(1/p) between its measured floor a and its measured time per token r: fitted on the interior points (M 4-4,096, N and K >= 1,024) of every H100 GEMM table in data/kernels/gemm.csv (median |error| 5%, p 1.5-2.5 within 0.5 point)", "x")
ROUNDING_SHARE = Const(1e-12, "ROUNDING_SHARE", "the share of H^2 the kernel-table TPOT inverse's discriminant H^2 - A2 A0 loses to rounding: at a double root (a GPU without tables prices no GEMM curve, so H^2 = A2 A0) the difference of two nearly equal products is noise of about 10^-16 H^2, whose square root would move the batch by 10^-8 and differ between spreadsheet engines; discarding 10^-12 H^2 moves any batch by at most 10^-6", "x")
TINY_SECONDS_SQUARED = Const(1e-18, "TINY_SECONDS_SQUARED", "keeps the kernel-table TPOT inverse finite where every kernel figure is 0 (a GPU without tables); its terms are ~10^-6 s^2 or more", "s^2")
STEP_RESIDUAL_DIVISOR = Const(2, "STEP_RESIDUAL_DIVISOR", "a request arriving at a random moment waits on average half of the engine step already running (the mean residual of a fixed step), and half of a scheduler's cycle of reads (every I-th step: SGLang --scheduler-recv-interval)", "x")
STEPS_RUNNING_AT_ARRIVAL = Const(1, "STEPS_RUNNING_AT_ARRIVAL", "a closed-loop request sent when its predecessor's last token arrives finds the engine's next step already running (the engine loop reads new requests only between steps: vllm/v1/engine/core.py run_busy_loop) and waits for all of it", "steps")
# the concurrency a plan runs at (inference_ledger.graph.concurrency): which limit chose it
CONC_REQUESTED = Const(0, "CONC_REQUESTED", "concurrency reason code: the concurrency was given (requested), not chosen", "code")
CONC_KV = Const(1, "CONC_KV", "concurrency reason code: the largest the KV cache holds meets the targets", "code")
CONC_ENGINE = Const(2, "CONC_ENGINE", "concurrency reason code: the engine's batch limit (max_num_seqs x DP ranks) meets the targets", "code")
CONC_TPOT = Const(3, "CONC_TPOT", "concurrency reason code: the largest candidate meeting the TPOT target", "code")
CONC_TTFT = Const(4, "CONC_TTFT", "concurrency reason code: the largest candidate meeting the TTFT target", "code")
CONC_NONE = Const(5, "CONC_NONE", "concurrency reason code: no candidate meets the targets, so 1 is used", "code")
# finance (inference_ledger.formulas.finance)
MONTHS_PER_YEAR = Const(12, "MONTHS_PER_YEAR", "12 months in a year (with HOURS_PER_MONTH: 8760 h per year)", "month/year")
W_PER_KW = Const(1000, "W_PER_KW", "watts per kilowatt (power is billed per kW and kWh)", "W/kW")

#: Every constant, in the order the workbook lists them.
CONSTANTS: tuple[Const, ...] = (
    KV_FACTOR,
    FLOPS_PER_PARAM,
    BITS_PER_BYTE,
    BYTES_PER_GB,
    BYTES_PER_GIB,
    SECONDS_PER_MINUTE,
    SECONDS_PER_HOUR,
    SECONDS_PER_DAY,
    HOURS_PER_MONTH,
    DAYS_PER_MONTH,
    TOKENS_PER_MILLION,
    TP_BASE,
    MS_PER_S,
    US_PER_S,
    KV_RULE_VLLM,
    KV_RULE_SGLANG,
    KV_RULE_TRTLLM,
    ACT_HIDDEN_COPIES,
    ACT_MLP_COPIES,
    GLU_MATRICES,
    ALLREDUCES_PER_LAYER,
    RING_ALLREDUCE_FACTOR,
    EP_PASSES,
    DP_MLP_COLLECTIVES,
    ELEMENTWISE_NORM_ELEMENTS,
    ELEMENTWISE_GATE_ELEMENTS,
    VERDICT_MISSES,
    VERDICT_MEETS,
    BATCHING_STATIC,
    RAMP_MEAN_DIVISOR,
    KERNEL_GEMM_POWER,
    STEP_RESIDUAL_DIVISOR,
    STEPS_RUNNING_AT_ARRIVAL,
    ROUNDING_SHARE,
    TINY_SECONDS_SQUARED,
    MOE_SATURATION,
    LIMIT_NONE,
    LIMIT_KV,
    LIMIT_MAX_NUM_SEQS,
    LIMIT_TPOT,
    LIMIT_COMPUTE,
    ADMISSION_ON_DEMAND,
    ADMISSION_NO_EVICT,
    CONC_REQUESTED,
    CONC_KV,
    CONC_ENGINE,
    CONC_TPOT,
    CONC_TTFT,
    CONC_NONE,
    MONTHS_PER_YEAR,
    W_PER_KW,
)


def conversion(base: str, unit: str):
    """x in ``base`` -> x in ``unit``, by the named constant whose unit is base/unit (divide) or unit/base (multiply):
    conversion('s', 'min') is x / SECONDS_PER_MINUTE, so a Sym becomes a formula of the named cell. KeyError where
    no constant converts them."""
    for c in CONSTANTS:
        if c.unit == f"{base}/{unit}":
            return lambda x: x / c
        if c.unit == f"{unit}/{base}":
            return lambda x: x * c
    raise KeyError(f"no named constant converts {base} to {unit} (a unit {base}/{unit} or {unit}/{base})")


def gb(x: float) -> float:
    """bytes -> GB (1e9)."""
    return x / BYTES_PER_GB


def gib(x: float) -> float:
    """bytes -> GiB (2**30)."""
    return x / BYTES_PER_GIB
