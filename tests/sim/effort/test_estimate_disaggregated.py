"""A disaggregated run's estimate (sim/effort/estimate.py `_disaggregated`): the sum of its
instances' runs bounds what they did, and its likely iterations keep within LIKELY_FACTOR."""

import pytest

from sim.cost.iteration import CostModel
from sim.effort.estimate import ITEM_COSTS, LIKELY_FACTOR, Counts, estimate_run
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.serving.workloads import poisson

H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))


@pytest.mark.parametrize("split, qps, lengths", [
    (Disaggregation(1, 1), 4, dict(lengths="sharegpt")),
    (Disaggregation(2, 2), 12, dict(lengths="sharegpt")),
    (Disaggregation(1, 3), 6, dict(lengths="fixed", prompt=8192, output=256)),
    (Disaggregation(2, 2, prefill_tp=2, decode_tp=1), 6, dict(lengths="sharegpt")),
])
def test_the_bound_holds_each_instances_work_and_the_likely_one_keeps_its_factor(split, qps,
                                                                                  lengths):
    run = Run(workload=poisson(300, qps, seed=2, **lengths), policy=get_policy("sarathi"),
              cost=H100, budget=512, disaggregation=split)
    trace = run.simulate()
    instances = (*trace.prefill, *trace.decode)
    real = sum((Counts.of_trace(t, windowed=False) for t in instances[1:]),
               Counts.of_trace(instances[0], windowed=False))
    estimate = estimate_run(run)
    for item in ITEM_COSTS:
        assert getattr(estimate.bound, item) >= getattr(real, item), item
    assert real.iterations / LIKELY_FACTOR <= estimate.likely.iterations \
        <= LIKELY_FACTOR * real.iterations
    assert estimate.likely.runs == len(instances)
