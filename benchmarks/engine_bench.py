"""The simulation core's speed targets: a run of each scenario and policy, timed (`simulate` alone,
through benchmarks/engine_runs.py). `python -m benchmarks` prints them; to measure a change:

    python -m benchmarks.engine_bench --against ../before [--repeats 5] [--smoke]

times each case in this checkout and in another (a git worktree or `git archive` of an older
commit), each tree in a process of its own with that tree first on the path, samples alternated
(which tree goes first alternates too), and prints both medians and their ratio (this / other).
Both trees see the same load, so the ratio leaves most of it out; on a shared machine it still
moves by a few percent from run to run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from sim import get_policy, lane_budget, textbook_scenario

from .against import Comparison
from .engine_runs import prepare
from .smoke import announce

ROOT = Path(__file__).resolve().parents[1]
RUNS_SCRIPT = Path(__file__).resolve().with_name("engine_runs.py")
SEED_BUDGET = 576


def _run(workload: str, arguments: dict, policy: str, gpu: str, model: str, budget: int,
         max_seqs: int = 1024) -> dict:
    """One run as engine_runs.py reads it."""
    return dict(workload=[workload, arguments], policy=policy, gpu=gpu, model=model,
                budget=budget, max_seqs=max_seqs)


def engine_cases(small: bool = False) -> list[tuple[str, float, list[dict]]]:
    """(name, target seconds, runs) per case; `small`: the same cases at a smoke test's size."""
    seed = dict(gpu="illustrative", model="dense-8b")
    # vLLM V0 at its own budget without chunking (at 576 it would ignore the prompt); an older
    # tree may not know this rule, so every tree is given the number
    seed_v0 = lane_budget(get_policy("vllm-v0"), textbook_scenario(), SEED_BUDGET)
    poisson = dict(qps=6, prompt=1024, output=128, seed=0)
    a100 = dict(gpu="a100-80gb", model="llama-2-7b", budget=512, max_seqs=128)
    # 1,000,000-token prompt with 1,024 decoders: the KV (and the weights) must fit, so this uses
    # Qwen2.5-7B (56 KiB/token) on an MI300X (192 GB); decoders hold 100 tokens of context each.
    huge = dict(decodes=64 if small else 1024, context=100, prompt=20_000 if small else 1_000_000,
                decode_output=64)
    return [
        ("textbook scenario, unchunked (vllm-v0) + chunked (sarathi 576)", 0.020,
         [_run("textbook", {}, "vllm-v0", **seed, budget=seed_v0),
          _run("textbook", {}, "sarathi", **seed, budget=SEED_BUDGET)]),
        ("1,000 Poisson requests, llama-2-7b a100-80gb, sarathi 512", 0.3,
         [_run("poisson", dict(n=100 if small else 1000, **poisson), "sarathi", **a100)]),
        ("20,000 Poisson requests, same settings", 5.0,
         [_run("poisson", dict(n=500 if small else 20_000, **poisson), "sarathi", **a100)]),
        # prefix caching on, as vLLM V1 ships it: the prefix is computed once and found by
        # every later request (an older tree without --prefix-tokens names the error)
        ("1,000 Poisson requests sharing a 2,000-token prefix, 4 QPS, vllm-v1 8,192 (h100-sxm, "
         "llama-3.1-8b)", 0.5,
         [_run("poisson", dict(n=100 if small else 1000, qps=4, prompt=512, output=128, seed=0,
                               prefix_tokens=2000, prefix_share=1.0),
               "vllm-v1", gpu="h100-sxm", model="llama-3.1-8b", budget=8192)]),
        ("1,000,000-token prompt, 1,024 decoders, sarathi 512 (mi300x)", 2.0,
         [_run("textbook", huge, "sarathi", gpu="mi300x", model="qwen2.5-7b", budget=512,
               max_seqs=2048)]),
    ]


def cases(small: bool = False):
    return [(name, target, prepare(runs)) for name, target, runs in engine_cases(small)]


class TimingProcess:
    """A process timing runs of one tree's sim (engine_runs.py's `serve`), that tree first on
    its path; `sim`: the package it imported, checked to be that tree's."""

    def __init__(self, tree: Path):
        self.tree = tree
        self.child = subprocess.Popen([sys.executable, str(RUNS_SCRIPT)], cwd=tree, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      env={**os.environ, "PYTHONPATH": str(tree)})
        self.sim = Path(self._answer()["sim"]).resolve().parent
        if not self.sim.is_relative_to(tree):
            raise SystemExit(f"the timing process of {tree} imported another tree's sim: {self.sim}")

    def _answer(self) -> dict:
        line = self.child.stdout.readline()
        if not line:
            raise SystemExit(f"the timing process of {self.tree} ended (its error is above)")
        return json.loads(line)

    def seconds(self, case: str, runs: list[dict]) -> float:
        """One pass of `runs`, timed in the process; a failure stops the benchmark, naming the
        case and the tree."""
        self.child.stdin.write(json.dumps(runs) + "\n")
        self.child.stdin.flush()
        reply = self._answer()
        if "error" in reply:
            raise SystemExit(f"{case}, in {self.tree}: {reply['error']}")
        return reply["seconds"]

    def __enter__(self) -> TimingProcess:
        return self

    def __exit__(self, *_) -> None:
        self.child.stdin.close()
        self.child.wait()


def compare(other: Path, repeats: int, small: bool) -> None:
    """Each case in this tree and in `other`, samples alternated; medians and their ratio."""
    with TimingProcess(ROOT) as here, TimingProcess(other) as there:
        print(f"this: {here.sim}; other: {there.sim}")
        if small:
            announce("every case at a small size")
        print(f"{'case':<62} {'this':>8} {'other':>8} {'ratio':>6}  load   (seconds, medians of "
              f"{repeats} samples each)")
        comparison = Comparison(label_width=62, decimals=4)
        for name, _, runs in engine_cases(small):
            comparison.measure(name, repeats, lambda side, name=name, runs=runs:
                               (here, there)[side].seconds(name, runs))
    comparison.summary("cases")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_bench")
    parser.add_argument("--against", type=Path, required=True, metavar="CHECKOUT",
                        help="another checkout of the lab to time beside this one")
    parser.add_argument("--repeats", type=int, help="samples per case and tree (default 5; "
                                                    "--smoke: 1)")
    parser.add_argument("--smoke", action="store_true",
                        help="each case at a small size: do both trees still run it?")
    args = parser.parse_args(argv)
    if not (args.against / "sim").is_dir():
        parser.error(f"--against {args.against}: no sim/ there; give the folder of another "
                     "checkout of the lab (e.g. git worktree add ../before HEAD~1)")
    compare(args.against.resolve(), args.repeats or (1 if args.smoke else 5), args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
