"""Fixtures the chart tests share (session-wide: each is a few simulations): the textbook scenario's
two lanes, the Traffic page's runs and sweeps, the fidelity report."""

from functools import partial

import pytest

from charts import budget_sweep as budget_charts
from charts import fidelity as charts
from sim.cost.iteration import CostModel
from sim.cost.validation import validate
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.serving.workloads import burst, poisson
from sim.studies.capacity import compare_capacity, rate_curve, rate_grid
from sim.studies.sweep import engine_defaults, recommend, run_point
from tests.support.charts import SEED, run, serve
from ui.shell.scenario import scenario_from


@pytest.fixture(scope="session")
def seed():
    s = scenario_from({})
    return s, run(s, "vllm-v0"), run(s, "sarathi")


@pytest.fixture(scope="session")
def seed_burst():
    """Ten 8,192-token prompts beside 64 decoders: the Traffic page's default."""
    return serve(burst(10, 8192, 32, 64, 4000, 256), ("vllm-v0", "sarathi"))


@pytest.fixture(scope="session")
def memory_bound():
    cost = CostModel(get_gpu("l4"), get_model("dense-8b"), "simple")
    return cost, serve(poisson(120, 4, lengths="sharegpt", seed=0), ("sarathi", "vllm-v1"), cost)


@pytest.fixture(scope="session")
def capacity():
    workload_at = partial(poisson, 40, prompt=1024, output=32, seed=0)
    cost = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))
    comparison = compare_capacity(workload_at, cost, policy=get_policy("sarathi"), budget=512,
                                  baseline=get_policy("vllm-v0"), baseline_budget=2048,
                                  tbt_slo_s=0.1, max_runs=5)
    curves = {r.policy: rate_curve(workload_at, get_policy(r.policy), cost,
                                   rate_grid(r.ceiling_qps, 3), budget=r.budget, tbt_slo_s=0.1)
              for r in (comparison.policy, comparison.baseline)}
    return comparison, curves


@pytest.fixture(scope="session")
def frontier():
    workload = burst(10, 8192, 32, 64, 4000, 256)
    points = [run_point(Run(workload=workload, policy=get_policy("sarathi"), cost=SEED, budget=b))
              for b in (128, 256, 576, 2048, 8192, 16384)]
    recommended, _ = recommend(points, 0.025)
    return budget_charts.frontier_frame(points, recommended, engine_defaults(SEED.gpu))


@pytest.fixture(scope="session")
def report():
    return validate()


@pytest.fixture(scope="session")
def points(report):
    return charts.validate_frame(report)


@pytest.fixture(scope="session")
def curves():
    return charts.curves_frame()
