"""ui/under_load/overhead_words.py: every number the overhead strips' sentences name is the one the runs made
at that CPU time (simulated here, not read from the strip), and each sentence is the one its
regime calls for (a lane that does not move, one that does; a ratio that holds, rises or is
undefined)."""

import re
from dataclasses import replace

import pytest

from charts.overhead import budget_frame
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.metrics import request_times, token_gaps
from sim.serving.policies import Limits, get_policy, lane_budget
from sim.serving.run import Run
from sim.serving.workloads import textbook_scenario
from sim.studies.capacity import CapacityComparison, CapacityResult
from sim.studies.overhead import (
    BudgetHeadline,
    LaneHeadline,
    Level,
    Strip,
    lanes_headline,
    strip,
)
from sim.units import fmt_seconds
from ui.under_load.overhead_words import (
    _lanes_compared,
    budget_words,
    capacity_words,
    lanes_words,
    level_label,
)

SEED = textbook_scenario()
LIMITS = Limits(max_seqs=65)
TIME = r"\d[\d,.]* (?:s|ms|µs)"


def truth(policy: str, cost: CostModel, cpu_s: float) -> tuple[str, str]:
    """(longest stream wait, new request's TTFT) of a lane at `cpu_s`, as fmt_seconds shows them."""
    spec = get_policy(policy)
    trace = simulate(SEED, spec, cost.with_overhead(cpu_s), budget=lane_budget(spec, SEED, 576),
                     limits=LIMITS)
    gaps, owner = token_gaps(trace)
    return (fmt_seconds(float(gaps[trace.prefilled[owner]].max())),
            fmt_seconds(float(request_times(trace).ttft_s[-1])))


@pytest.mark.parametrize("setup, chunked", [
    ({"gpu": "illustrative", "model": "dense-8b", "mode": "simple"}, "sarathi"),
    ({"gpu": "h100-sxm", "model": "llama-3.1-8b", "mode": "calibrated"}, "vllm-v1"),
])
def test_each_lanes_sentence_names_the_runs_numbers_by_regime(setup, chunked):
    cost = CostModel(get_gpu(setup["gpu"]), get_model(setup["model"]), setup["mode"])
    policies = (get_policy("vllm-v0"), get_policy(chunked))
    found = strip(lanes_headline([Run(workload=SEED, policy=p, cost=cost,
                                      budget=lane_budget(p, SEED, 576), limits=LIMITS)
                                  for p in policies]), cost)
    said = lanes_words(found, [(p.engine, p.overhead) for p in policies])
    assert len(said) == 3
    for sentence, policy in zip(said, policies):
        runs = [truth(policy.name, cost, level.cpu_s) for level in found.levels]
        times = re.findall(TIME, sentence.split("CPU per iteration")[-1])
        if "do not move" in sentence:        # an overlapped lane the overhead never reaches
            assert policy.overhead.overlapped and len(set(runs)) == 1
            assert times == ["10 ms", *runs[0]]   # "longer on the GPU than 10 ms", then the lane's
        else:
            assert times == [w for w, _ in runs] + [t for _, t in runs]
            assert len(set(runs)) == 3
    assert said[2].startswith("At every level chunking keeps")


def comparison(ours: float, theirs: float) -> CapacityComparison:
    def result(name, qps):
        return CapacityResult(name, 512, qps, None, 10.0, (), "")
    return CapacityComparison(result("sarathi", ours), result("vllm-v0", theirs),
                              ours / theirs if theirs else None)


def levels(*results) -> Strip:
    return Strip(tuple(Level(name, cpu_s, r) for (name, cpu_s), r
                       in zip((("none", 0.0), ("measured", 4e-3), ("high", 10e-3)), results)),
                 4e-3)


def test_the_capacity_sentence_says_the_ratio_rises_holds_or_is_undefined():
    rising = capacity_words(levels(comparison(5, 2), comparison(5, 1.25), comparison(5, 0.8)))
    assert "5 / 5 / 5 requests/s and vllm-v0 2 / 1.25 / 0.8" in rising
    assert "a ratio of 2.50× / 4.00× / 6.25×. The ratio rises" in rising
    holding = capacity_words(levels(comparison(5, 2), comparison(4.9, 2), comparison(4.8, 2)))
    assert "2.50× / 2.45× / 2.40×, within 10% of each other" in holding
    zero = capacity_words(levels(comparison(5, 2), comparison(5, 1), comparison(5, 0)))
    assert "vllm-v0 2 / 1 / 0;" in zero and "the baseline sustains no rate tried" in zero
    cut = replace(comparison(5, 0), baseline=replace(comparison(5, 0).baseline,
                                                     cut_short="the search stopped at its cap"))
    unproved = capacity_words(levels(comparison(5, 2), comparison(5, 1), cut))
    assert "vllm-v0 2 / 1 / —;" in unproved and "vllm-v0: capacity undefined" in unproved


