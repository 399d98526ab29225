"""The run-effort estimate measured: `python -m benchmarks.work_bench`.

Each case runs one simulation (and its metrics, as a command does) in a fresh process: its CPU
time (the fastest of a few runs: a shared machine only ever adds) and what its first run adds to
the process's resident memory at the peak (/proc: VmHWM after a reset, less VmRSS before),
beside the run's real counts (`Counts.of_trace`). The cases are chosen so that each counted item
dominates at least one of them; a non-negative least-squares fit over all of them gives the
seconds and bytes per item, printed beside sim/effort/estimate.py's ITEM_COSTS (which should be
the fit with a margin). Then, per case: the real counts priced by ITEM_COSTS against what was
measured (above 1: a price is too low), and the likely estimate's and the bound's iterations
beside the real run's, with their factors in seconds; last, the ranges over all cases (how tight
the estimate is: the figures sim/effort/estimate.py's docstring points to). Printed, never
asserted. `--smoke`: every case once, its counts capped at SMOKE_CAPS (a check that it runs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np

from sim.effort.estimate import ITEM_COSTS, LIKELY_FACTOR

from .smoke import announce, capped

B200, H200 = dict(gpu="b200", model="dense-8b"), dict(gpu="h200", model="llama-3.1-8b")
ONE_DECODER = dict(kind="textbook_scenario", decodes=1, context=1, prompt=1, prompt_output=1)
CASES = {
    "iterations: 1 decoder x 300,000 tokens": dict(
        **ONE_DECODER, decode_output=300_000, **B200, policy="sarathi", budget=576),
    "chunks: a 200,000-token prompt at budget 1": dict(
        kind="poisson", n=1, qps=1, prompt=200_000, output=1, **B200, policy="sarathi", budget=1),
    "tokens: 1,000 decoders x 1,000 tokens": dict(
        kind="textbook_scenario", decodes=1000, context=1, prompt=1, decode_output=1000,
        prompt_output=1, **B200, policy="sarathi", budget=2000),
    "requests: 50,000 one-token requests at once": dict(
        kind="poisson", n=50_000, qps=1e6, prompt=1, output=1, **B200, policy="sarathi",
        budget=100_000, max_seqs=100_000),
    "stays: 20,000 requests one at a time, vLLM V0": dict(
        kind="poisson", n=20_000, qps=1, prompt=16, output=2, **H200, policy="vllm-v0",
        budget=2048),
    "partial rows: vLLM V1, 1,000 decoders, budget 100": dict(
        kind="textbook_scenario", decodes=1000, context=1, prompt=1, decode_output=300,
        prompt_output=1, **B200, policy="vllm-v1", budget=100, max_seqs=100_000),
    "passes: vLLM V1, 20,000 decoders, budget 10": dict(
        kind="textbook_scenario", decodes=20_000, context=1, prompt=1, decode_output=20,
        prompt_output=1, **B200, policy="vllm-v1", budget=10, max_seqs=100_000),
    "passes, fewer: vLLM V1, 5,000 decoders, budget 10": dict(
        kind="textbook_scenario", decodes=5000, context=1, prompt=1, decode_output=20,
        prompt_output=1, **B200, policy="vllm-v1", budget=10, max_seqs=100_000),
    "window: 1 decoder x 100,000 tokens, mistral-7b": dict(
        **ONE_DECODER, decode_output=100_000, gpu="b200", model="mistral-7b", policy="sarathi",
        budget=576),
    "window rows: 1,000 decoders x 1,000, mistral-7b": dict(
        kind="textbook_scenario", decodes=1000, context=1, prompt=1, decode_output=1000,
        prompt_output=1, gpu="b200", model="mistral-7b", policy="sarathi", budget=2000),
    "the worked example (64 streams, 1 prompt)": dict(
        kind="textbook_scenario", gpu="illustrative", model="dense-8b", policy="sarathi", budget=576),
    "ShareGPT: 3,000 requests at 1,000 QPS": dict(
        kind="poisson", n=3000, qps=1000, lengths="sharegpt", seed=1, **H200, policy="sarathi",
        budget=2048),
    "ShareGPT: 1,000 at 1,000 QPS, mistral-7b": dict(
        kind="poisson", n=1000, qps=1000, lengths="sharegpt", seed=1, gpu="h200",
        model="mistral-7b", policy="sarathi", budget=2048),
    "ShareGPT: 1,000 at 5 QPS, vLLM V0": dict(
        kind="poisson", n=1000, qps=5, lengths="sharegpt", seed=2, **H200, policy="vllm-v0",
        budget=8192),
    "ShareGPT: 1,000 at 20 QPS, SGLang": dict(
        kind="poisson", n=1000, qps=20, lengths="sharegpt", seed=3, **H200, policy="sglang",
        budget=512),
    "ShareGPT: 1,000 at 50 QPS, vLLM V1, budget 256": dict(
        kind="poisson", n=1000, qps=50, lengths="sharegpt", seed=4, **H200, policy="vllm-v1",
        budget=256),
    "burst: 10 x 8,192-token prompts beside 64 streams, Orca": dict(
        kind="burst", n=10, **H200, policy="orca", budget=576),
}
SMOKE_CAPS = dict(n=200, decodes=100, decode_output=1000, prompt=2000)

RUNNER = """
import gc, json, sys, time
from dataclasses import asdict
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving import workloads
from sim.serving.engine import simulate
from sim.serving.metrics import summarize
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from harness.memory import reset_peak, resident_mib
from sim.effort.estimate import Counts, estimate_run

def run(workload, policy, cost, budget, limits):
    start = time.process_time()
    summarize(Run(workload=workload, policy=policy, cost=cost, budget=budget,
                  limits=limits).simulate())
    return time.process_time() - start

