"""A run is one value (sim/serving/run.py): equal content is one key, every field (and all that
a cost model is made from) is part of the key, and it runs what the engine runs."""

from dataclasses import fields, replace

import numpy as np

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation
from sim.serving.engine import simulate
from sim.serving.pipeline import Pipeline
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import make_workload, poisson, textbook_scenario

A100 = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"))
BASE = Run(workload=textbook_scenario(8, 500, 2000), policy=get_policy("sarathi"), cost=A100,
           budget=256)

# For each field of Run, of its Limits and of what its cost model is made from, a value other
# than BASE's.
OTHER = {
    "workload": textbook_scenario(8, 500, 2001),
    "policy": get_policy("vllm-v1"),
    "cost": CostModel(get_gpu("h100-sxm"), get_model("llama-2-7b")),
    "budget": 512,
    "limits": Limits(max_seqs=9),
    "disaggregation": Disaggregation(1, 1),
    "pipeline": Pipeline((16, 16), "nvlink3"),
}
OTHER_LIMITS = {"max_seqs": 9, "max_concurrent_prefills": 1, "long_prefill_token_threshold": 256,
                "mixed_chunk": True, "max_long_partial_prefills": 1, "max_iterations": 1000,
                "cap_lone_prefill": True, "disable_ignore_eos": True,
                "chunking": "dynamic", "prefix_caching": "on", "order": "lpm"}
# a limit that needs another set beside it (which prompts are long, or capped: the threshold)
BESIDE = {"max_long_partial_prefills": {"long_prefill_token_threshold": 256},
          "cap_lone_prefill": {"long_prefill_token_threshold": 256}}
OTHER_COSTS = {
    "gpu": CostModel(get_gpu("h100-sxm"), get_model("llama-2-7b")),
    "model": CostModel(get_gpu("a100-80gb"), get_model("mistral-7b")),
    "mode": CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"), "calibrated"),
    "overhead": A100.with_overhead(0.004),
    "tp": CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"), tp=2),
    "engine": A100.for_engine(get_policy("vllm-v1").overhead),
}


def test_workloads_with_the_same_rows_are_one_key():
    a = poisson(50, 2.0, lengths="sharegpt", seed=3)
    b = poisson(50, 2.0, lengths="sharegpt", seed=3)
    assert a is not b and a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != poisson(50, 2.0, lengths="sharegpt", seed=4)
    shifted = make_workload(a.arrival_s + 1e-9, a.prompt, a.output, a.prefilled, a.name)
    assert shifted != a                        # one arrival a nanosecond later is another run
    assert make_workload(a.arrival_s, a.prompt, a.output, a.prefilled, "other") != a


def test_equal_runs_are_one_key_and_every_field_is_part_of_it():
    """A cache keyed on a Run tells apart runs that differ in any field, the day a field is
    added (OTHER must name it, or this fails)."""
    same = replace(BASE, workload=textbook_scenario(8, 500, 2000))
    assert same == BASE and hash(same) == hash(BASE)
    assert {f.name for f in fields(Run)} == set(OTHER)
    for name, value in OTHER.items():
        other = replace(BASE, **{name: value})
        assert other != BASE and hash(other) != hash(BASE) and other.digest != BASE.digest, name
    assert {f.name for f in fields(Limits)} == set(OTHER_LIMITS)
    for name, value in OTHER_LIMITS.items():
        base = replace(BASE, limits=replace(BASE.limits, **BESIDE.get(name, {})))
        other = replace(base, limits=replace(base.limits, **{name: value}))
        assert other != base and hash(other) != hash(base) and other.digest != base.digest, name
    assert len(A100.key) == len(OTHER_COSTS)
    for name, cost in OTHER_COSTS.items():
        other = replace(BASE, cost=cost)
        assert other != BASE and hash(other) != hash(BASE) and other.digest != BASE.digest, name
    same = replace(BASE, cost=CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b")),
                   workload=textbook_scenario(8, 500, 2000))
    assert same == BASE and hash(same) == hash(BASE) and same.digest == BASE.digest


def test_capped_changes_the_iteration_cap_alone():
    capped = BASE.capped(7)
    assert capped.limits == replace(BASE.limits, max_iterations=7)
    assert replace(capped, limits=BASE.limits) == BASE


def test_it_runs_what_the_engine_runs():
    trace = BASE.simulate()
    direct = simulate(BASE.workload, BASE.policy, A100, budget=256)
    assert np.array_equal(trace.duration_s, direct.duration_s)
