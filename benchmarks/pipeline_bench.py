"""Pipeline speed target: ShareGPT-like traffic through four pipeline stages, each micro-batch
priced stage by stage (sim/serving/pipeline.py)."""

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.pipeline import make_pipeline
from sim.serving.policies import get_policy
from sim.serving.run import Run
from sim.serving.workloads import poisson


def cases(small: bool = False):
    """`small`: a smoke test's 100 requests."""
    gpu, model = get_gpu("h100-sxm"), get_model("llama-3.1-70b")
    run = Run(workload=poisson(100 if small else 1000, 2, lengths="sharegpt", seed=0),
              policy=get_policy("sarathi"), cost=CostModel(gpu, model), budget=512,
              pipeline=make_pipeline(model, gpu, 4))
    return [("pipeline, --pp 4, 1,000 ShareGPT-like requests at 2 QPS, sarathi 512 "
             "(h100, llama-3.1-70b)", 0.5, lambda: run.staged())]
