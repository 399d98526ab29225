"""A page's work estimated before it runs (ui/shell/work.py, from sim/effort/estimate.py's likely
estimate): token times exact, iterations close to what the engine takes, and the tiers and
limits that follow."""

import pytest

from sim.cost.iteration import CostModel
from sim.effort.estimate import ITEM_COSTS, Counts
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.policies import POLICIES, Limits, get_policy, lane_budget
from sim.serving.run import Run
from sim.serving.workloads import burst, poisson, textbook_scenario
from ui.shell import work
from ui.shell.work import NO_WORK, Work, run_work, tier, too_big, total

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
    (textbook_scenario(64, 4000, 8192), H100, 64),                              # budget = decodes
    (poisson(100, 1000, prompt=100, output=2000, seed=5), MI300, 16),       # decodes fill it
]


@pytest.mark.parametrize("workload, cost, budget", CASES)
@pytest.mark.parametrize("policy", list(POLICIES))
def test_the_estimate_is_within_3x_of_the_engines_iterations(workload, cost, budget, policy):
    spec = get_policy(policy)
    run = Run(workload=workload, policy=spec, cost=cost, limits=Limits(max_seqs=1024),
              budget=lane_budget(spec, workload, budget))   # vLLM V0 refuses a budget below a prompt
    trace = run.simulate()
    estimate = run_work(run)
    assert trace.iterations / 3 <= estimate.iterations <= 3 * trace.iterations, \
        (trace.iterations, estimate.iterations)


@pytest.mark.parametrize("workload", [c[0] for c in CASES])
def test_token_times_are_exact(workload):
    run = Run(workload=workload, policy=get_policy("sarathi"), cost=MI300, budget=4096,
              limits=Limits(max_seqs=1024))
    assert run_work(run).tokens == len(run.simulate().token_s)


def work_of(runs=1, iterations=0, tokens=0, **counts) -> Work:
    return Work(Counts(runs=runs, iterations=iterations, tokens=tokens, **counts))


def test_seconds_and_words_show_the_same_formula():
    w = total([work_of(2, 100_000, 3_000_000, requests=500), work_of(1, 20_000, 1_000_000)])
    assert (w.runs, w.iterations, w.tokens) == (3, 120_000, 4_000_000)
    iterations_s = 120_000 * ITEM_COSTS["iterations"].seconds
    tokens_s = 4_000_000 * ITEM_COSTS["tokens"].seconds
    rest_s = 3 * ITEM_COSTS["runs"].seconds + 500 * ITEM_COSTS["requests"].seconds
    assert w.seconds == pytest.approx(iterations_s + tokens_s + rest_s)
    words = w.words()
    assert words.startswith("3 runs, about 120,000 iterations × 8 µs + 4,000,000 token times × "
                            "100 ns + ")
    assert f"{rest_s * 1e3:.4g} ms for the requests" in words
    assert words.endswith(f"= **{w.seconds:.3g} s**")
    assert total([]) == NO_WORK and NO_WORK.seconds == 0


def test_tiers_follow_the_estimated_seconds():
    def taking(seconds):
        return work_of(0, round(seconds / ITEM_COSTS["iterations"].seconds))

    assert tier(taking(work.NOW_SECONDS - 0.01)) == "now"
    assert tier(taking(work.NOW_SECONDS + 0.01)) == "button"
    assert tier(taking(work.BUTTON_SECONDS - 0.01)) == "button"
    assert tier(taking(work.BUTTON_SECONDS + 0.01)) == "refuse"


def test_a_run_over_its_limits_says_which_and_by_how_much():
    assert too_big(work_of(1, work.RUN_ITERATIONS, work.RUN_TOKENS)) is None
    tokens = too_big(work_of(1, 10, work.RUN_TOKENS + 1))
    assert f"{work.RUN_TOKENS + 1:,} token times" in tokens and f"{work.RUN_TOKENS:,}" in tokens
    estimated = too_big(work_of(1, work.RUN_ITERATIONS + 1, 10))
    assert f"about {work.RUN_ITERATIONS + 1:,} iterations (estimated)" in estimated
    # a run that stopped at the cap needs more than the cap: over the limit, said as "more than"
    seen = too_big(work_of(1, 10, 10).more_than(work.RUN_ITERATIONS))
    assert f"more than {work.RUN_ITERATIONS:,} iterations" in seen
    assert too_big(work_of(1, 10, 10).more_than(work.RUN_ITERATIONS - 1)) is None


def test_what_a_capped_run_saw_only_raises_the_estimate():
    w = work_of(1, 1000, 5, window_iterations=1000)
    assert w.more_than(10) is w
    assert w.more_than(5000) == work_of(1, 5000, 5, window_iterations=5000).more_than(5000)
    assert w.more_than(5000).seen and w.more_than(5000).seconds > w.seconds


def test_a_deadline_leaves_room_for_the_runs_token_times():
    w = work_of(1, 10, 1_000_000)
    rest_s = ITEM_COSTS["runs"].seconds + 1_000_000 * ITEM_COSTS["tokens"].seconds
    assert w.iterations_in(rest_s + 1.0) == int(1.0 / ITEM_COSTS["iterations"].seconds)
    assert w.iterations_in(rest_s / 2) == 0


def test_the_time_limits_leave_room_for_an_estimate_off_by_two():
    assert work.NOW_DEADLINE_S == 2 * work.NOW_SECONDS < work.PAGE_SECONDS
    assert work.BUTTON_DEADLINE_S == 2 * work.BUTTON_SECONDS
    assert work.RUN_TOKENS <= work.PAGE_TOKENS
