"""The work estimator against measured runs: `python -m benchmarks.work_bench`.

Each case runs one simulation in a fresh process (so its peak resident memory is its own) and
prints the measured seconds and peak memory beside `sim.serving.work.estimate_run`'s. The estimate
is meant to be an upper bound on this machine: a measured/estimated ratio above 1 means a constant
in sim/serving/work.py is too small. Printed, never asserted (the machine is shared and noisy).
"""

from __future__ import annotations

import json
import subprocess
import sys

CASES = {
    "iterations: 1 decoder x 300,000 tokens": dict(
        kind="seed_scenario", decodes=1, context=1, prompt=1, decode_output=300_000,
        prompt_output=1, gpu="b200", model="dense-8b", policy="sarathi", budget=576),
    "window: the same on mistral-7b": dict(
        kind="seed_scenario", decodes=1, context=1, prompt=1, decode_output=100_000,
        prompt_output=1, gpu="b200", model="mistral-7b", policy="sarathi", budget=576),
    "snapshots: 5,000 decoders x 100 tokens": dict(
        kind="seed_scenario", decodes=5000, context=1, prompt=1, decode_output=100,
        prompt_output=1, gpu="b200", model="dense-8b", policy="sarathi", budget=20_000,
        max_seqs=100_000),
    "tokens: 3,000 ShareGPT requests at 1,000 QPS": dict(
        kind="poisson", n=3000, qps=1000, lengths="sharegpt", seed=1, gpu="h200",
        model="llama-3.1-8b", policy="sarathi", budget=2048),
    "chunks: 2,000 4,096-token prompts, budget 64": dict(
        kind="poisson", n=2000, qps=1000, prompt=4096, output=1, gpu="h200",
        model="llama-3.1-8b", policy="sarathi", budget=64),
    "copies: vLLM V1, 1,000 decoders, budget 100": dict(
        kind="seed_scenario", decodes=1000, context=1, prompt=1, decode_output=300,
        prompt_output=1, gpu="b200", model="dense-8b", policy="vllm-v1", budget=100,
        max_seqs=100_000),
    "requests: 20,000 short requests, vLLM V0, 1 QPS": dict(
        kind="poisson", n=20_000, qps=1, prompt=16, output=2, gpu="h200",
        model="llama-3.1-8b", policy="vllm-v0", budget=2048),
}

RUNNER = """
import json, resource, sys, time
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving import workloads
from sim.serving.engine import simulate
from sim.serving.metrics import summarize
from sim.serving.policies import Limits, get_policy
from sim.serving.work import estimate_run
spec = json.loads(sys.argv[1])
kind, gpu, model = spec.pop("kind"), spec.pop("gpu"), spec.pop("model")
policy, budget, max_seqs = get_policy(spec.pop("policy")), spec.pop("budget"), spec.pop("max_seqs", 1024)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
workload = getattr(workloads, kind)(**spec)
cost = CostModel(get_gpu(gpu), get_model(model))
limits = Limits(max_seqs=max_seqs, max_iterations=5_000_000)
work = estimate_run(workload, policy, budget, limits, cost)
start = time.perf_counter()
summarize(simulate(workload, policy, cost, budget=budget, limits=limits))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(dict(seconds=seconds, bytes=peak - before, est_seconds=work.seconds,
                      est_bytes=work.bytes)))
"""


def measure(spec: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(spec)], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def main() -> int:
    print(f"{'case':<48} {'measured':>9} {'estimate':>9} {'ratio':>6}  "
          f"{'peak':>9} {'estimate':>9} {'ratio':>6}")
    worst_time = worst_bytes = 0.0
    for name, spec in CASES.items():
        m = measure(dict(spec))
        time_ratio, bytes_ratio = m["seconds"] / m["est_seconds"], m["bytes"] / m["est_bytes"]
        worst_time, worst_bytes = max(worst_time, time_ratio), max(worst_bytes, bytes_ratio)
        print(f"{name:<48} {m['seconds']:>8.2f}s {m['est_seconds']:>8.2f}s {time_ratio:>6.2f}  "
              f"{m['bytes'] / 1e6:>7,.0f}MB {m['est_bytes'] / 1e6:>7,.0f}MB {bytes_ratio:>6.2f}")
    print(f"largest measured/estimated: time {worst_time:.2f}, memory {worst_bytes:.2f} "
          "(above 1: raise the constants in sim/serving/work.py)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
