"""A command's allowance (sim/effort/caps.py): caps keep a command's runs within it and give each
at least its likely iterations; effort over it is refused with the estimate and the remedy; an
account charges finished runs by their own counts and, handed to capacity's search as callbacks,
stops it before a run it cannot afford; the search stays above the lowest rate float arrival
times allow."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.cost.iteration import CostModel
from sim.effort.caps import (
    Allowance,
    CommandEffort,
    EffortTooLarge,
    RunAccount,
    combined,
    fmt_effort_bytes,
    fmt_effort_seconds,
)
from sim.effort.estimate import ITEM_COSTS, Counts, RunEstimate
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import Limits, get_policy
from sim.serving.trace_files import MAX_ARRIVAL_S
from sim.serving.workloads import poisson, textbook_scenario
from sim.studies.capacity import find_capacity, lowest_rate
from tests.support.runs import estimated

B200 = CostModel(get_gpu("b200"), get_model("dense-8b"))
CAPACITY_COST = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"))


# --- a command's caps -------------------------------------------------------------------------
def estimate(likely: int, bound: int, cap: int = 5_000_000, tokens: int = 0) -> RunEstimate:
    return RunEstimate(Counts(runs=1, iterations=likely, tokens=tokens),
                       Counts(runs=1, iterations=bound, tokens=tokens), 1, cap)


def test_a_run_whose_bound_fits_keeps_its_own_cap():
    """Its own cap where that fits (a preempted prompt computed again can pass the bound);
    else at least its bound, and what more fits."""
    work = CommandEffort((estimate(100, 10_000, cap=50_000),))
    assert work.caps(Allowance(60, 1.5e9)) == (50_000,)
    assert CommandEffort((estimate(100, 10**8, cap=50_000),)).caps(Allowance(60, 1.5e9)) == (50_000,)
    per = ITEM_COSTS["iterations"].seconds
    room = ITEM_COSTS["runs"].seconds + 20_000 * per
    (cap,) = work.caps(Allowance(room, 1.5e9))
    assert cap == pytest.approx(20_000, abs=2)
    two = CommandEffort((estimate(100, 10_000, cap=50_000), estimate(100, 1_000, cap=50_000)))
    caps = two.caps(Allowance(2 * ITEM_COSTS["runs"].seconds + 22_000 * per, 1.5e9))
    assert caps[0] >= 10_000 and caps[1] >= 1_000 and caps[0] == pytest.approx(10 * caps[1], abs=10)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(0, 10**8), st.integers(0, 10**8)),
                min_size=1, max_size=8),
       st.floats(1, 120), st.booleans())
def test_caps_keep_every_run_within_the_allowance_and_at_least_at_its_likely_iterations(
        runs_, seconds, held):
    work = CommandEffort(tuple(estimate(likely, likely + extra, tokens=tokens)
                               for likely, extra, tokens in runs_), held_together=held)
    allowance = Allowance(seconds, 1.5e9)
    caps = work.caps(allowance)
    at_likely = work.cost(work.caps_at(1.0))
    if caps is None:
        assert at_likely[0] > allowance.seconds or at_likely[1] > allowance.bytes
        return
    cost = work.cost(caps)
    assert cost[0] <= allowance.seconds and cost[1] <= allowance.bytes
    bounds_fit = work.fits(work.most_caps(), allowance)
    for run, cap in zip(work.runs, caps):
        assert run.likely.iterations <= cap <= run.cap
        assert cap >= run.most_iterations if bounds_fit else cap <= run.most_iterations


def test_caps_above_the_likely_iterations_grow_with_the_budget():
    work = CommandEffort((estimate(10_000, 10**8),))
    small, large = work.caps(Allowance(1, 1e12))[0], work.caps(Allowance(10, 1e12))[0]
    assert 10_000 <= small < large and CommandEffort((estimate(10_000, 10**8),)).caps(Allowance(0.01, 1e12)) \
        is None
    per = ITEM_COSTS["iterations"].seconds
    assert large == pytest.approx((10 - ITEM_COSTS["runs"].seconds) / per, rel=1e-6)


def test_effort_over_an_allowance_is_refused_with_the_likely_estimate_and_the_remedy():
    workload = textbook_scenario(decodes=1, decode_output=5_000_000, context=1, prompt=1,
                             prompt_output=1)
    run = estimated(workload, get_policy("sarathi"), 576, Limits(max_iterations=5_000_000),
                       B200)
    # likely: one iteration per token of the one decoder (and the prompt's), within the cap
    assert run.likely.iterations == 5_000_001 and run.iterations_at(1.0) == 5_000_000
    with pytest.raises(EffortTooLarge) as error:
        CommandEffort((run,)).check(Allowance(30, 1.5e9), "this run", "use a smaller --decode-output")
    message = str(error.value)
    seconds, nbytes = CommandEffort((run,)).cost((5_000_000,))
    assert message.startswith("this run would take about 5,000,000 iterations and 5,000,002 "
                              f"output tokens: ≈ {seconds:,.0f} s and {nbytes / 1e9:.3g} GB")
    assert "over the 30 s time budget" in message and "memory" not in message
    assert message.endswith("; use a smaller --decode-output")
    assert CommandEffort((run,)).check(Allowance(1e9, 1e12), "this run", "") == (5_000_000,)


def test_check_most_refuses_what_the_runs_could_take_at_their_caps():
    work = CommandEffort((estimate(10, 10**7, cap=2_000_000), estimate(10, 100)))
    work.check_most(Allowance(60, 1.5e9), "the search", "fewer requests")
    with pytest.raises(EffortTooLarge) as error:
        work.check_most(Allowance(10, 1.5e9), "the search", "fewer requests")
    message = str(error.value)
    assert message.startswith("the search would take 2 runs of up to 2,000,000 iterations")
    assert message.endswith("; fewer requests")


def test_runs_one_after_another_add_their_time_and_hold_the_largest_memory_unless_kept():
    cost = CostModel(get_gpu("h200"), get_model("llama-3.1-8b"))
    workload = poisson(50, 5, prompt=300, output=20)
    works = [CommandEffort((estimated(workload, get_policy("sarathi"), b, Limits(), cost),))
             for b in (64, 4096)]
    caps = (works[0].runs[0].most_iterations, works[1].runs[0].most_iterations)
    each = [w.cost(w.most_caps()) for w in works]
    in_turn, together = combined(works).cost(caps), combined(works, held_together=True).cost(caps)
    assert in_turn[0] == together[0] == pytest.approx(sum(s for s, _ in each))
    assert in_turn[1] == max(b for _, b in each)
    assert together[1] == pytest.approx(sum(b for _, b in each))


def test_the_work_beside_the_runs_adds_to_what_the_command_costs():
    """A command's own start and its figure (`plus`, added up) cost on top of its runs."""
    runs = CommandEffort((estimate(100, 1_000),))
    more = runs.plus(2.0, 3e6).plus(1.0, 1e6)
    (seconds, nbytes), (more_seconds, more_bytes) = runs.cost((500,)), more.cost((500,))
    assert more.runs == runs.runs
    assert more_seconds == pytest.approx(seconds + 3.0)
    assert more_bytes == pytest.approx(nbytes + 4e6)


