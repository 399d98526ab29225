"""Traffic speed targets: a budget sweep, a two-policy capacity search, mixed traffic with its
per-class metrics, and a disaggregated run (one prefill GPU, one decode GPU)."""

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation
from sim.serving.metrics import class_metrics
from sim.serving.policies import Limits, engine_max_seqs, get_policy
from sim.serving.run import Run
from sim.serving.workloads import MIXES, mixed, poisson
from sim.studies.capacity import SLO_PRESETS, compare_capacity
from sim.studies.sweep import sweep

TWELVE_BUDGETS = (64, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384)


def cases(small: bool = False):
    """`small`: a smoke test's sizes, 100 requests and three of the budgets."""
    requests = 100 if small else 1000
    budgets = TWELVE_BUDGETS[::4] if small else TWELVE_BUDGETS
    a100 = CostModel(get_gpu("a100-80gb"), get_model("llama-2-7b"))
    fixed_lengths = poisson(requests, 6, prompt=1024, output=128, seed=0)
    mistral = CostModel(get_gpu("a100-80gb"), get_model("mistral-7b"))

    h100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
    v1 = get_policy("vllm-v1")
    documents = mixed(requests, 4, MIXES["chat+documents"], seed=0)

    def mixed_run():
        run = Run(workload=documents, policy=v1, cost=h100, budget=v1.profile.budget(h100.gpu),
                  limits=Limits(max_seqs=engine_max_seqs(v1, h100)))
        return class_metrics(run.simulate(), documents)

    def sharegpt(qps):
        return poisson(requests, qps, lengths="sharegpt", seed=0)

    def disaggregated_run():
        return Run(workload=sharegpt(4), policy=get_policy("sarathi"), cost=h100, budget=512,
                   disaggregation=Disaggregation(1, 1)).simulate()
    return [
        ("sweep, 12 budgets x 1,000 Poisson requests (a100, llama)", 3.0,
         lambda: sweep(Run(workload=fixed_lengths, policy=get_policy("sarathi"), cost=a100,
                           budget=budgets[0], limits=Limits(max_seqs=128)), budgets,
                       tbt_slo_s=0.05)),
        ("capacity, sarathi 512 vs vllm-v0, 1,000 ShareGPT requests", 15.0,
         lambda: compare_capacity(sharegpt, mistral, policy=get_policy("sarathi"), budget=512,
                                  baseline=get_policy("vllm-v0"), baseline_budget=8192,
                                  tbt_slo_s=SLO_PRESETS["mistral-7b-strict"].tbt_slo_s,
                                  limits=Limits(max_seqs=128))),
        ("mixed traffic, 1,000 chat+documents requests at 4 QPS, vllm-v1 (h100, llama-3.1-8b)", 0.5,
         mixed_run),
        ("disaggregated 1:1, 1,000 ShareGPT-like requests at 4 QPS, sarathi 512 (h100, "
         "llama-3.1-8b)", 0.5, disaggregated_run),
    ]
