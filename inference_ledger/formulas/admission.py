"""KV admission above the KV capacity, as formulas: how much of a request's context the scheduler reserves when it
admits it, and what a benchmark then measures.

Written with the :mod:`inference_ledger.core.expr` helpers like :mod:`inference_ledger.formulas.serving` (each
function computes on numbers or numpy arrays and renders to one Excel formula); the plan lines are in
:mod:`inference_ledger.formulas.serving_lines`.

* **Admission.**  A scheduler admits a request when the KV blocks of S + reserve x T tokens are free
  (:func:`admission_context`); the reserve is an engine trait of ``inference_ledger/data/engines.csv``
  (``kv_admission_reserve``): 1 for TensorRT-LLM's default GUARANTEED_NO_EVICT, 0 for vLLM, SGLang's decayed
  new_token_ratio.
* **Running and admitted.**  The running set B is what the KV cache holds at full context S + T (the effective
  concurrency, as before); D = min(C, KV / admission context, max_num_seqs) requests are past their first token
  (``decode_requests``), the D - B beyond the running set preempted and waiting to resume.  Throughput is B's: a
  preempting engine's measured throughput stays at or below the full-context bound (dennislee22, Qwen2.5-7B on an
  A100 at gpu_memory_utilization 0.25, 75-500 clients: 2,058-2,170 output tokens/s against the bound's 2,360), so
  the planner's sizing (``qps_per_replica``, ``gpus_for_qps``) reserves and prices B and never counts on preemption.
* **What a benchmark sees.**  D requests share B tokens a step: TPOT x D / B (:func:`benchmark_tpot_seconds`), and
  only C - D clients wait for a first token (:func:`inference_ledger.formulas.serving.queue_seconds`), which keeps
  the closed loop C = QPS x (TTFT + (T - 1) x TPOT) (Little's law) with the same QPS.
"""

from __future__ import annotations

from inference_ledger.core.codes import Codes
from inference_ledger.core.sheetfuncs import ge, where
from inference_ledger.core.units import ADMISSION_NO_EVICT, ADMISSION_ON_DEMAND

#: Which KV admission policy the engine runs (the line ``kv_admission_policy``).
#: (the words fit the cell beside the code; the line's note says what each policy does)
ADMISSION = Codes("kv_admission_policy", [(ADMISSION_ON_DEMAND, "on demand (preempts)"),
                                          (ADMISSION_NO_EVICT, "guaranteed no evict")])


def kv_admission_policy(kv_admission_reserve):
    """Which admission policy runs: guaranteed no evict where the whole output is reserved (reserve 1), else on
    demand (:func:`admission_context`)."""
    return where(ge(kv_admission_reserve, 1), ADMISSION_NO_EVICT, ADMISSION_ON_DEMAND)


def admission_context(input_tokens, output_tokens, kv_admission_reserve):
    """Tokens of KV a scheduler counts a request for when it admits it: S + r x T, r the share of the T output tokens
    it reserves up front (``kv_admission_reserve``, an engine trait of engines.csv).

    TensorRT-LLM's default capacity policy GUARANTEED_NO_EVICT schedules a request only when the blocks of its whole
    prompt + max_tokens are free (NVIDIA/TensorRT-LLM@fcd3f31682808ae56118ae43c1d7864a3a945e6f:
    tensorrt_llm/llmapi/llm_args.py, SchedulerConfig.capacity_scheduler_policy): r = 1, S + T.  vLLM's V1 scheduler
    admits a waiting request when ``allocate_slots`` finds blocks for its prompt tokens and lets the running ones grow;
    a running request that finds no block preempts the newest (``self.running.pop()``), which recomputes when it
    resumes (vllm-project/vllm@00024d314514900f361ad072af6931e403b7f589:vllm/v1/core/sched/scheduler.py,
    Scheduler.schedule): r = 0, S.  SGLang's PrefillAdder counts every running and new request at
    min(remaining max_new_tokens, CLIP_MAX_NEW_TOKENS) x new_token_ratio, a ratio that decays from 0.7 to
    0.7 x 0.14 = 0.098 (sgl-project/sglang@00550cd11b35def9d584bf761a1e32729c20a21d:
    python/sglang/srt/managers/schedule_policy.py, PrefillAdder; SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR in
    python/sglang/srt/environ.py) and that a retraction raises again.  1,024-token prompts with 1,024 outputs: 2,048
    tokens at r = 1, 1,024 at r = 0, 1,124.4 at r = 0.098."""
    return input_tokens + kv_admission_reserve * output_tokens


def benchmark_tpot_seconds(tpot_seconds, decode_requests, effective_concurrency):
    """TPOT as a benchmark measures it when the scheduler admits more requests than it can run at once.

    A request counts as decoding from its first token to its last, (latency - TTFT) / (T - 1) per token
    (vllm-project/vllm vllm/benchmarks/serve.py, calculate_metrics), preempted spells included.  The B sequences the
    KV cache runs at full context emit B tokens a step (a step of tpot_seconds); D requests share them, so by
    Little's law each request's token takes D / B steps: TPOT x D / B.  D = B where the scheduler reserves the whole
    context at admission (no eviction) or where every request runs."""
    return tpot_seconds * (decode_requests / effective_concurrency)
