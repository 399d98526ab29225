"""The simulator's public API (sim/__init__.py): every public name it imports is in `__all__`,
and mixed traffic runs through it alone, as its docstring shows."""

import inspect

import pytest

import sim


def test_all_names_every_public_name_the_module_imports():
    public = {name for name, value in vars(sim).items()
              if not name.startswith("_") and not inspect.ismodule(value)}
    assert set(sim.__all__) == public and len(sim.__all__) == len(public)


def test_mixed_traffic_runs_through_the_public_api():
    preset = sim.mixed(60, 4.0, sim.MIXES["chat+documents"], seed=1)
    classes = sim.class_metrics(sim.run(preset, "vllm-v1", gpu="h100-sxm", model="llama-3.1-8b"),
                                preset)
    assert list(classes) == ["chat", "documents"]
    assert sum(c.requests for c in classes.values()) == 60
    assert isinstance(classes["chat"], sim.ClassMetrics)
    own = sim.Mix("short+long", (
        sim.RequestClass("short", 0.9, sim.Lengths(100, 200), sim.Lengths(10, 10)),
        sim.RequestClass("long", 0.1, sim.Lengths(4000, 4000), sim.Lengths(10, 10))))
    workload = sim.mixed(20, 4.0, own)
    assert workload.classes == ("short", "long")
    assert sim.summarize(sim.run(workload, "vllm-v1")).requests == 20


def test_a_disaggregated_run_goes_through_the_public_api():
    workload = sim.poisson(40, 4.0, seed=1, lengths="sharegpt")
    run = sim.Run(workload=workload, policy=sim.get_policy("sarathi"),
                  cost=sim.CostModel(sim.get_gpu("h100-sxm"), sim.get_model("llama-3.1-8b")),
                  budget=512, disaggregation=sim.Disaggregation(1, 1, link="ib-ndr"))
    trace = run.simulate()
    assert isinstance(trace, sim.DisaggregatedTrace) and trace.link == sim.LINKS["ib-ndr"]
    assert sim.summarize(trace).requests == 40
    assert set(sim.pool_summaries(trace)) == {"prefill", "decode"}
    first = trace.decode_instance >= 0
    priced = [sim.price_transfer(int(p), 131_072, sim.get_link("ib-ndr")).seconds
              for p in trace.prompt[first]]
    assert sim.transfer_times(trace).tolist() == pytest.approx(priced, rel=1e-9)



def test_pipeline_stages_go_through_the_public_api():
    """What a stage-by-time chart draws: each micro-batch on every stage, and the idle time."""
    gpu, model = sim.get_gpu("h100-sxm"), sim.get_model("llama-3.1-70b")
    run = sim.Run(workload=sim.poisson(40, 4.0, seed=1, lengths="sharegpt"),
                  policy=sim.get_policy("sarathi"), cost=sim.CostModel(gpu, model), budget=512,
                  pipeline=sim.make_pipeline(model, gpu, 4))
    staged = run.staged()
    assert isinstance(staged, sim.StagedRun) and isinstance(staged.schedule, sim.StageSchedule)
    assert staged.schedule.start_s.shape == (staged.trace.iterations, 4)
    assert 0 < staged.schedule.bubble_fraction < 1
    assert sim.summarize(staged.trace).requests == 40
