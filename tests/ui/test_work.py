"""A page's work estimated before it runs (ui/work.py): token times exact, iterations close to
what the engine takes, and the tiers and limits that follow."""

import pytest

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import POLICIES, Limits, get_policy
from sim.serving.workloads import burst, poisson, seed_scenario
from ui import work
from ui.work import Work, caps_decodes, estimate_iterations, fuses, tier, too_big, trace_tokens

H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "roofline")
MI300 = CostModel(get_gpu("mi300x"), get_model("qwen2.5-7b"), "simple")
L4 = CostModel(get_gpu("l4"), get_model("qwen2.5-7b"), "simple")

# (workload, cost, budget): dense and sparse arrivals, bursts beside decoders, KV-bound GPUs,
# budgets below and above the decodes, long and short prompts
CASES = [
    (poisson(200, 1000, prompt=512, output=256, seed=1), H100, 2048),
    (poisson(200, 0.05, prompt=256, output=300, seed=2), H100, 576),        # no two overlap
    (poisson(300, 4, lengths="sharegpt", seed=3), MI300, 512),
    (poisson(300, 50, lengths="uniform", prompt=4096, output=512, seed=4), L4, 256),
    (burst(20, 8192, 32, 64, 4000, 256), H100, 576),
    (burst(5, 32768, 32, 512, 100, 256), MI300, 8192),
    (seed_scenario(64, 4000, 8192), H100, 64),                              # budget = decodes
    (poisson(100, 1000, prompt=100, output=2000, seed=5), MI300, 16),       # decodes fill it
]


@pytest.mark.parametrize("workload, cost, budget", CASES)
@pytest.mark.parametrize("policy", list(POLICIES))
def test_the_estimate_is_within_3x_of_the_engines_iterations(workload, cost, budget, policy):
    spec = get_policy(policy)
    trace = simulate(workload, spec, cost, budget=budget, limits=Limits(max_seqs=1024))
    estimate = estimate_iterations(workload, spec, cost, budget=budget, max_seqs=1024)
    assert trace.iterations / 3 <= estimate <= 3 * trace.iterations, (trace.iterations, estimate)


@pytest.mark.parametrize("workload", [c[0] for c in CASES])
def test_token_times_are_exact(workload):
    trace = simulate(workload, get_policy("sarathi"), MI300, budget=4096, limits=Limits(max_seqs=1024))
    assert trace_tokens(workload) == len(trace.token_s)


def test_what_each_policy_does_is_asked_of_the_policy():
    assert {name: fuses(spec) for name, spec in POLICIES.items()} == {
        "sarathi": True, "vllm-v1": True, "orca": True, "sglang": False, "vllm-v0": False}
    assert [name for name, spec in POLICIES.items() if caps_decodes(spec)] == ["vllm-v1"]


def test_seconds_and_words_show_the_same_formula():
    w = Work(2, 100_000, 3_000_000) + Work(1, 20_000, 1_000_000)
    assert (w.runs, w.iterations, w.tokens) == (3, 120_000, 4_000_000)
    assert w.seconds == pytest.approx(120_000 * work.SECONDS_PER_ITERATION
                                      + 4_000_000 * work.SECONDS_PER_TOKEN)
    words = w.words()
    assert "3 runs" in words and "120,000 iterations" in words and "4,000,000 token times" in words
    assert f"**{w.seconds:.3g} s**" in words


def test_tiers_follow_the_estimated_seconds():
    def taking(seconds):
        return Work(1, round(seconds / work.SECONDS_PER_ITERATION), 0)

    assert tier(taking(work.NOW_SECONDS - 0.01)) == "now"
    assert tier(taking(work.NOW_SECONDS + 0.01)) == "button"
    assert tier(taking(work.BUTTON_SECONDS - 0.01)) == "button"
    assert tier(taking(work.BUTTON_SECONDS + 0.01)) == "refuse"


def test_a_run_over_its_limits_says_which_and_by_how_much():
    assert too_big(Work(1, work.RUN_ITERATIONS, work.RUN_TOKENS)) is None
    tokens = too_big(Work(1, 10, work.RUN_TOKENS + 1))
    assert f"{work.RUN_TOKENS + 1:,} token times" in tokens and f"{work.RUN_TOKENS:,}" in tokens
    estimated = too_big(Work(1, work.RUN_ITERATIONS + 1, 10))
    assert f"about {work.RUN_ITERATIONS + 1:,} iterations (estimated)" in estimated
    # a run that stopped at the cap needs more than the cap: over the limit, said as "more than"
    seen = too_big(Work(1, 10, 10).more_than(work.RUN_ITERATIONS))
    assert f"more than {work.RUN_ITERATIONS:,} iterations" in seen
    assert too_big(Work(1, 10, 10).more_than(work.RUN_ITERATIONS - 1)) is None


def test_what_a_capped_run_saw_only_raises_the_estimate():
    w = Work(1, 1000, 5)
    assert w.more_than(10) is w
    assert w.more_than(5000) == Work(1, 5000, 5, seen=True)


def test_the_time_limits_leave_room_for_an_estimate_off_by_two():
    assert work.NOW_DEADLINE_S == 2 * work.NOW_SECONDS < work.PAGE_SECONDS
    assert work.BUTTON_DEADLINE_S == 2 * work.BUTTON_SECONDS
    assert work.RUN_TOKENS <= work.PAGE_TOKENS
