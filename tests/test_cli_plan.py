"""`inference-ledger plan`, `models`, `gpus` through the real entry point (inference_ledger.cli.run)."""

from __future__ import annotations

import json

import pytest

from inference_ledger.cli import run
from inference_ledger.io import report
from inference_ledger.graph import verdict
from inference_ledger.catalogs.catalog import MODELS_DIR, load_gpus, load_models
from inference_ledger.graph.resolve import plan_inputs, with_engine
from inference_ledger.graph.plan import INPUTS, evaluate
from inference_ledger.cli.plan import option_name

from renders import opened

STABLE_KEYS = ("weights_bytes", "weights_bytes_per_gpu", "kv_bytes_per_token", "kv_bytes_per_token_per_gpu",
               "kv_bytes_per_gpu", "workspace_bytes_per_gpu", "total_bytes_per_gpu", "gpu_memory_bytes", "fits",
               "gpus_needed", "kv_capacity_tokens", "max_concurrency", "flops_request", "prefill_seconds",
               "tpot_floor_seconds", "tpot_seconds", "tokens_per_second_per_gpu", "cost_per_million_output_tokens")
GIB = 2**30


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        run(list(argv))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def plan_json(capsys, *argv: str) -> dict:
    code, out, err = cli(capsys, "plan", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_plan_by_name_json(capsys):
    d = plan_json(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--context", "4096",
                  "--concurrency", "16")
    for k in STABLE_KEYS:
        assert k in d, k
    # catalog facts and the ledger figures they drive, by hand
    n = 70_553_706_496
    assert (d["model"], d["gpu"], d["weight_dtype"], d["kv_dtype"]) == ("llama-3.1-70b", "h100-sxm", "bf16", "bf16")
    assert d["weights_bytes"] == 2 * n and d["weights_bytes_per_gpu"] == 2 * n / 4
    assert d["kv_bytes_per_token"] == 327_680 and d["kv_bytes_per_token_per_gpu"] == 81_920
    assert (d["input_tokens"], d["output_tokens"]) == (4096 - 512, 512)
    assert d["kv_bytes_per_gpu"] == 81_920 * 4096 * 16
    assert d["gpu_memory_bytes"] == 85_026_930_688 and d["hbm_bw"] == 3.35e12 and d["price_per_gpu_hour"] == 3.78
    assert d["total_bytes_per_gpu"] == 2 * n / 4 + 81_920 * 4096 * 16 + d["workspace_bytes_per_gpu"]
    assert d["fits"] is True and d["gpus_needed"] == 4
    assert d["max_concurrency"] == d["kv_capacity_tokens"] // 4096
    active = n - 128_256 * 8192  # every weight a token multiplies: all but the input embedding table
    assert d["active_params"] == active
    assert d["flops_request"] == 2 * active * 4096
    assert d["prefill_seconds"] == pytest.approx(2 * active * 3584 / (989e12 * 0.5 * 4))
    # the floor is priced at the context the decode steps see: S + T/2 = 3,584 + 256 = 3,840 tokens
    assert d["decode_context_tokens"] == 3840
    assert d["tpot_floor_seconds"] == pytest.approx((2 * active / 4 + 81_920 * 3840 * 16) / 3.35e12)  # bandwidth-bound
    # steady state (closed loop, 16 slots): 16 x 512 output tokens per TTFT + 511 steps
    tok_s = 16 * 512 / (d["ttft_service_seconds"] + 511 * d["tpot_seconds"])
    assert d["tokens_per_second_per_gpu"] == pytest.approx(tok_s / 4)
    assert d["cost_per_million_output_tokens"] == pytest.approx(3.78 * 4 / (tok_s * 3600) * 1e6)
    assert d["units"]["weights_bytes"] == "B" and d["units"]["tpot_seconds"] == "s"
    # the command is the library: same numbers as evaluate(plan_inputs(...)) through plan_json
    ref = report.plan_json(evaluate(with_engine(
        plan_inputs("llama-3.1-70b", "h100-sxm", tp=4, concurrency=16, input_tokens=3584), "vllm", gpu_id="h100-sxm")),
                           model="llama-3.1-70b", gpu="h100-sxm", weight_dtype="bf16", kv_dtype="bf16", engine="vllm")
    # the concurrency was given, so it is used as given ("requested"), the plan otherwise the plain evaluation
    assert (d.pop("concurrency_used"), d.pop("concurrency_reason"), d.pop("concurrency_reason_words")) == \
        (16, 0, "requested")
    assert d == json.loads(json.dumps(ref))


def test_plan_config_fp8_json(capsys, tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_bytes((MODELS_DIR / "llama-3.1-70b.json").read_bytes())
    d = plan_json(capsys, "--config", str(cfg), "--gpu", "h100-sxm", "--tp", "2", "--weight-dtype", "fp8",
                  "--kv-dtype", "fp8", "--gpu-memory-utilization", "0.95")
    q = 80 * (8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672)
    assert d["model"] == "cfg" and d["weight_dtype"] == "fp8"
    assert d["weights_bytes"] == q + (70_553_706_496 - q) * 2
    assert d["kv_bytes_per_token"] == 327_680 / 2 and d["peak_flops"] == 1979e12
    assert d["gpu_memory_utilization"] == 0.95


def test_explicit_numbers_with_units(capsys):
    d = plan_json(capsys, "--params", "70B", "--layers", "80", "--kv-heads", "8", "--head-dim", "128",
                  "--gpu-memory", "80GB", "--hbm-bw", "3.35TB/s", "--peak-flops", "989TFLOPS", "--tp", "4",
                  "--price-per-gpu-hour", "2", "--input-tokens", "1024", "--output-tokens", "512")
    assert d["model"] is None and d["gpu"] is None
    assert d["num_params"] == d["active_params"] == 70e9  # a plain size is all active
    assert d["weights_bytes"] == 140e9 and d["gpu_memory_bytes"] == 80e9
    assert d["hbm_bw"] == 3.35e12 and d["peak_flops"] == 989e12
    assert d["flops_request"] == 2.1504e14  # the seed's (70e9, 1024, 512)
    assert plan_json(capsys, "--gpu-memory", "79.1875GiB")["gpu_memory_bytes"] == 85_026_930_688


def test_explicit_numbers_override_the_catalog(capsys):
    d = plan_json(capsys, "--model", "qwen2.5-7b", "--gpu", "h100-sxm", "--hbm-bw", "4e12", "--kv-heads", "8",
                  "--price-per-gpu-hour", "1.5")
    assert d["hbm_bw"] == 4e12 and d["kv_bytes_per_token"] == 2 * 28 * 8 * 128 * 2 and d["price_per_gpu_hour"] == 1.5


def test_table_has_ledgers_and_labelled_units(capsys):
    code, out, err = cli(capsys, "plan", "--model", "llama-3.1-70b", "--gpu", "H100", "--tp", "4")
    assert code == 0, err
    for section in ("[memory ledger]", "[compute ledger]", "[bandwidth ledger]", "[cost ledger]", "[fit ledger]"):
        assert section in out
    assert "Llama-3.1-70B on 4 x NVIDIA H100 SXM5 80GB" in out
    assert "141.11 GB (131.42 GiB)" in out  # weights: 141,107,412,992 B
    assert "327,680 B/token" in out and " ms " in out and "TFLOP" in out


@pytest.mark.parametrize("args, unfit", [(("--model", "llama-3.1-405b", "--gpu", "l4", "--tp", "1"), True), ((), False)])
def test_a_plan_that_does_not_fit_says_so_over_its_fleet_ledgers(capsys, args, unfit):
    """The sentences say 'No fleet' and 'No bill' for a 405B model on one L4; the table below them gave its cost ledger
    ($20,252,120/month for 34,713 GPUs) without a word. The fleet's ledgers say no fleet runs their figures."""
    code, out, err = cli(capsys, "plan", *args)
    assert code == 0, err
    titles = [line for line in out.splitlines() if line.startswith("[") and " ledger" in line]
    said = [t for t in titles if t.endswith(f"{verdict.NO_FLEET}]")]
    assert [t.split(" ledger")[0][1:] for t in said] == (list(verdict.FLEET_LEDGERS) if unfit else [])
    assert "[memory ledger]" in titles and "[compute ledger]" in titles


def test_the_json_and_plan_of_a_plan_that_does_not_fit_have_no_fleet_figures(capsys):
    """405B BF16 on one L4: 810 GB of weights on a 24 GB card. Its JSON gave a bill ($20 million a month for 34,713
    GPUs) that no fleet can run, with nothing beside the number to say so; a script reading monthly_cost_qps took it.
    Its bills (money, fleet sizes, what reads them, the forecast) are now null there and #N/A from the Excel function,
    as a sweep row shows "does not fit" in those cells; what one GPU and one step are (weights, TPOT, the GPU's power
    and prices) keep their numbers."""
    from udfs import excel

    unfit, fits = ("--model", "llama-3.1-405b", "--gpu", "l4", "--tp", "1"), ()
    docs = {}
    for name, args in (("unfit", unfit), ("fits", fits)):
        code, out, err = cli(capsys, "plan", *args, "--json")
        assert code == 0, err
        docs[name] = json.loads(out)
    bad, good = docs["unfit"], docs["fits"]
    assert bad["verdict_words"] == "does not fit" and good["verdict_words"] != "does not fit"
    fleet = ("gpus_for_qps", "replicas_for_qps", "servers_for_qps", "monthly_cost_qps", "monthly_cost",
             "cost_per_million_output_tokens", "owned_monthly_cost_qps", "gpus_for_qps_low", "monthly_cost_qps_high",
             "forecast_months", "sensitivity", "qps_headroom")
    for key in fleet:
        assert key in bad and bad[key] is None, key
        assert good[key] is not None, key
    # 405,853,388,800 parameters x 2 B on one GPU; one step and one GPU's own figures stay
    assert bad["weights_bytes_per_gpu"] == pytest.approx(2 * 405_853_388_800, rel=0.01)
    for key in ("tpot_seconds", "power_kw_per_gpu", "price_per_gpu_hour", "owned_cost_per_gpu_hour"):
        assert isinstance(bad[key], (int, float)), key
    assert excel.PLAN("llama-3.1-405b", "l4", "monthly_cost_qps", 1) == \
        [["#N/A no monthly_cost_qps: the plan does not fit, so no replica starts"]]
    assert excel.PLAN("llama-3.1-405b", "l4", "tpot_seconds", 1)[0][0] == pytest.approx(bad["tpot_seconds"])
    assert excel.PLAN("llama-3.1-70b", "h100-sxm", "monthly_cost_qps")[0][0] == pytest.approx(good["monthly_cost_qps"])


def test_the_table_shows_every_input_the_json_has(capsys):
    """The table's input groups were a hand-written list without the engine's and the kernel tables' inputs, so
    chunked prefill, CUDA graphs and every measured kernel figure were in --json but not in the table."""
    code, out, err = cli(capsys, "plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm")
    assert code == 0, err
    keys = {line.split()[-1] for line in out.splitlines() if line.startswith("  ")}
    assert {i.name for i in INPUTS} - keys == set()
    assert "[inputs: engine]" in out and "[inputs: kernel]" in out
    # a kernel floor in microseconds and a time per token in nanoseconds, never "0.00 ms"
    assert " µs  qkv_kernel_floor_seconds" in out and " ns  qkv_kernel_seconds_per_token" in out
    assert "fused-MoE table (1)" in out and " code " not in out


@pytest.mark.parametrize("option, text, said", [
    # a switch or a code has no unit: "'maybe' is not a number in 1/0 (suffixes: 1/0)" named none that helps
    ("--chunked-prefill", "maybe", "'maybe' is not 1 (on) or 0 (off)"),
    ("--gqa-decode", "x", "'x' is not a code number"),
    # a code with words lists them with their numbers ("is not a number in code (suffixes: code); or one of ...")
    ("--batching", "maybe", "'maybe' is not one of continuous (1), static (2)"),
    ("--kernel-tables", "maybe", "'maybe' is not one of measured tables (1), roofline fallback (0)"),
])
def test_a_switch_or_a_code_that_is_not_one_says_what_it_takes(capsys, option, text, said):
    code, out, err = cli(capsys, "plan", option, text)
    assert code == 2 and f"Invalid value for '{option}': {said} (see" in err, err


def test_help_lists_every_input(capsys):
    code, out, _ = cli(capsys, "plan", "--help")
    assert code == 0
    flat = " ".join(out.split())
    for i in INPUTS:
        assert option_name(i) in flat, i.name
    assert "--model" in flat and "--config" in flat and "--json" in flat


@pytest.mark.parametrize("command", ["plan", "recommend"])
def test_every_command_takes_the_targets_under_both_spellings(capsys, command):
    """`recommend --qps 7 --ttft 0.4 --tpot 0.03` and `plan --target-qps 7 ...` name the same targets: each command
    takes both spellings, and the JSON's targets are the numbers typed under either."""
    head = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"]
    got = []
    for spelling in (("--qps", "--ttft", "--tpot"), ("--target-qps", "--ttft-target", "--tpot-target")):
        code, out, err = cli(capsys, command, *head, *(x for opt, v in zip(spelling, ("7", "0.4", "0.03"))
                                                       for x in (opt, v)))
        assert code == 0, err
        d = json.loads(out)
        got.append(d["targets"] if command == "recommend" else {k: d[n] for k, n in
                                                               (("qps", "target_qps"), ("ttft", "ttft_target"),
                                                                ("tpot", "tpot_target"))})
    assert got[0] == got[1] == {"qps": 7, "ttft": 0.4, "tpot": 0.03}


@pytest.mark.parametrize("argv, needle", [
    (("plan", "--bogus"), "No such option"),
    (("plan", "--tp", "0"), "tp must be"),
    (("plan", "--gpu-memory", "80XB"), "not a number in B"),
    (("plan", "--model", "llama-3.1-8b", "--config", str(MODELS_DIR / "llama-3.1-8b.json")), "not both"),
    (("plan", "--config", "no-such-config.json"), "no-such-config.json"),
    (("plan", "--context", "100", "--output-tokens", "512"), "must exceed"),
    (("plan", "--context", "4096", "--input-tokens", "100"), "not both"),
])
def test_usage_errors_exit_2_one_line(capsys, argv, needle):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("inference-ledger: error:") and needle in err


@pytest.mark.parametrize("argv, needle", [
    (("plan", "--gpu", "h10"), "unknown GPU 'h10': did you mean h100-sxm"),
    (("plan", "--model", "llama-3.1-7b"), "did you mean llama-3.1-70b"),
    (("plan", "--weight-dtype", "fp9"), "did you mean fp8"),
])
def test_unknown_ids_exit_2_with_suggestions(capsys, argv, needle):
    code, _, err = cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and needle in err


@pytest.mark.parametrize("content, needle", [
    ("", "empty"),
    ("{not json", "not JSON"),
    ('{"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}', "missing field 'num_hidden_layers'"),
    ('{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8,'
     ' "quantization_config": {"quant_method": "hqq"}}', "unsupported quantization_config.quant_method 'hqq'"),
])
def test_bad_config_one_line(capsys, tmp_path, content, needle):
    p = tmp_path / "config.json"
    p.write_text(content)
    code, _, err = cli(capsys, "plan", "--config", str(p))
    assert code == 2 and err.count("\n") == 1 and needle in err


def test_models_and_gpus_one_line_each(capsys):
    code, out, _ = cli(capsys, "models")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == len(load_models())
    line = next(l for l in lines if l.startswith("llama-3.1-70b "))
    assert "70.55B params" in line and "KV 327,680 B/token" in line and "verbatim" in line
    code, out, _ = cli(capsys, "gpus")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == len(load_gpus())
    line = next(l for l in lines if l.startswith("h100-sxm "))
    assert "80 GB (79.19 GiB runtime)" in line and "3.35 TB/s" in line and "BF16 989 / FP8 1,979 TFLOP/s dense" in line
    code, out, _ = cli(capsys, "gpus", "--json")
    assert json.loads(out)[0]["id"] == "a100-40gb"


def test_engines_one_line_each_and_what_engine_takes(capsys):
    code, out, _ = cli(capsys, "engines")
    lines = out.strip().splitlines()
    assert code == 0 and [l.split()[0] for l in lines][:3] == ["vllm", "vllm-0.12", "vllm-0.9"]
    # vLLM 0.7 (V0): chunked prefill was off by default for the OpenAI server (engines.csv cites SchedulerConfig)
    v07 = next(l for l in lines if l.startswith("vllm-0.7 "))
    assert "no chunked prefill" in v07 and "max_num_seqs 256" in v07 and "also vllm-v0" in v07
    code, out, _ = cli(capsys, "engines", "--json")
    assert {"vllm", "sglang", "trtllm"} <= {e["id"] for e in json.loads(out)}
    # an unknown one: one line naming --engine, the families and where the versions are listed (not 60 aliases)
    for command in ("plan", "recommend", "sweep"):
        args = ("-o", "never-written.csv") if command == "sweep" else ()
        code, _, err = cli(capsys, command, "--engine", "vllm-9.9", *args)
        assert code == 2 and err.count("\n") == 1, (command, err)
        assert "'--engine'" in err and "vllm, sglang, trtllm" in err and "inference-ledger engines" in err
        assert "tensorrt-llm" not in err
    # ids and aliases still work, case-insensitive
    assert cli(capsys, "plan", "--engine", "SGLang-0.4")[0] == 0


@pytest.mark.parametrize("model,tp,why", [
    ("llama-3.1-70b", "3", "TP 3 does not divide the 64 attention heads"),
    ("qwen2.5-7b", "8", "TP 8 does not divide the 28 attention heads"),
    ("llama-2-7b", "6", "TP 6 does not divide the 32 attention heads"),
])
def test_plan_refuses_a_tp_that_cannot_split_the_heads(capfd, model, tp, why):
    with pytest.raises(SystemExit) as e:
        run(["plan", "--model", model, "--gpu", "h100-sxm", "--tp", tp])
    err = capfd.readouterr().err
    assert e.value.code == 2 and why in err and err.count("\n") == 1


def test_plan_accepts_replicated_kv_heads():
    # 8 KV heads over TP 16: each head on two GPUs (64 attention heads still divide)
    from inference_ledger.catalogs.catalog import get_model
    from inference_ledger.graph.resolve import heads_problem
    assert heads_problem(get_model("llama-3.1-70b"), 16) is None
    assert heads_problem(get_model("deepseek-v3"), 8) is None  # MLA latent: not split


def test_plan_batching_static_and_continuous(capsys):
    out = {}
    for word in ("continuous", "static"):
        code, text, _ = cli(capsys, "plan", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4",
                            "--batching", word, "--concurrency", "16", "--json")
        assert code == 0
        out[word] = json.loads(text)
    assert (out["continuous"]["batching"], out["static"]["batching"]) == (1, 2)
    assert out["static"]["batching_words"] == "static" and out["static"]["prefill_tokens_per_step"] == 0
    # 15 other sequences x 1,024 / 512 prompt tokens mixed into each continuous step
    assert out["continuous"]["prefill_tokens_per_step"] == 30
    assert out["continuous"]["binding_limit_words"].startswith("none")
    code, _, err = cli(capsys, "plan", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--batching", "bursty")
    assert code == 2 and "--batching" in err


def test_a_bare_plan_is_the_default_deployment_the_workbook_opens_on(capsys, workbooks):
    """Nothing said of the model or the GPU: the default catalog model on the default GPU (llama-3.1-70b on an
    h100-sxm), kernel tables and all, the same numbers as naming them, and as the default workbook's cached cells;
    numbers of one's own still describe a generic model (all parameters active, no kernel tables keyed by a model)."""
    bare = plan_json(capsys)
    named = plan_json(capsys, "--model", "llama-3.1-70b", "--gpu", "h100-sxm")
    assert bare["model"] == "llama-3.1-70b" and bare["gpu"] == "h100-sxm"
    assert bare["kernel_source"] == "measured tables"
    for key in ("total_bytes_per_gpu", "tpot_seconds", "ttft_seconds", "tokens_per_second", "gpus_for_qps"):
        assert bare[key] == named[key], key
    path, _ = workbooks()
    wb = opened(path, data_only=True, sheets=["Memory"])
    dest = next(iter(wb.defined_names["total_bytes_per_gpu"].destinations))
    assert wb[dest[0]][dest[1].replace("$", "")].value == pytest.approx(bare["total_bytes_per_gpu"], rel=1e-9)
    generic = plan_json(capsys, "--params", "7e9")
    assert generic["model"] is None and generic["active_params"] == 7e9
    # its shapes are the defaults' (the 70B's), so the 70B's measured GEMMs would have priced a 7B step (it ran at
    # the 70B's 3,839 tokens/s): the roofline prices it from its own bytes
    assert generic["kernel_source"] == "roofline fallback"
    assert generic["tokens_per_second"] > 2 * bare["tokens_per_second"]


def test_build_takes_a_model_given_by_its_numbers_as_plan_does(capsys):
    """`build --params 8B` was refused ("active_params must be <= num_params": the workbook put 8B on the default
    70B's row and kept its 70B active) where `plan --params 8B` plans an 8B model, all of it active.  The workbook
    opens on the default model's row with the numbers as overrides, sized as a model of numbers: the same plan."""
    from inference_ledger.workbook.build import make_context

    ctx = make_context(num_params=8e9)
    assert ctx.choice["model"] == "llama-3.1-70b"
    assert ctx.inputs["active_params"] == ctx.inputs["quantized_params"] == 8e9
    assert ctx.inputs["active_quantized_params"] == 8e9
    plan = plan_json(capsys, "--params", "8B")
    for key in ("total_bytes_per_gpu", "tpot_seconds", "ttft_seconds", "tokens_per_second", "gpus_for_qps"):
        assert ctx.values[key] == pytest.approx(plan[key], rel=1e-12), key
    assert ctx.values["kernel_priced"] == 0   # the 70B's tables are not read at an 8B model's size
    # a model named keeps its own sizes: 8B of a 70B is still refused, naming the rule
    code, _, err = cli(capsys, "plan", "--model", "llama-3.1-70b", "--params", "8B")
    assert code == 2 and "active_params must be <= num_params" in err


def test_a_placeholder_price_is_said_among_the_sentences(capsys):
    """MI355X's catalog price is a placeholder (its price_source says so): `plan` says every cost rests on it; H100's
    is a listed price, and a price given on the command line is the user's."""
    args = ("--model", "llama-3.1-8b", "--gpu", "mi355x", "--tp", "1")
    code, out, err = cli(capsys, "plan", *args)
    assert code == 0, err
    said = out.split("\n\n")[0].splitlines()[-1]   # the last of the sentences, before the table
    assert said == ("Price: $2.50 per GPU-hour is a placeholder (no public list price for mi355x): every cost here "
                    "rests on it; give the price you pay (--price-per-gpu-hour, or the Plan sheet's override)."), said
    code, out, _ = cli(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    assert code == 0 and "placeholder" not in out
    code, out, _ = cli(capsys, "plan", *args, "--price-per-gpu-hour", "3")
    assert code == 0 and "placeholder" not in out
