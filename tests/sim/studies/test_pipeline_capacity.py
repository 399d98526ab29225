"""Capacity on pipeline stages (sim/studies/capacity.py): the compute ceiling is the busiest
stage's, and every rate's run goes through the stages and keeps their bubble."""

import pytest

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.pipeline import Pipeline
from sim.serving.policies import get_policy
from sim.serving.workloads import poisson
from sim.studies.capacity import compute_ceiling_qps, find_capacity

TEXTBOOK = CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple")   # 32 layers
WORKLOAD = poisson(40, 1.0, prompt=1024, output=32, seed=0)


def test_one_stage_has_todays_ceiling():
    assert compute_ceiling_qps(WORKLOAD, TEXTBOOK, Pipeline((32,))) == \
        compute_ceiling_qps(WORKLOAD, TEXTBOOK)


def test_the_busiest_stage_bounds_the_rate():
    """In the simple mode a stage's compute is its share of the model's FLOPs (2 x its share of
    the parameters per token): two even stages compute their halves at once, twice one GPU's
    ceiling; a 24/8 split is bounded by its 24-layer stage, 32/24 of it."""
    alone = compute_ceiling_qps(WORKLOAD, TEXTBOOK)
    even = compute_ceiling_qps(WORKLOAD, TEXTBOOK, Pipeline((16, 16), "nvlink4"))
    uneven = compute_ceiling_qps(WORKLOAD, TEXTBOOK, Pipeline((24, 8), "nvlink4"))
    assert even == pytest.approx(2 * alone, rel=1e-12)
    assert uneven == pytest.approx(alone * 32 / 24, rel=1e-12)


@pytest.mark.parametrize("pipeline", [None, Pipeline((16, 16), "nvlink4")])
def test_every_rate_runs_through_the_stages(pipeline):
    result = find_capacity(lambda qps: poisson(40, qps, prompt=1024, output=32, seed=0),
                           get_policy("sarathi"), TEXTBOOK, budget=512, tbt_slo_s=0.05,
                           max_runs=3, pipeline=pipeline)
    assert result.ceiling_qps == compute_ceiling_qps(WORKLOAD, TEXTBOOK, pipeline)
    for point in result.points:
        if pipeline is None:
            assert point.stage_figures is None
        else:
            assert point.stage_figures.stages == 2 and 0 <= point.stage_figures.bubble_fraction < 1
