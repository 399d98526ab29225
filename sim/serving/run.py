"""One run, whole: everything a simulation reads, as one frozen value.

The command line builds it from its flags and the app from its controls; both pass it whole to
the run-effort estimate (sim/effort), to the engine (`Run.simulate`), to every cache that keeps
a run or what is drawn from it, and to the exports. So a field added here reaches all of them
with no other edit: a cache keys on the value (equal content, equal key: a workload by its rows,
`Workload.digest`; a cost model by what it is made from, `CostModel.key`), the estimate reads it
whole. The one field a caller changes on its way to the engine, the iteration cap that keeps a
command within its allowance, is `capped`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace
from functools import cached_property

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.serving.disaggregated import DisaggregatedTrace, Disaggregation, simulate_disaggregated
from sim.serving.engine import Trace, simulate
from sim.serving.pipeline import Pipeline, StagedRun, StageFigures, simulate_pipeline
from sim.serving.policies import DEFAULT_LIMITS, Limits, PolicySpec
from sim.serving.workloads import Workload


@dataclass(frozen=True, kw_only=True)
class Run:
    """A workload under one policy at one budget and limits, priced by one cost model (its GPU,
    model, cost mode, CPU overhead and tensor parallelism); with `disaggregation`, served by a
    prefill pool and a decode pool of that GPU and model, the KV cache handed over a link
    (sim/serving/disaggregated.py), and None: by one engine on `cost.tp` GPUs; with `pipeline`,
    the model's layers split over its stages, tp x stages GPUs (sim/serving/pipeline.py)."""
    workload: Workload
    policy: PolicySpec
    cost: CostModel
    budget: int
    limits: Limits = DEFAULT_LIMITS
    disaggregation: Disaggregation | None = None
    pipeline: Pipeline | None = None

    def __post_init__(self):
        if self.disaggregation is not None and self.pipeline is not None \
                and self.pipeline.stages > 1:
            raise InputError("pipeline stages (pp > 1) and disaggregated pools together are not "
                             "modelled; run one or the other")

    @cached_property
    def digest(self) -> str:
        """A hash of every field (a workload's by its `digest`, a cost model's by its `key`), for
        the caches that hash their arguments themselves (Streamlit's)."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            parts.append(getattr(value, "digest", None) or getattr(value, "key", None) or value)
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def capped(self, max_iterations: int) -> Run:
        """The same run, stopped after `max_iterations` iterations."""
        return replace(self, limits=replace(self.limits, max_iterations=max_iterations))

    def simulate(self) -> Trace | DisaggregatedTrace:
        """The run's Trace; a DisaggregatedTrace (each instance's Trace inside) with
        `disaggregation`."""
        if self.disaggregation is not None:
            return simulate_disaggregated(self.workload, self.policy, self.cost,
                                          budget=self.budget, limits=self.limits,
                                          split=self.disaggregation)
        if self.pipeline is not None and self.pipeline.stages > 1:
            return self.staged().trace
        return simulate(self.workload, self.policy, self.cost, budget=self.budget,
                        limits=self.limits)

    def traced(self) -> tuple[Trace | DisaggregatedTrace, StageFigures | None]:
        """The run's trace and, with `pipeline`, its stages' figures; None without. One stage runs
        on the one engine it is, as `simulate` does and the estimate counts it (the stages' clock
        costs a quarter more per iteration and changes nothing there)."""
        if self.pipeline is None or self.disaggregation is not None:
            return self.simulate(), None
        if self.pipeline.stages == 1:
            trace = self.simulate()
            return trace, StageFigures.of_one_stage(trace, self.pipeline)
        staged = self.staged()
        return staged.trace, staged.schedule.figures

    def staged(self) -> StagedRun:
        """The run through the pipeline's stages with its stage-by-stage schedule (one stage
        without `pipeline`: the same figures as `simulate`)."""
        pipeline = self.pipeline or Pipeline((self.cost.model.layers,))
        return simulate_pipeline(self.workload, self.policy, self.cost, budget=self.budget,
                                 pipeline=pipeline, limits=self.limits)
