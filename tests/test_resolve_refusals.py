"""The same bad choice is refused with the same one-line message by every entry point
(plan, build, a Scenarios row, sweep, recommend, email and the Excel PLAN).

The message is the resolver's (inference_ledger.graph.resolve): each entry point may put its own
context around it (the option, the scenario row, "none of the N combinations can run"),
but the words are the same, on one line.
"""

from __future__ import annotations

import pytest

from inference_ledger.graph import resolve
from inference_ledger.core.args import LedgerInputError
from inference_ledger.cli import run
from udfs import excel

#: (case, model, gpu, tp, concurrency, context, layout); context = input + output tokens (output stays 512);
#: layout = the pp / ep / dp_attention given besides TP.
CASES = [
    ("unknown model", "llama-9000", "h100-sxm", 4, 16, 1536, {}),
    ("empty GPU", "llama-3.1-70b", "", 4, 16, 1536, {}),
    ("TP 3 for 64 heads", "llama-3.1-70b", "h100-sxm", 3, 16, 1536, {}),
    ("TP 16", "llama-3.1-70b", "h100-sxm", 16, 16, 1536, {}),
    ("context over max_position_embeddings", "llama-2-7b", "h100-sxm", 4, 16, 8192, {}),
    ("negative concurrency", "llama-3.1-70b", "h100-sxm", 4, -1, 1536, {}),
    ("PP over the layers", "llama-2-7b", "h100-sxm", 1, 16, 1536, {"pp": 40}),
    ("EP on a dense model", "llama-3.1-70b", "h100-sxm", 8, 16, 1536, {"ep": 2}),
    ("EP 3 for 256 experts", "deepseek-v3", "h100-sxm", 8, 16, 1536, {"ep": 3, "pp": 2}),
    ("EP 16 over a stage of 8", "deepseek-v3", "h100-sxm", 8, 16, 1536, {"ep": 16, "pp": 2}),
    ("DP attention on a dense model", "llama-3.1-70b", "h100-sxm", 4, 16, 1536, {"dp_attention": 2}),
    ("PP 0", "deepseek-v3", "h100-sxm", 8, 16, 1536, {"pp": 0}),
]
OUTPUT_TOKENS = 512


def _reference(model, gpu, tp, concurrency, context, layout) -> str:
    with pytest.raises(LedgerInputError) as e:
        resolve.resolve(model, gpu, context=context, numbers={"tp": tp, "concurrency": concurrency, **layout})
    message = str(e.value)
    assert message and "\n" not in message
    return message


def _cli(capsys, *argv) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        run([str(a) for a in argv])
    out = capsys.readouterr()
    return e.value.code, out.err


def _refused(code: int, err: str, message: str) -> None:
    assert code in (1, 2), err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], (message, err)


@pytest.mark.parametrize("case,model,gpu,tp,concurrency,context,layout", CASES, ids=[c[0] for c in CASES])
def test_every_entry_point_refuses_with_the_resolvers_message(case, model, gpu, tp, concurrency, context, layout,
                                                              tmp_path, capsys):
    message = _reference(model, gpu, tp, concurrency, context, layout)
    choice = ("--model", model, "--gpu", gpu, "--tp", tp,
              *(a for k, v in layout.items() for a in ("--" + k.replace("_", "-"), v)))

    # plan
    _refused(*_cli(capsys, "plan", *choice, "--concurrency", concurrency, "--context", context), message)
    # build
    _refused(*_cli(capsys, "build", "-o", tmp_path / "b.xlsx", *choice, "--concurrency", concurrency,
                   "--context", context), message)
    assert not (tmp_path / "b.xlsx").exists()
    # a Scenarios row (the Plan itself is the default, valid choice)
    rows = tmp_path / "rows.csv"
    rows.write_text("label,model,gpu,tp,concurrency,input_tokens,output_tokens" + "".join(f",{k}" for k in layout)
                    + f"\nbad,{model},{gpu},{tp},{concurrency},{context - OUTPUT_TOKENS},{OUTPUT_TOKENS}"
                    + "".join(f",{v}" for v in layout.values()) + "\n")
    _refused(*_cli(capsys, "build", "-o", tmp_path / "s.xlsx", "--scenarios", rows), message)
    # sweep
    _refused(*_cli(capsys, "sweep", *choice, "--concurrency", concurrency, "--context", context,
                   "-o", tmp_path / "w.csv"), message)
    # recommend (it chooses the concurrency itself: nothing to refuse there)
    if case != "negative concurrency":
        _refused(*_cli(capsys, "recommend", *choice, "--qps", 1, "--input-tokens", context - OUTPUT_TOKENS), message)
    # email (it builds the same workbook): refused before anything is written or sent
    _refused(*_cli(capsys, "email", "--to", "cfo@example.com", "--from", "me@example.com", "--eml", tmp_path / "m.eml",
                   "-o", tmp_path / "e.xlsx", *choice, "--concurrency", concurrency, "--context", context), message)
    assert not (tmp_path / "m.eml").exists() and not (tmp_path / "e.xlsx").exists()
    # =PLAN(...) in Excel: one error cell with the same words
    cell = excel.PLAN(model, gpu, "verdict", tp, concurrency, context - OUTPUT_TOKENS, OUTPUT_TOKENS, None, None, None,
                      *(layout.get(k) for k in ("pp", "ep", "dp_attention")))
    assert cell == [[f"#VALUE! {message}"]]