def test_a_command_that_costs_exactly_its_allowance_fits():
    work = CommandEffort((estimate(1_000, 10**8),)).plus(0.5, 1e6)
    seconds, nbytes = work.cost((1_000,))
    assert work.fits((1_000,), Allowance(seconds, nbytes))
    assert not work.fits((1_000,), Allowance(seconds, nbytes - 1))
    assert not work.fits((1_000,), Allowance(seconds * 0.999, nbytes))
    # runs that fit at their likely iterations exactly are given them, not refused
    assert work.caps(Allowance(seconds, nbytes)) == (1_000,)


@pytest.mark.parametrize("likely, bound, own_cap", [
    (100, 10**6, 5_000_000),    # the bound fits: its multiple up to the run's own cap
    (1, 10**8, 5_000_000),      # the bound does not fit: a multiple of one likely iteration
    (1_000, 10**8, 5_000_000),
])
def test_a_runs_cap_is_the_largest_that_fits(likely, bound, own_cap):
    """Not a round-down of it: one iteration more would be over the allowance."""
    work = CommandEffort((estimate(likely, bound, cap=own_cap),))
    seconds = ITEM_COSTS["runs"].seconds + 3_456_789.5 * ITEM_COSTS["iterations"].seconds
    allowance = Allowance(seconds, 1e12)
    (cap,) = work.caps(allowance)
    assert work.fits((cap,), allowance) and not work.fits((cap + 1,), allowance)


