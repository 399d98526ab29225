"""DistServe's goodput as a capacity criterion (sim/studies/capacity.py): the share of requests
meeting both targets, checked by hand, and the comparison of a split with colocation."""

import numpy as np
import pytest

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.serving.workloads import make_workload, poisson
from sim.studies.capacity import (
    CAPACITY_LIMITS,
    GoodputSlo,
    SearchStop,
    compare_goodput,
    goodput_point,
    search_words,
)

# The textbook GPU and model in the simple mode: a 1,000-token prompt alone takes 2 x 8e9 x 1,000
# FLOPs / 400e12 FLOP/s = 40 ms, an 8,000-token one 320 ms; a decode step reads 16 GB of weights
# at 3e12 B/s: 5.33 ms.
TEXTBOOK = CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")
APART = make_workload([0.0, 10.0, 20.0, 30.0], [1000, 8000, 1000, 8000], [11, 11, 11, 11])


def run_apart():
    return Run(workload=APART, policy=get_policy("sarathi"), cost=TEXTBOOK, budget=8192).simulate()


def test_the_share_meeting_both_targets_by_hand():
    trace = run_apart()
    # the short prompts meet a 100 ms TTFT (40 ms), the long ones miss it (320 ms); every
    # request's TPOT is one decode step, 16e9 / 3e12 s = 5.33 ms
    point = goodput_point(2.0, [trace], GoodputSlo(0.1, 0.006, share=0.5))
    assert point.slo_attainment == 0.5 and point.sustained and point.qps == 2.0
    assert not goodput_point(2.0, [trace], GoodputSlo(0.1, 0.006)).sustained   # 90% asked
    assert goodput_point(2.0, [trace], GoodputSlo(0.4, 0.006)).slo_attainment == 1.0
    assert goodput_point(2.0, [trace], GoodputSlo(0.4, 16e9 / 3e12 * 0.999)).slo_attainment == 0
    # two runs judged together: their requests pooled
    assert goodput_point(2.0, [trace, trace], GoodputSlo(0.1, 0.006)).slo_attainment == 0.5


def test_a_bad_target_is_refused():
    with pytest.raises(InputError, match="TTFT SLO"):
        GoodputSlo(0, 0.1)
    with pytest.raises(InputError, match="SLO attainment share"):
        GoodputSlo(0.2, 0.1, share=1.5)


def test_the_split_and_colocation_run_on_the_same_gpus_and_compare_per_gpu():
    h100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))

    def at(qps):
        return poisson(150, qps, seed=0, lengths="fixed", prompt=2000, output=50)
    run = Run(workload=at(1.0), policy=get_policy("sarathi"), cost=h100, budget=512,
              limits=CAPACITY_LIMITS, disaggregation=Disaggregation(1, 1, link="free"))
    comparison = compare_goodput(at, run, GoodputSlo(1.0, 0.02), max_runs=6, rel_tol=0.1)
    ours, theirs = comparison.disaggregated, comparison.colocated
    assert ours.gpus == theirs.gpus == 2
    assert ours.result.capacity_qps > 0 and theirs.result.capacity_qps > 0
    assert comparison.ratio == pytest.approx(ours.per_gpu / theirs.per_gpu)
    assert ours.per_gpu == ours.result.capacity_qps / 2
    assert all(p.slo_attainment is not None for p in ours.result.points)
    assert all(p.sustained == (p.slo_attainment >= 0.9) for p in theirs.result.points)
    with pytest.raises(InputError, match="does not divide them"):
        compare_goodput(at, Run(workload=at(1.0), policy=get_policy("sarathi"),
                                cost=CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"),
                                               tp=2),
                                budget=512, disaggregation=Disaggregation(2, 1)),
                        GoodputSlo(1.0, 0.02))
    assert np.isfinite(comparison.ratio)


def test_a_searchs_outcome_is_written_by_one_function_in_each_readers_words():
    """The command line's reason and a page's words come from search_words: the reason in
    QPS and <= (kept as it was), a page's in its own unit, name and targets; a cap of runs that
    ended the search is said in both."""
    def at(qps):
        return poisson(60, qps, seed=0, lengths="fixed", prompt=2000, output=20)
    h100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
    run = Run(workload=at(1.0), policy=get_policy("sarathi"), cost=h100, budget=512,
              limits=CAPACITY_LIMITS, disaggregation=Disaggregation(1, 1, link="free"))
    result = compare_goodput(at, run, GoodputSlo(0.3, 0.01), max_runs=3).disaggregated.result
    assert result.failed_qps is not None and result.capacity_qps > 0
    assert result.stopped == SearchStop("runs", runs=3)
    assert result.reason == (
        f"sarathi disaggregated 1:1 at budget 512 meets goodput's SLOs (at least 90% of "
        f"requests with TTFT <= 300 ms and TPOT <= 10 ms) up to {result.capacity_qps:.3g} QPS and "
        f"misses at {result.failed_qps:.3g} QPS (3 runs); the search stopped at its cap of 3 runs")
    assert search_words(result, "ours", "both targets", unit="requests/s") == (
        f"ours meets both targets up to {result.capacity_qps:.3g} requests/s and misses at "
        f"{result.failed_qps:.3g} requests/s (3 runs); the search stopped at its cap of 3 runs")