#: (model, gpu, layout, the setting the resolver's refusal names): each layout breaks one rule, stated by hand from
#: the model's config (Llama-3.1-70B: 64 attention heads, 8 KV heads, 80 layers, dense; DeepSeek-V3: 128 heads,
#: MLA, 61 layers, 256 routed experts) and an 8-GPU H100 node.
LAYOUTS = [
    ("llama-3.1-70b", "h100-sxm", {"tp": 16}, "tp"),              # over the 8-GPU node
    ("llama-3.1-70b", "h100-sxm", {"tp": 3}, "tp"),               # 64 % 3 attention heads
    ("llama-3.1-70b", "h100-sxm", {"pp": 81}, "pp"),              # 81 stages of 80 layers
    ("llama-3.1-70b", "h100-sxm", {"ep": 2}, "ep"),               # EP on a dense model
    ("llama-3.1-70b", "h100-sxm", {"dp_attention": 2}, "dp_attention"),
    ("llama-3.1-70b", "h100-sxm", {"redundant_experts": 8}, "redundant_experts"),
    ("deepseek-v3", "h100-sxm", {"tp": 8, "ep": 3}, "ep"),        # 256 % 3 experts
    ("deepseek-v3", "h100-sxm", {"tp": 2, "ep": 4}, "ep"),        # EP 4 over a stage of 2 GPUs
    ("deepseek-v3", "h100-sxm", {"tp": 8, "ep": 8}, None),        # runs
]


@pytest.mark.parametrize("model_id, gpu_id, layout, setting", LAYOUTS)
def test_the_checks_sheet_fails_the_rule_the_resolver_refuses(model_id, gpu_id, layout, setting):
    """The resolver's layout rules and the Checks sheet's rows are the same definitions: the first row that fails
    (in the resolver's order) names the setting the refusal names, and every row passes where the resolver runs it."""
    from inference_ledger.catalogs import catalog
    from inference_ledger.graph import rules
    from inference_ledger.workbook import checks

    m, g = catalog.get_model(model_id), catalog.get_gpu(gpu_id)
    lay = {"tp": 1, "pp": 1, "ep": 1, "dp_attention": 1, "redundant_experts": 0} | layout
    refused = resolve.tp_problem(m, g, lay["tp"])
    refused = ("tp", refused) if refused else resolve.layout_problem(m, lay["pp"], lay["ep"], lay["dp_attention"],
                                                                     lay["tp"], lay["redundant_experts"])
    assert (refused[0] if refused else None) == setting, refused
    values = lay | {"gpus_per_node": g.gpus_per_node, "attention_heads": m.num_attention_heads, "kv_heads": m.kv_heads,
                    "mla_latent_dim": m.mla_latent_dim, "num_layers": m.num_layers, "num_experts": m.num_experts,
                    "experts_per_token": m.experts_per_token, "moe_layers": m.moe_layers}
    every = (rules.NODE_RULE, *rules.HEADS_RULES, *rules.MODEL_RULES, *rules.LAYOUT_RULES)
    by_label = {r.label: r for r in every}
    rows = [c for c in checks.PLAN_INTEGRITY if c.label in by_label]
    assert len(rows) == len(by_label)
    failing = [c.label for c in rows if not c(values)]
    assert (by_label[failing[0]].option if failing else None) == setting, failing
    if refused:
        who = g.id if failing[0] == rules.NODE_RULE.label else m.id
        assert refused[1] == by_label[failing[0]].message(values, who)