def test_a_run_whose_bound_is_one_iteration_keeps_its_own_cap():
    assert CommandEffort((estimate(1, 1, cap=1_000),)).caps(Allowance(60, 1.5e9)) == (1_000,)


def test_a_refusal_quotes_the_likely_iterations():
    work = CommandEffort((estimate(1_000, 10**8, tokens=2_000),))
    with pytest.raises(EffortTooLarge) as error:
        work.check(Allowance(ITEM_COSTS["runs"].seconds, 1.5e9), "this run", "fewer requests")
    assert str(error.value).startswith("this run would take about 1,000 iterations and 2,000 "
                                       "output tokens: ")


def test_a_refusal_of_several_runs_quotes_the_largest_at_the_caps_it_quotes():
    """At their likely iterations the second run is the larger, though the first has the
    larger bound."""
    work = CommandEffort((estimate(1_000, 10**8, tokens=10), estimate(100_000, 100_000,
                                                                      tokens=20)))
    with pytest.raises(EffortTooLarge) as error:
        work.check(Allowance(0.01, 1.5e9), "the sweep", "fewer budgets")
    assert str(error.value).startswith("the sweep would take 2 runs of about 100,000 iterations "
                                       "and 20 output tokens for the largest: ")


def test_a_refusal_names_each_budget_it_is_over_and_none_it_meets():
    work = CommandEffort((estimate(10_000, 10_000),))   # 1.5 MB
    seconds, nbytes = work.cost((10_000,))

    def refusal(allowance):
        with pytest.raises(EffortTooLarge) as error:
            work.check_most(allowance, "the search", "fewer requests")
        return str(error.value)
    assert "over the 1 MB memory budget" in refusal(Allowance(seconds, 1e6))
    assert "time budget" not in refusal(Allowance(seconds, 1e6))
    assert "memory budget" not in refusal(Allowance(seconds / 2, nbytes))
    assert refusal(Allowance(1e-3, 1e6)).endswith(
        "over the 0.001 s time budget and over the 1 MB memory budget; fewer requests")


def test_effort_is_quoted_in_whole_seconds_from_10_s_and_in_gb_from_1_gb():
    assert fmt_effort_seconds(1234.4) == "1,234 s"
    assert fmt_effort_seconds(2.53) == "2.5 s"
    assert fmt_effort_bytes(1e9) == "1 GB"
    assert fmt_effort_bytes(1.5e9) == "1.5 GB"
    assert fmt_effort_bytes(2.5e8) == "250 MB"


def account_for(run: RunEstimate, seconds: float) -> RunAccount:
    return RunAccount(Allowance(seconds, 1e12), {("sarathi", 512): run}, windowed=False)


def test_an_account_charges_a_finished_run_by_its_own_counts():
    workload = poisson(40, 5, prompt=512, output=16, seed=0)
    trace = simulate(workload, get_policy("sarathi"), CAPACITY_COST, budget=512)
    run = estimated(workload, get_policy("sarathi"), 512, Limits(), CAPACITY_COST)
    account = account_for(run, 60)
    account.finished(trace)
    assert account.spent_s == Counts.of_trace(trace, False).seconds() > 0
    assert account.may_start(get_policy("sarathi"), 512) is None
    account.spent_s = 60 - run.most().seconds() / 2
    refusal = account.may_start(get_policy("sarathi"), 512)
    assert refusal == (f"one more could take up to {run.most().seconds():.2g} s, past what is "
                       "left of the 60 s budget")


