"""Chunked Prefill Lab's simulator: pure Python + numpy, SI units inside.

Rooms, lowest first (each imports only those below it):
- `presets`: GPUs and models, every figure with its source.
- `cost`: the price of one iteration (simple, roofline, calibrated) and its validation.
- `serving`: the schedulers as policies, the engine with its KV pool, workloads, metrics.
- `studies`: the worked example, budgets, sweeps, capacity and memory, built on the above.
- `effort` (beside `studies`): the simulator's own CPU time and memory for a run, estimated
  before it starts, and the iteration caps that keep a command within its allowance.

This module is the public API: `sim.run(sim.textbook_scenario(), "sarathi", budget=576)`. Mixed
traffic is request classes served together: `w = sim.mixed(1000, 4.0, sim.MIXES["chat+documents"])`
(or a `Mix` of your own `RequestClass`es, each with its share and its prompt and output `Lengths`),
then `sim.class_metrics(sim.run(w, "vllm-v1"), w)` gives each class's TTFT, TBT and head-of-line
wait. Prefill on some GPUs and decode on others is a `Run` with a `Disaggregation` (X prefill and
Y decode GPUs, a link of `LINKS`); its `DisaggregatedTrace` reads through `summarize` as one
engine's Trace does, and `pool_summaries` and `transfer_times` give each pool's utilisation and
queueing and each KV hand-off's time (`price_transfer` prices one by hand). Pipeline stages are
a `Run` with a `Pipeline` (`make_pipeline(model, gpu, stages)`: the layers split over the stages,
a link between them); `Run.staged()` gives its Trace and its `StageSchedule`, each micro-batch's
start and end on every stage and the stages' idle time (`bubble_s`, `bubble_fraction`).
"""

from sim.cost.iteration import MODES, Chunk, Composition, CostModel, IterationCost
from sim.errors import InputError
from sim.presets.hardware import GPUS, Gpu, custom_gpu, get_gpu
from sim.presets.links import LINKS, Link, get_link, price_transfer
from sim.presets.models import MODELS, Model, custom_model, get_model
from sim.serving.disaggregated import (
    DisaggregatedTrace,
    Disaggregation,
    pool_summaries,
    transfer_times,
)
from sim.serving.engine import SimulationLimitError, Trace, simulate
from sim.serving.metrics import ClassMetrics, Metrics, class_metrics, request_times, summarize
from sim.serving.pipeline import Pipeline, StagedRun, StageSchedule, make_pipeline
from sim.serving.policies import POLICIES, Limits, PolicySpec, get_policy, lane_budget
from sim.serving.run import Run
from sim.serving.workloads import (
    MIXES,
    TEXTBOOK,
    Lengths,
    Mix,
    RequestClass,
    Workload,
    burst,
    make_workload,
    mixed,
    poisson,
    textbook_scenario,
)


def run(workload: Workload, policy: str = "sarathi", budget: int | None = None, *,
        gpu: str = "illustrative", model: str = "dense-8b", mode: str = "roofline",
        **limits) -> Trace:
    """`workload` under a named policy on a preset GPU and model: the short way to `simulate`.
    `budget` None: the source article's 576, or vLLM V0's own without chunking (`lane_budget`).
    `limits` are those of `Limits` (max_seqs, max_concurrent_prefills,
    long_prefill_token_threshold, mixed_chunk, max_iterations)."""
    spec = get_policy(policy)
    if budget is None:
        budget = lane_budget(spec, workload, TEXTBOOK.budget)
    return Run(workload=workload, policy=spec, cost=CostModel(get_gpu(gpu), get_model(model), mode),
               budget=budget, limits=Limits(**limits)).simulate()


__all__ = ["GPUS", "LINKS", "MIXES", "MODELS", "MODES", "POLICIES", "TEXTBOOK", "Chunk",
           "ClassMetrics", "Composition", "CostModel", "DisaggregatedTrace", "Disaggregation",
           "Gpu", "InputError", "IterationCost", "Lengths", "Limits", "Link", "Metrics", "Mix",
           "Model", "Pipeline", "PolicySpec", "RequestClass", "Run", "SimulationLimitError",
           "StageSchedule", "StagedRun", "Trace", "Workload", "burst", "class_metrics",
           "custom_gpu", "custom_model", "get_gpu", "get_link", "get_model", "get_policy",
           "lane_budget", "make_pipeline", "make_workload", "mixed", "poisson", "pool_summaries",
           "price_transfer", "request_times", "run", "simulate", "summarize", "textbook_scenario",
           "transfer_times"]
