"""The Long and short requests page's words: every sentence true of the two runs it speaks of.
Random mixes, loads and settings are run; each claim's numbers are recomputed from the traces
with numpy (not through `class_metrics`), its verb must match their direction as shown, and the
verdict must name whom the change helped and who paid by those directions."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.metrics import (
    ClassMetrics,
    Percentiles,
    class_metrics,
    head_of_line_waits,
    request_times,
    token_gaps,
)
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import MIXES, mixed
from sim.units import fmt_change, fmt_seconds, fmt_wait
from ui.under_load import long_short_words as words

COST = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "roofline")
ROWS = words.knob_rows(512, 4096, 256, {"vllm-v1": 8192, "sglang": 8192},
                       {"vllm-v1": "--max-num-batched-tokens", "sglang": "--chunked-prefill-size"})


def simulate(workload, x: words.Setting):
    return Run(workload=workload, policy=get_policy(x.policy), cost=COST, budget=x.budget,
               limits=x.limits(Limits())).simulate()


def by_hand(trace, workload, of: str, metric: str, p: str) -> float:
    """A class's percentile recomputed from the trace."""
    mine = workload.request_class == workload.classes.index(of)
    if metric == "ttft_s":
        values = request_times(trace).ttft_s[mine]
    elif metric == "hol_wait_s":
        values = head_of_line_waits(trace, workload.request_class)[mine]
    else:
        gaps, owner = token_gaps(trace)
        values = gaps[mine[owner]]
    values = values[~np.isnan(values)]
    return float(np.percentile(values, 50 if p == "p50" else 99))


def assert_true_of(said, verdict, before, after, workload):
    for claim in said:
        x, y = (by_hand(t, workload, claim.of, claim.metric, claim.p) for t in (before, after))
        assert (claim.before, claim.after) == pytest.approx((x, y), abs=1e-12)
        shown = fmt_wait if claim.metric == "hol_wait_s" else fmt_seconds   # no wait: "none"
        a, b = shown(x), shown(y)
        if a == b:
            assert claim.text.endswith("is none in both runs" if a == "none" else f"stays at {a}")
        else:
            verb = "falls from" if y < x else "rises from"
            assert claim.text.endswith(f"{verb} {a} to {b}")
    short_ttft, _, long_ttft, _ = said
    sooner, later = words.falls(short_ttft), words.rises(long_ttft)
    assert ("comes sooner" in verdict) == sooner
    assert ("later median" in verdict or "median first token comes later" in verdict) == later


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=st.sampled_from(list(MIXES)), qps=st.sampled_from([1.0, 4.0, 12.0]),
       seed=st.integers(0, 50), vary=st.sampled_from(["threshold", "mixedchunk", "budget"]))
def test_every_sentence_is_true_of_its_runs(mix, qps, seed, vary):
    workload = mixed(40, qps, MIXES[mix], seed=seed)
    short, long = words.short_and_long(workload)
    if short == long:
        return
    row = words.compared(vary, ROWS)
    before, after = simulate(workload, row.before), simulate(workload, row.after)
    said = words.claims(short, long, class_metrics(before, workload),
                        class_metrics(after, workload), row)
    assert_true_of(said, words.verdict(said), before, after, workload)
    assert row.flag in said[0].text and row.engine in said[0].text


def test_the_threshold_helps_the_chat_requests_and_the_documents_pay():
    """The known case: chat's p99 TTFT falls, the documents' median rises (so the sentences
    take both branches the random runs may miss)."""
    workload = mixed(200, 4.0, MIXES["chat+documents"], seed=0)
    row = words.compared("threshold", ROWS)
    before, after = simulate(workload, row.before), simulate(workload, row.after)
    said = words.claims("chat", "documents", class_metrics(before, workload),
                        class_metrics(after, workload), row)
    assert "falls from" in said[0].text and "rises from" in said[2].text
    assert words.verdict(said).startswith("The trade:")
    assert_true_of(said, words.verdict(said), before, after, workload)


def test_the_rows_change_one_knob_each_from_their_engines_base_run():
    assert [(r.engine, r.flag, r.values) for r in ROWS] == [
        ("vLLM V1", "--long-prefill-token-threshold", ("0", "256")),
        ("vLLM V1", "--max-num-batched-tokens", ("512", "4,096")),
        ("SGLang", "--enable-mixed-chunk", ("off", "on")),
        ("SGLang", "--chunked-prefill-size", ("512", "4,096"))]
    for r in ROWS:
        changed = [f for f in ("policy", "budget", "threshold", "mixed_chunk")
                   if getattr(r.before, f) != getattr(r.after, f)]
        assert len(changed) == 1 and r.before == words.Setting(r.before.policy, 512)
    assert {v: words.compared(v, ROWS).flag for v in ("threshold", "mixedchunk", "budget")} == {
        "threshold": "--long-prefill-token-threshold", "mixedchunk": "--enable-mixed-chunk",
        "budget": "--max-num-batched-tokens"}
    with pytest.raises(ValueError, match="the comparisons: threshold, mixedchunk, budget"):
        words.compared("nope", ROWS)


def test_short_and_long_are_the_classes_with_the_shortest_and_longest_prompts():
    assert words.short_and_long(mixed(100, 4.0, MIXES["chat+one-long"], seed=0)) == ("chat", "long")
    assert words.short_and_long(mixed(200, 4.0, MIXES["chat+documents"], seed=1)) == (
        "chat", "documents")
    # too few requests for a document: one class only, said by the page
    assert words.short_and_long(mixed(2, 4.0, MIXES["chat+documents"], seed=0)) == ("chat", "chat")


def test_a_table_cell_shows_both_runs_or_one_number_when_they_show_alike():
    assert words.arrow(1.0, 0.5) == "1 s → 500 ms"
    assert words.arrow(0.0230401, 0.02304) == "23.04 ms"
    assert fmt_change(0.0230401, 0.02304, ratio=False) == "stays at 23.04 ms"


def test_a_head_of_line_wait_of_nothing_reads_none_in_the_table_and_the_sentences():
    def metrics(wait: float) -> dict[str, ClassMetrics]:
        return {of: ClassMetrics(10, Percentiles.of([0.5]), Percentiles.of([0.02]),
                                 Percentiles.of([wait])) for of in ("chat", "documents")}
    column = words.percentile_rows("chat", "documents", metrics(0.0))
    assert column["chat: HOL wait p50"] == column["documents: HOL wait p99"] == "none"
    assert column["chat: TTFT p50"] == "500 ms"
    row = words.compared("threshold", ROWS)
    gone = words.claims("chat", "documents", metrics(0.12), metrics(0.0), row)[1]
    assert gone.text.endswith("falls from 120 ms to none")
    none = words.claims("chat", "documents", metrics(0.0), metrics(0.0), row)[1]
    assert none.text.endswith("is none in both runs")