def test_an_account_starts_a_run_that_fits_exactly_what_is_left():
    run = estimate(100, 1_000)
    account = RunAccount(Allowance(3.0, run.most().bytes()), {("sarathi", 512): run},
                         windowed=False)
    account.spent_s = 3.0 - run.most().seconds()
    assert account.may_start(get_policy("sarathi"), 512) is None


def test_an_account_charges_a_sliding_window_models_run_its_window_pricing():
    cost = CostModel(get_gpu("b200"), get_model("mistral-7b"))
    workload = poisson(20, 5, prompt=256, output=16, seed=0)
    trace = simulate(workload, get_policy("sarathi"), cost, budget=512)
    run = estimated(workload, get_policy("sarathi"), 512, Limits(), cost)
    account = RunAccount(Allowance(60, 1e12), {("sarathi", 512): run}, windowed=True)
    account.finished(trace)
    assert account.spent_s == Counts.of_trace(trace, True).seconds() \
        > Counts.of_trace(trace, False).seconds()


def test_an_account_refuses_a_run_whose_memory_is_over_the_allowance():
    run = estimate(100, 1_000)
    account = RunAccount(Allowance(60, run.most().bytes() - 1), {("sarathi", 512): run},
                         windowed=False)
    assert account.may_start(get_policy("sarathi"), 512) is not None


# --- capacity within an allowance, told by callbacks ---------------------------------------------
def test_capacity_stops_before_a_run_the_account_cannot_afford():
    def workload_at(qps):
        return poisson(40, qps, prompt=512, output=16, seed=0)
    most = estimated(workload_at(1.0), get_policy("sarathi"), 512, Limits(),
                        CAPACITY_COST).most()
    account = account_for(estimated(workload_at(1.0), get_policy("sarathi"), 512, Limits(),
                                       CAPACITY_COST), most.seconds() * 2.5)
    result = find_capacity(workload_at, get_policy("sarathi"), CAPACITY_COST, budget=512,
                           tbt_slo_s=1e-4, max_runs=14, may_start=account.may_start,
                           finished=account.finished)
    assert 2 <= len(result.points) < 14
    assert f"the search stopped after {len(result.points)} runs: one more could take up to" \
        in result.reason and "past what is left" in result.reason
    assert 0 < account.spent_s <= account.allowance.seconds


def test_capacity_asks_before_every_run_and_reports_every_finished_one():
    """The callbacks see each run of both searches: one question before each (and the last,
    refused, one), one report after each, with the policy and budget of the search asking."""
    def workload_at(qps):
        return poisson(20, qps, prompt=256, output=8, seed=0)
    asked, finished = [], []

    def may_start(policy, budget):
        asked.append((policy.name, budget))
        return "no more" if len(asked) == 3 else None
    result = find_capacity(workload_at, get_policy("sglang"), CAPACITY_COST, budget=256,
                           tbt_slo_s=1e-6, max_runs=14, may_start=may_start,
                           finished=finished.append)
    assert asked == [("sglang", 256)] * 3 and len(finished) == len(result.points) == 2
    assert all(trace.policy == "sglang" for trace in finished)
    assert result.reason.endswith("; the search stopped after 2 runs: no more")


def test_capacity_never_tries_a_rate_whose_arrivals_outrun_float_precision():
    def workload_at(qps):
        return poisson(40, qps, prompt=512, output=16, seed=0)
    result = find_capacity(workload_at, get_policy("sarathi"), CAPACITY_COST, budget=512,
                           tbt_slo_s=1e-6, max_runs=60)
    floor = lowest_rate(40)
    assert floor == 40 / MAX_ARRIVAL_S
    assert result.capacity_qps == 0 and min(p.qps for p in result.points) >= floor
    assert len(result.points) < 60 and "were not tried" in result.reason