spec, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
kind, gpu, model = spec.pop("kind"), spec.pop("gpu"), spec.pop("model")
policy, budget = get_policy(spec.pop("policy")), spec.pop("budget")
limits = Limits(max_seqs=spec.pop("max_seqs", 1024), max_iterations=5_000_000)
cost = CostModel(get_gpu(gpu), get_model(model))
tiny = workloads.textbook_scenario(decodes=2, context=10, prompt=10, decode_output=3)
run(tiny, policy, cost, budget, limits)        # imports and numpy's first calls
workload = getattr(workloads, kind)(**spec)
estimate = estimate_run(Run(workload=workload, policy=policy, cost=cost, budget=budget,
                            limits=limits))
gc.collect()
before = resident_mib()
reset_peak()
seconds = [run(workload, policy, cost, budget, limits)]
peak = (resident_mib("VmHWM") - before) * 2**20
seconds += [run(workload, policy, cost, budget, limits) for _ in range(repeats - 1)]
trace = simulate(workload, policy, cost, budget=budget, limits=limits)
real = Counts.of_trace(trace, cost.model.sliding_window > 0)
print(json.dumps(dict(seconds=min(seconds), bytes=peak, real=asdict(real),
                      likely=asdict(estimate.likely), bound=asdict(estimate.bound))))
"""

ITEMS = list(ITEM_COSTS)


def measure(spec: dict, repeats: int = 3) -> dict:
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(spec), str(repeats)],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{spec}: {done.stderr}")
    return json.loads(done.stdout)


def nonnegative_fit(counts: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Per-item prices >= 0 that best explain `measured` (least squares on relative errors, so
    that small cases weigh as much as large ones, the smallest measures raised to a tenth of the
    median so that noise does not lead; items whose price comes out negative are dropped and the
    rest fitted again)."""
    weights = 1 / np.maximum(measured, np.median(measured) / 10)
    active = np.ones(counts.shape[1], bool)
    while True:
        price = np.zeros(counts.shape[1])
        solved = np.linalg.lstsq(counts[:, active] * weights[:, None], measured * weights,
                                 rcond=None)[0]
        price[active] = solved
        if (solved >= 0).all():
            return price
        active[np.flatnonzero(active)[solved < 0]] = False


def _priced(counts: dict, what: str) -> float:
    return sum(counts[item] * getattr(ITEM_COSTS[item], what) for item in ITEMS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.work_bench")
    parser.add_argument("--smoke", action="store_true",
                        help="every case once at a small size: does each still run?")
    args = parser.parse_args(argv)
    if args.smoke:
        announce(f"every case once, its counts capped at {SMOKE_CAPS}")
    results = {}
    for name, spec in CASES.items():
        results[name] = measure(capped(spec, SMOKE_CAPS), 1) if args.smoke else measure(dict(spec))
        print(f"measured {name}", file=sys.stderr, flush=True)
    counts = np.array([[r["real"][item] for item in ITEMS] for r in results.values()], float)
    fitted = {what: nonnegative_fit(counts, np.array([r[what] for r in results.values()]))
              for what in ("seconds", "bytes")}
    print("per counted item: fitted over the cases, and ITEM_COSTS (sim/effort/estimate.py)")
    print(f"{'item':<20} {'fitted s':>10} {'priced s':>10} {'fitted B':>9} {'priced B':>9}")
    for i, item in enumerate(ITEMS):
        cost = ITEM_COSTS[item]
        print(f"{item:<20} {fitted['seconds'][i]:>10.2e} {cost.seconds:>10.2e} "
              f"{fitted['bytes'][i]:>9.0f} {cost.bytes:>9.0f}")
    print("\nper case: measured against the real counts priced (above 1: a price is too low); "
          "iterations of the real run, of the likely estimate and of the bound; seconds of the "
          "likely estimate and of the bound against the real counts priced")
    print(f"{'case':<52} {'s':>6} {'s/priced':>8} {'MB':>5} {'B/priced':>8} {'iterations':>10} "
          f"{'likely':>10} {'bound':>11} {'likely s':>8} {'bound s':>8}")
    ratios = {what: [] for what in ("time", "memory", "likely iterations", "likely seconds",
                                    "bound seconds")}
    for name, r in results.items():
        real, likely, bound = r["real"], r["likely"], r["bound"]
        case = {"time": r["seconds"] / _priced(real, "seconds"),
                "memory": r["bytes"] / _priced(real, "bytes"),
                "likely iterations": likely["iterations"] / real["iterations"],
                "likely seconds": _priced(likely, "seconds") / _priced(real, "seconds"),
                "bound seconds": _priced(bound, "seconds") / _priced(real, "seconds")}
        for what, ratio in case.items():
            ratios[what].append(ratio)
        print(f"{name:<52} {r['seconds']:>6.2f} {case['time']:>8.2f} {r['bytes'] / 1e6:>5.0f} "
              f"{case['memory']:>8.2f} {real['iterations']:>10,} {likely['iterations']:>10,} "
              f"{bound['iterations']:>11,} {case['likely seconds']:>8.2f} "
              f"{case['bound seconds']:>8.1f}")
    span = {what: f"{min(values):.2f}-{max(values):.2f}" for what, values in ratios.items()}
    print(f"\nover the cases, measured / real counts priced: time {span['time']}, memory "
          f"{span['memory']} (above 1: raise ITEM_COSTS); likely iterations / real "
          f"{span['likely iterations']} (stated: within {LIKELY_FACTOR:g}x either way); bound "
          f"seconds / real {span['bound seconds']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
