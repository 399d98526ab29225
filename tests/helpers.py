"""Small builders shared by the sim tests."""

from sim.cost import CostModel
from sim.engine import simulate
from sim.hardware import get_gpu
from sim.models import get_model
from sim.policies import get_policy
from sim.workloads import seed_scenario


def run(workload, policy="sarathi", budget=576, gpu="illustrative", model="dense-8b",
        mode="roofline", **kwargs):
    return simulate(workload, get_policy(policy), CostModel(get_gpu(gpu), get_model(model), mode),
                    budget=budget, **kwargs)


def run_seed(policy="sarathi", budget=576, mode="simple", **scenario):
    return run(seed_scenario(**scenario), policy, budget, mode=mode)
