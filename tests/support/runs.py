"""A run's estimate from its parts, as the estimate's tests name them (sim.effort.estimate takes
the run whole, sim.serving.run.Run)."""

from sim.cost.iteration import CostModel
from sim.effort.estimate import RunEstimate, estimate_run
from sim.serving.policies import Limits, PolicySpec
from sim.serving.run import Run
from sim.serving.workloads import Workload


def estimated(workload: Workload, policy: PolicySpec, budget: int, limits: Limits,
              cost: CostModel) -> RunEstimate:
    return estimate_run(Run(workload=workload, policy=policy, cost=cost, budget=budget,
                            limits=limits))