def test_the_budget_sentence_says_whether_the_recommendation_moves():
    sarathi = get_policy("sarathi")
    moving = budget_words(levels(*(BudgetHeadline(b, 0.04, 0.1) for b in (2048, 1024, 1024))),
                          sarathi.engine, sarathi.overhead)
    assert "recommended budget is 2,048 / 1,024 / 1,024. Every millisecond" in moving
    holding = budget_words(levels(*(BudgetHeadline(512, 0.04, 0.1),) * 3), sarathi.engine,
                           sarathi.overhead)
    assert "The recommended budget is 512 at each of 0 ms / 4 ms / 10 ms" in holding
    lost = budget_words(levels(BudgetHeadline(256, 0.04, 0.1), BudgetHeadline(128, 0.04, 0.1),
                               BudgetHeadline(None, float("nan"), float("nan"))),
                        sarathi.engine, sarathi.overhead)
    assert "256 / 128 / none. The budget moves with the overhead" in lost


def test_a_budget_that_misses_a_target_is_not_called_recommended():
    """Budget trade-off's default sweep at 10 ms: the recipe's 256 meets the TBT target but its
    p50 TTFT (4.77 s) misses the 3 s one; the strip names the miss and recommends nothing."""
    sarathi = get_policy("sarathi")
    found = levels(BudgetHeadline(576, 0.023, 2.05), BudgetHeadline(512, 0.024, 2.48),
                   BudgetHeadline(256, 0.020, 4.77, ("p50 TTFT 4.77 s > 3 s",)))
    said = budget_words(found, sarathi.engine, sarathi.overhead)
    assert "recommended" not in said
    assert "budget (the largest within the TBT target) is 576 / 512 / 256; at 10 ms, 256 misses " \
           "p50 TTFT 4.77 s > 3 s, and no budget swept meets every target." in said
    table = budget_frame(found, level_label)
    assert list(table["meets every target"]) == ["yes: recommended", "yes: recommended",
                                                 "no: p50 TTFT 4.77 s > 3 s"]
    held = budget_words(levels(*(BudgetHeadline(256, 0.02, 4.77, ("p50 TTFT 4.77 s > 3 s",)),) * 3),
                        sarathi.engine, sarathi.overhead)
    assert "recommended" not in held and held.count("misses p50 TTFT 4.77 s > 3 s") == 3


def test_lanes_whose_prompt_waited_for_every_stream_to_finish_say_so_not_that_overhead_sets_it():
    """On an L4 a 20,000-token prompt beside 7 streams waits 13.65 s, until the streams finish
    (their KV memory): both lanes' longest wait is a decode iteration, equal; the words say the
    prompt never ran beside the streams, with the queue wait the runs made."""
    l4 = CostModel(get_gpu("l4"), get_model("dense-8b"), "simple")
    waiting = textbook_scenario(decodes=7, prompt=20000)
    policies = (get_policy("vllm-v0"), get_policy("sarathi"))
    found = strip(lanes_headline([Run(workload=waiting, policy=p, cost=l4,
                                      budget=lane_budget(p, waiting, 576), limits=Limits(max_seqs=8))
                                  for p in policies]), l4)
    said = lanes_words(found, [(p.engine, p.overhead) for p in policies])[-1]
    queues = [fmt_seconds(float(request_times(simulate(
        waiting, policies[1], l4.with_overhead(level.cpu_s), budget=576,
        limits=Limits(max_seqs=8))).queue_s[-1])) for level in found.levels]
    assert f"waited {' / '.join(queues)} in both lanes" in said
    assert "until every stream had finished: no prompt iteration ran beside the streams" in said
    assert "overhead, not the prompt" not in said


def test_a_chunked_wait_not_below_the_unchunked_one_is_said_without_a_cause():
    def lanes(u, c):
        return (LaneHeadline("vllm-v0", u, 1.0), LaneHeadline("sarathi", c, 1.0))
    said = _lanes_compared(levels(lanes(0.3, 0.02), lanes(0.3, 0.3), lanes(0.3, 0.4)))
    assert said == ("At 4 ms / 10 ms of CPU per iteration the chunked lane's longest wait "
                    "(300 ms / 400 ms) is not below the unchunked lane's (300 ms / 300 ms).")


def test_the_page_own_level_is_marked():
    assert level_label(4e-3, 4e-3) == "4 ms (measured), as above"
    assert level_label(0.0, 4e-3) == "0 ms (no overhead)"
    assert level_label(10e-3, 0.0) == "10 ms (high)"
