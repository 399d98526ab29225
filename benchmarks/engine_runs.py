"""The engine benchmark's runs as plain data, run through the part of sim's API that has stood
unchanged since the lab's early commits (simulate, get_policy, Limits, CostModel, get_gpu,
get_model, poisson, and the textbook scenario under its name at either time, seed_scenario before
textbook_scenario): so `engine_bench --against` times an older checkout with this very code, and
`python -m benchmarks` times this tree with it too.

A run is a dict: workload ([a name in WORKLOADS, its keyword arguments]), policy, gpu, model,
budget, max_seqs. Each is timed as `simulate` alone: the engine, not the metrics after it.

As a script (`python benchmarks/engine_runs.py`, the tree to time first on PYTHONPATH) it serves
one timing process of `engine_bench --against`: its first line says which sim it imported; then
for each line it reads (a JSON list of runs) it answers one JSON line, the seconds one pass of
those runs took, timed here (no imports, no workload construction; a first pass of each new
list, untimed, takes the first calls' costs), or the error that stopped them.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable

import sim
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving import workloads
from sim.serving.engine import simulate
from sim.serving.policies import Limits, get_policy

# each workload by the names a tree may know it under, the current one first
NAMES = {"poisson": ("poisson",), "textbook": ("textbook_scenario", "seed_scenario")}
WORKLOADS = {kind: next(getattr(workloads, n) for n in names if hasattr(workloads, n))
             for kind, names in NAMES.items()}


def prepare(runs: list[dict]) -> Callable[[], None]:
    """A callable that simulates each of `runs` once, every workload and cost model built here,
    before it is timed."""
    prepared = [(WORKLOADS[run["workload"][0]](**run["workload"][1]), get_policy(run["policy"]),
                 CostModel(get_gpu(run["gpu"]), get_model(run["model"])), run["budget"],
                 Limits(max_seqs=run["max_seqs"])) for run in runs]

    def simulate_each() -> None:
        for workload, policy, cost, budget, limits in prepared:
            simulate(workload, policy, cost, budget=budget, limits=limits)
    return simulate_each


def seconds_of(simulate_each: Callable[[], None]) -> float:
    """One pass, timed after a garbage collection (so that none left from before lands in it)."""
    gc.collect()
    start = time.perf_counter()
    simulate_each()
    return time.perf_counter() - start


def serve() -> None:
    print(json.dumps({"sim": sim.__file__}), flush=True)
    prepared: dict[str, Callable[[], None]] = {}
    for line in sys.stdin:
        try:
            if line not in prepared:
                prepared[line] = prepare(json.loads(line))
                prepared[line]()
            answer = {"seconds": seconds_of(prepared[line])}
        except Exception as e:    # answered, so that the benchmark names the case and the tree
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    serve()
