"""The simulation core's speed targets: a run of each scenario and policy, timed."""

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.metrics import summarize
from sim.serving.policies import Limits, get_policy
from sim.serving.workloads import poisson, seed_scenario


def _run(workload, policy, cost, budget, max_seqs=1024):
    summarize(simulate(workload, get_policy(policy), cost, budget=budget, limits=Limits(max_seqs=max_seqs)))


def cases():
    seed_cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    seed = seed_scenario()
    a100 = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"))
    thousand = poisson(1000, 6, prompt=1024, output=128, seed=0)
    twenty_k = poisson(20_000, 6, prompt=1024, output=128, seed=0)
    # 1,000,000-token prompt with 1,024 decoders: the KV (and the weights) must fit, so this uses
    # Qwen2.5-7B (56 KiB/token) on an MI300X (192 GB); decoders hold 100 tokens of context each.
    big_cost = CostModel(get_gpu("mi300x"), get_model("qwen2.5-7b"))
    huge = seed_scenario(decodes=1024, context=100, prompt=1_000_000, decode_output=64)
    return [
        ("seed scenario, unchunked (vllm-v0) + chunked (sarathi 576)",
         0.020, lambda: (_run(seed, "vllm-v0", seed_cost, 576), _run(seed, "sarathi", seed_cost, 576))),
        ("1,000 Poisson requests, llama-2-7b a100-80gb, sarathi 512", 0.3,
         lambda: _run(thousand, "sarathi", a100, 512, max_seqs=128)),
        ("20,000 Poisson requests, same settings", 5.0,
         lambda: _run(twenty_k, "sarathi", a100, 512, max_seqs=128)),
        ("1,000,000-token prompt, 1,024 decoders, sarathi 512 (mi300x)", 2.0,
         lambda: _run(huge, "sarathi", big_cost, 512, max_seqs=2048)),
    ]
