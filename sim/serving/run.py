"""One run, whole: everything a simulation reads, as one frozen value.

The command line builds it from its flags and the app from its controls; both pass it whole to
the run-effort estimate (sim/effort), to the engine (`Run.simulate`), to every cache that keeps
a run or what is drawn from it, and to the exports. So a field added here reaches all of them
with no other edit: a cache keys on the value (equal content, equal key; a workload by its rows,
`Workload.digest`), the estimate reads it whole. The one field a caller changes on its way to
the engine, the iteration cap that keeps a command within its allowance, is `capped`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sim.cost.iteration import CostModel
from sim.presets.hardware import Gpu
from sim.presets.models import Model
from sim.serving.engine import Trace, simulate
from sim.serving.policies import DEFAULT_LIMITS, Limits, PolicySpec
from sim.serving.workloads import Workload


@dataclass(frozen=True, kw_only=True)
class Run:
    """A workload under one policy at one budget and limits, on one GPU and model, priced in one
    cost mode. Checked when made (the cost model's checks: a tp the model's heads allow, the
    calibrated mode on a GPU it can price)."""
    workload: Workload
    policy: PolicySpec
    gpu: Gpu
    model: Model
    budget: int
    mode: str = "roofline"
    overhead_s: float | None = None   # the engine's CPU time per iteration; None: the mode's own
    tp: int = 1
    limits: Limits = DEFAULT_LIMITS

    def __post_init__(self):
        # built once, not a field: it follows from the fields, so equal runs stay equal
        object.__setattr__(self, "_cost", CostModel(self.gpu, self.model, self.mode,
                                                    self.overhead_s, self.tp))

    @property
    def cost(self) -> CostModel:
        """The run's cost model (the engine prices it on the policy's own loop)."""
        return self._cost

    def capped(self, max_iterations: int) -> Run:
        """The same run, stopped after `max_iterations` iterations."""
        return replace(self, limits=replace(self.limits, max_iterations=max_iterations))

    def simulate(self) -> Trace:
        return simulate(self.workload, self.policy, self.cost, budget=self.budget,
                        limits=self.limits)
