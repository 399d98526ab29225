"""Sarathi-Serve's and DistServe's published figures beside the lab's: the same setups run through
the lab's own capacity and goodput searches (sim/studies/capacity.py) and cost model (calibrated
mode), nothing else.

Each paper figure is stated once here with its source: a section or table of the paper
(Agrawal et al., OSDI 2024, arXiv 2403.02310) or a file of its artifact (microsoft/sarathi-serve,
`osdi-experiments/` at commit ARTIFACT_COMMIT; docs/sources.md, "Sarathi-Serve (OSDI 2024)").
A row is one figure: `simulated`, `paper`, `ratio` = simulated / paper, and `note`, the main
uncertainty. Where the lab cannot express a setup (the ablation's chunking-only scheduler) the
row has no simulated value and its note says why; no number stands in for it.

The capacity searches take minutes at the paper's 2,048 requests, so the results ship in
SHIPPED_RESULTS, written by `python -m benchmarks.reproduce` (its command and the commit beside
them); `python -m sim reproduce --rerun NAME` recomputes one scenario at RERUN effort (fewer
requests, a coarser bisection), and tests/sim/studies/test_reproduce.py checks that a rerun lands
within RERUN_TOLERANCE of the shipped figure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from sim.cost.iteration import Chunk, Composition, CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation
from sim.serving.engine import Trace
from sim.serving.length_traces import sharegpt_trace
from sim.serving.metrics import summarize
from sim.serving.policies import Limits, PolicySpec, get_policy, unchunked_budget
from sim.serving.run import Run
from sim.serving.workloads import Workload, make_workload, poisson
from sim.studies.capacity import (
    CAPACITY_LIMITS,
    PAPER,
    SLO_PRESETS,
    CapacityResult,
    GoodputSlo,
    find_capacity,
    find_goodput,
)
from sim.units import fmt_bytes, fmt_seconds

ARTIFACT_COMMIT = "02d2567eb169"   # microsoft/sarathi-serve, the OSDI artifact's experiments
ARTIFACT = f"Sarathi-Serve artifact, osdi-experiments at {ARTIFACT_COMMIT}"
SHIPPED_RESULTS = Path(__file__).parent / "data" / "reproduce.json"
GPU = "a100-pcie-80gb"   # Sarathi-Serve's testbed: A100 80GB PCIe, pairs joined by NVLink bridges
MODE = "calibrated"
TRACE_MAX_TOKENS = 8192   # the artifact's max_seq_len for the ShareGPT trace
RERUN_TOLERANCE = 0.15    # a rerun's figure within 15% of the shipped one (its ratio to it)
NOT_EXPRESSIBLE = "not expressible"


@dataclass(frozen=True)
class Effort:
    """How much work a capacity scenario does: requests per run, the bisection's tolerance, and
    whether it searches again at each end of OVERHEAD_SPAN_S (three times the work)."""
    requests: int
    rel_tol: float
    overhead_span: bool

    def describe(self) -> str:
        return f"{self.requests:,} requests a run, bisection to {self.rel_tol:.0%}"


FULL = Effort(requests=2048, rel_tol=0.02, overhead_span=True)   # the artifact's 2,048 requests
RERUN = Effort(requests=512, rel_tol=0.05, overhead_span=False)
# CPU overhead per iteration at the ends of its range: none (all of it hidden) and 10 ms (the
# top of the "5-13 ms" of GPU idle per step in vLLM V0's profiles; docs/sources.md, vLLM)
OVERHEAD_SPAN_S = (0.0, 10e-3)


@dataclass(frozen=True)
class Row:
    """One paper figure beside the lab's; `simulated` None where the lab cannot express it."""
    scenario: str
    metric: str
    simulated: float | None
    paper: float
    ratio: float | None
    note: str
    unit: str           # "s" (seconds) or "x" (a ratio)
    source: str         # where the paper figure is stated

    def to_json(self) -> dict:
        return asdict(self)

    def shown(self, x: float | None) -> str:
        """A figure of this row in words: seconds as a time, a ratio as 3.20x."""
        if x is None:
            return NOT_EXPRESSIBLE
        return fmt_seconds(x) if self.unit == "s" else f"{x:.2f}x"


def row(scenario: str, metric: str, simulated: float | None, paper: float, note: str, unit: str,
        source: str) -> Row:
    ratio = None if simulated is None else simulated / paper
    return Row(scenario, metric, simulated, paper, ratio, note, unit, source)


def numbered_notes(rows: Sequence[Row]) -> tuple[list[int], list[str]]:
    """Each row's note number and the notes, each once in order (rows of a scenario share
    notes): how the command line and the fidelity page set the notes under their table."""
    notes: dict[str, int] = {}
    numbers = [notes.setdefault(r.note, len(notes) + 1) for r in rows]
    return numbers, list(notes)


def cost_model(model: str, tp: int, overhead_s: float | None = None) -> CostModel:
    """The cost model every scenario prices on: Sarathi-Serve's GPU, calibrated (its own
    per-iteration overhead unless `overhead_s` is given)."""
    return CostModel(get_gpu(GPU), get_model(model), MODE, overhead_s, tp=tp)


def trace_workload(requests: int, qps: float, seed: int) -> Workload:
    """`requests` rows of the ShareGPT trace in the order a seeded shuffle gives (the artifact's
    trace generator shuffles the file and takes its first rows), arriving as a Poisson process
    at `qps` (the same seeded exponential gaps at every rate, as capacity.py's search expects)."""
    prompt, output = sharegpt_trace()
    rows = np.random.default_rng(seed).permutation(len(prompt))[:requests]
    gaps = np.random.default_rng(seed + 1).exponential(1.0, requests)
    return make_workload(np.cumsum(gaps) / qps, prompt[rows], output[rows],
                         name="ShareGPT trace, Poisson arrivals")


# --- capacity (section 5, Figures 5 and 6) --------------------------------------------------------
@dataclass(frozen=True)
class CapacitySetup:
    """One of the paper's capacity comparisons, as its artifact's figure-5-6 configs run it."""
    model: str
    tp: int
    tbt_slo_s: float
    budget: int                  # Sarathi-Serve's chunk size (its token budget)
    baseline: str
    baseline_budget: int         # vLLM's max_num_batched_tokens; Orca has none
    baseline_max_seqs: int       # the artifact's batch_size for the baseline
    paper_ratio: float
    source: str
    max_seqs: int = 128          # Sarathi-Serve's batch_size in every config


def _preset(name: str, model: str, tp: int, budget: int, config: str) -> CapacitySetup:
    """A capacity setup under one of the Capacity page's SLO presets: its SLO and the paper's
    ratio for it read from the preset (one figure per SLO, wherever it is shown)."""
    preset = SLO_PRESETS[name]
    return CapacitySetup(model, tp, preset.tbt_slo_s, budget, "vllm-v0", 8192, 128,
                         preset.paper.ratio,
                         f"{PAPER}, {preset.paper.where}; artifact figure-5-6/{config}")


CAPACITY: dict[str, CapacitySetup] = {
    "mistral-7b-strict": _preset("mistral-7b-strict", "mistral-7b-instruct-v0.2", 1, 512,
                                 "mistral7b_strict.yml"),
    "mistral-7b-relaxed": _preset("mistral-7b-relaxed", "mistral-7b-instruct-v0.2", 1, 2048,
                                  "mistral7b_relaxed.yml"),
    "yi-34b-strict": _preset("yi-34b-strict", "yi-34b", 2, 512, "yi34_strict.yml"),
    "yi-34b-relaxed": _preset("yi-34b-relaxed", "yi-34b", 2, 2048, "yi34_relaxed.yml"),
    "yi-34b-strict-orca": CapacitySetup(
        "yi-34b", 2, SLO_PRESETS["yi-34b-strict"].tbt_slo_s, 512, "orca", 8192, 16, 4.0,
        f"{PAPER}, section 5.1: up to 4.0x over Orca; artifact figure-5-6/yi34_strict.yml (Orca "
        "at batch size 16)"),
}
CAPACITY_SEED = 0
DELAY_NOTE = "capacity = highest Poisson QPS with P99 TBT within the SLO and median scheduling delay <= 2 s"


def capacity_runs(setup: CapacitySetup) -> tuple[tuple[PolicySpec, int, Limits], ...]:
    """The two searches of a setup: (policy, token budget, limits), Sarathi-Serve's first."""
    return ((get_policy("sarathi"), setup.budget, replace(CAPACITY_LIMITS, max_seqs=setup.max_seqs)),
            (get_policy(setup.baseline), setup.baseline_budget,
             replace(CAPACITY_LIMITS, max_seqs=setup.baseline_max_seqs)))


def capacity_ratio(name: str, cost: CostModel, effort: Effort, **search) -> tuple[
        CapacityResult, CapacityResult, float | None]:
    """Both searches of setup `name` on `cost` (capacity.py's `find_capacity`, each policy at
    its own batch cap) and the ratio of their capacities (None unless both proved a rate)."""
    setup = CAPACITY[name]

    def workload_at(qps: float) -> Workload:
        return trace_workload(effort.requests, qps, CAPACITY_SEED)

    ours, theirs = (find_capacity(workload_at, policy, cost, budget=budget,
                                  tbt_slo_s=setup.tbt_slo_s, limits=limits,
                                  rel_tol=effort.rel_tol, **search)
                    for policy, budget, limits in capacity_runs(setup))
    proved = ours.capacity_qps > 0 and theirs.capacity_qps > 0
    return ours, theirs, ours.capacity_qps / theirs.capacity_qps if proved else None


def capacity_rows(name: str, effort: Effort = FULL,
                  may_start: Callable[[PolicySpec, int], str | None] | None = None,
                  finished: Callable[[Trace], None] | None = None) -> list[Row]:
    """The capacity ratio Sarathi-Serve / baseline for setup `name`; at full effort also the
    ratio at OVERHEAD_SPAN_S of CPU overhead per iteration, stated in the note (the overhead
    is the figure that moves it most, and no measurement here pins it)."""
    setup = CAPACITY[name]
    cost = cost_model(setup.model, setup.tp)
    ours, theirs, ratio = capacity_ratio(name, cost, effort, may_start=may_start,
                                         finished=finished)
    # a search that ended before its bracket closed (iteration cap, or the caller's allowance)
    stopped = [r.reason for r in (ours, theirs) if r.failed_qps is None or r.capacity_qps == 0
               or (r.failed_qps - r.capacity_qps) / r.failed_qps > effort.rel_tol]
    baseline = get_policy(setup.baseline).engine
    note = (f"Sarathi-Serve {ours.capacity_qps:.3g} QPS at budget {setup.budget:,}, {baseline} "
            f"{theirs.capacity_qps:.3g} QPS ({effort.describe()}); the CPU overhead of an "
            f"iteration ({cost.overhead_s * 1e3:.3g} ms in the calibrated mode) moves this ratio "
            "most")
    if effort.overhead_span:
        low, high = (capacity_ratio(name, cost_model(setup.model, setup.tp, overhead), effort)[2]
                     for overhead in OVERHEAD_SPAN_S)
        note += (f": {_times(low)} with none, {_times(high)} at "
                 f"{OVERHEAD_SPAN_S[1] * 1e3:.3g} ms")
    note += ("; the paper's capacities rest on its GPUs' measured kernels, the lab's on a fit to "
             "A100 GEMMs")
    if get_policy(setup.baseline).profile.kv_floor:
        note += ("; the artifact's Orca reserves room for the keys and values of max_model_len "
                 f"({TRACE_MAX_TOKENS:,} tokens) per request at batch 16: the lab's runs at "
                 "batch 16 and reserves what its engine profile says")
    if stopped:
        note += "; " + "; ".join(stopped)
    return [row(name, f"capacity ratio Sarathi-Serve / {baseline}", ratio, setup.paper_ratio,
                note, "x", setup.source)]


def _times(ratio: float | None) -> str:
    return "no ratio (a search proved no rate)" if ratio is None else f"{ratio:.2f}x"


# --- one iteration's time (artifact table-2 and figure-9) ---------------------------------------
# table-2/results.csv: Yi-34B TP2, prompts of 1,024 tokens and 16 output tokens, batches of 4
BATCH_CONTEXT = 1024 + 8   # a decode's context midway through its 16 output tokens
BATCH_TIMES = (   # (metric, the batch, paper seconds)
    ("decode-only batch, 4 decodes", Composition(decode_contexts=(BATCH_CONTEXT,) * 4), 68.12e-3),
    ("hybrid batch, 1,021-token chunk + 3 decodes",
     Composition(decode_contexts=(BATCH_CONTEXT,) * 3, chunks=(Chunk(1021),)), 217.65e-3),
    ("prefill-only batch, one 1,024-token prompt", Composition(chunks=(Chunk(1024, last=True),)),
     217.24e-3),
)
BATCH_SOURCE = f"{ARTIFACT}, table-2/results.csv (Yi-34B TP2, A100 80GB PCIe)"
# figure-9/chunking-overhead.csv: prefill time in chunks / in one piece, Yi-34B TP2
CHUNKING_OVERHEAD = {(2047, 512): 1.1522, (2047, 1024): 1.1746, (4095, 512): 1.1889,
                     (4095, 1024): 1.2022, (8191, 512): 1.1165, (8191, 1024): 1.1095}
CHUNKING_SOURCE = f"{ARTIFACT}, figure-9/chunking-overhead.csv (the paper's Figure 9a)"
YI_TP2 = ("yi-34b", 2)


def batch_time_rows() -> list[Row]:
    cost = cost_model(*YI_TP2)
    note = {"decode-only batch, 4 decodes":
            "the lab prices kernels, the all-reduces and a fixed "
            f"{cost.overhead_s * 1e3:.3g} ms per iteration; a 4-request step is mostly what "
            "surrounds the kernels (CPU scheduling, two tensor-parallel workers, sampling), "
            "which that fixed time does not cover"}
    prefill = ("GEMM efficiency fitted on Llama-2-7B's shapes on an A100 SXM, applied to "
               "Yi-34B's on the PCIe card; the paper ran Yi-34B-200K (same shapes)")
    return [row("batch-times", metric, cost.price(batch).time_s, paper,
                note.get(metric, prefill), "s", BATCH_SOURCE)
            for metric, batch, paper in BATCH_TIMES]


def prefill_seconds(cost: CostModel, prompt: int, chunk: int) -> float:
    """One prompt's prefill alone, in chunks of `chunk` tokens (each after the last's KV)."""
    total, done = 0.0, 0
    while done < prompt:
        take = min(chunk, prompt - done)
        total += cost.price(Composition(chunks=(Chunk(take, done, done + take == prompt),))).time_s
        done += take
    return total


def chunking_rows() -> list[Row]:
    cost = cost_model(*YI_TP2)
    note = ("a chunk costs the lab a re-read of its prefix's keys and values, its partial GEMM "
            "tiles and one more "
            f"iteration's overhead ({cost.overhead_s * 1e3:.3g} ms); the measured overhead is "
            "larger, from kernels the lab does not model one by one")
    return [row("chunking-overhead", f"{prompt:,}-token prefill in chunks of {chunk:,} / in one "
                "piece", prefill_seconds(cost, prompt, chunk) / prefill_seconds(cost, prompt, prompt),
                paper, note, "x", CHUNKING_SOURCE)
            for (prompt, chunk), paper in CHUNKING_OVERHEAD.items()]


# --- the scheduling ablation (Table 4) ----------------------------------------------------------
ABLATION_REQUESTS = 128    # the artifact's table-6/scheduling_ablation.sh: 128 requests, QPS 1
ABLATION_QPS = 1.0
ABLATION_SEEDS = tuple(range(8))
ABLATION_BUDGET = 1024     # Table 4's token budget (the artifact's script runs chunk 512)
NOISY = 0.10               # a range over the seeds wider than this share of the mean: a noisy figure
HYBRID_ONLY_BUDGET = TRACE_MAX_TOKENS   # chunk = max_model_len: a whole prompt per iteration
ABLATION_SOURCE = (f"{PAPER}, Table 4 (Yi-34B TP2, ShareGPT, 128 requests); run by {ARTIFACT}, "
                   "table-6/scheduling_ablation.sh")
ABLATION = (   # (variant, its (policy, budget), or None where the lab has no such scheduler)
    ("hybrid-batching only", ("sarathi", HYBRID_ONLY_BUDGET), (0.53, 0.68)),
    ("chunked prefills only", None, (1.04, 0.17)),
    ("Sarathi-Serve (both)", ("sarathi", ABLATION_BUDGET), (0.76, 0.14)),
)
CHUNK_ONLY_NOTE = (
    "not expressible in the lab: the artifact's simple_chunking scheduler alternates an iteration "
    "of prompt chunks with an iteration of every decode; the lab's chunked engines either mix "
    "decodes into the chunk's iteration (Sarathi-Serve, vLLM V1) or run chunks until none is left "
    "(SGLang), so no policy here takes turns")


def variant_runs(policy: str, budget: int) -> list[Run]:
    """One ablation variant's runs, one per seed."""
    return [Run(workload=trace_workload(ABLATION_REQUESTS, ABLATION_QPS, seed),
                policy=get_policy(policy), cost=cost_model(*YI_TP2), budget=budget,
                limits=Limits(max_seqs=128)) for seed in ABLATION_SEEDS]


def ablation_runs() -> list[Run]:
    """Every run the ablation makes (for an effort estimate before they start)."""
    return [run for _, spec, _ in ABLATION if spec for run in variant_runs(*spec)]


def ablation_rows(caps: Sequence[int] | None = None) -> list[Row]:
    """P50 TTFT and P99 TBT of each variant: the mean over ABLATION_SEEDS workloads of 128
    requests (one such workload swings them by a third), their range over the seeds in the note; `caps`
    (one per run of `ablation_runs`, in its order) stops each run after that many iterations."""
    cap_of = iter(caps) if caps is not None else None
    rows = []
    for variant, spec, (ttft, tbt) in ABLATION:
        if spec is None:
            rows += [row("ablation", f"{variant}: {metric}", None, paper, CHUNK_ONLY_NOTE, "s",
                         ABLATION_SOURCE)
                     for metric, paper in (("P50 TTFT", ttft), ("P99 TBT", tbt))]
            continue
        metrics = [summarize((run if cap_of is None else run.capped(next(cap_of))).simulate())
                   for run in variant_runs(*spec)]
        for metric, paper, values in (
                ("P50 TTFT", ttft, [m.ttft_s.p50 for m in metrics]),
                ("P99 TBT", tbt, [m.tbt_s.p99 for m in metrics])):
            note = (f"Sarathi-Serve at token budget {spec[1]:,}; mean of {len(values)} seeded "
                    f"workloads of {ABLATION_REQUESTS} requests at {ABLATION_QPS:g} QPS, "
                    f"{seed_spread(values)}")
            if spec[1] == ABLATION_BUDGET:
                note += "; the artifact's script runs chunk 512, Table 4 states 1,024"
            rows.append(row("ablation", f"{variant}: {metric}", float(np.mean(values)), paper,
                            note, "s", ABLATION_SOURCE))
    return rows


def seed_spread(values: Sequence[float]) -> str:
    """How far a figure moves over the seeds, in words: its range, at the fewest digits that
    tell the ends apart, and whether one run of 128 requests is a noisy figure (the range over
    NOISY of the mean) or a steady one."""
    low, high = min(values), max(values)
    if low == high:
        return f"all {low:.4g} s: the random draw does not move this figure"
    digits = next(d for d in range(2, 12) if f"{low:.{d}f}" != f"{high:.{d}f}")
    spread = (high - low) / float(np.mean(values))
    shown = f"which range {low:.{digits}f}-{high:.{digits}f} s ({spread:.0%} of their mean)"
    if spread > NOISY:
        return f"{shown}: one run of 128 requests, as the paper's, is a noisy figure"
    return (f"{shown}: the random draw barely moves this figure, and one run of 128 requests, as the "
            "paper's, is enough for it")


# --- DistServe's opening example (goodput, disaggregated vs colocated) ---------------------------
# DistServe (Zhong et al., OSDI 2024, arXiv 2401.09670), section 1 and Figure 1: OPT-13B on
# A100-80GB GPUs, a synthetic workload of 512-token prompts and 64 output tokens, SLOs of P90 TTFT
# 0.4 s and P90 TPOT 0.04 s (Figure 1's red lines; goodput counts the share of requests meeting
# both, at least 90%). Colocated, one GPU sustains 1.6 requests/s; a prefill-only GPU 5.6 and a
# decode-only GPU 10, so 2 prefill + 1 decode GPUs serve min(2 x 5.6, 10) = 10 requests/s, 3.3 per
# GPU: 2.1x per GPU. The paper's own Table 1 targets for the OPT-13B chatbot (0.25 s TTFT, 0.1 s
# TPOT) belong to its evaluation on ShareGPT, not to this example, so the example's are used.
DISTSERVE_SOURCE = ("DistServe paper (arXiv 2401.09670), section 1 and Figure 1: OPT-13B on "
                    "A100-80GB, input 512, output 64, P90 time to first token (TTFT) 0.4 s, P90 "
                    "time per output token (TPOT) 0.04 s")
DISTSERVE_GPU = "a100-80gb"
DISTSERVE_PROMPT, DISTSERVE_OUTPUT = 512, 64
DISTSERVE_SLO = GoodputSlo(ttft_s=0.4, tpot_s=0.04)
DISTSERVE_SPLIT = Disaggregation(2, 1)   # in one node, over the A100's NVLink (as DistServe places)
DISTSERVE_POLICY = "vllm-v0"   # the paper's colocated system, vLLM, prefills whole prompts first
DISTSERVE_COLOCATED_RPS = 1.6
DISTSERVE_DISAGGREGATED_RPS = 10.0
DISTSERVE_RATIO = DISTSERVE_DISAGGREGATED_RPS / DISTSERVE_SPLIT.gpus / DISTSERVE_COLOCATED_RPS
# DistServe's simulator fits for the same model and GPU (docs/sources.md, "DistServe"): the
# lab's iteration times beside them say whether a gap comes from the kernels or the schedule
DISTSERVE_PREFILL_512_S, DISTSERVE_DECODE_32_S = 72.1e-3, 31.5e-3


def distserve_runs(effort: Effort) -> tuple[Callable[[float], Workload], Run]:
    """The example's seeded workload at any rate and its run (the policy at vLLM V0's budget,
    the calibrated A100), colocated; the split is the same run with DISTSERVE_SPLIT."""
    def workload_at(qps: float) -> Workload:
        return poisson(effort.requests, qps, seed=CAPACITY_SEED, lengths="fixed",
                       prompt=DISTSERVE_PROMPT, output=DISTSERVE_OUTPUT)
    sample = workload_at(1.0)
    cost = CostModel(get_gpu(DISTSERVE_GPU), get_model("opt-13b"), MODE)
    return workload_at, Run(workload=sample, policy=get_policy(DISTSERVE_POLICY), cost=cost,
                            budget=unchunked_budget(sample), limits=CAPACITY_LIMITS)


def distserve_rows(effort: Effort = FULL,
                   may_start: Callable[[PolicySpec, int], str | None] | None = None,
                   finished: Callable[[Trace], None] | None = None) -> list[Row]:
    """The per-GPU goodput ratio, 2 prefill + 1 decode GPUs / one colocated GPU; the note gives
    each side's goodput beside the paper's and the lab's iteration times beside DistServe's."""
    workload_at, run = distserve_runs(effort)
    search = dict(rel_tol=effort.rel_tol, may_start=may_start, finished=finished)
    colocated = find_goodput(workload_at, run, DISTSERVE_SLO, **search)
    split = find_goodput(workload_at, replace(run, disaggregation=DISTSERVE_SPLIT), DISTSERVE_SLO,
                         **search)
    proved = colocated.result.capacity_qps > 0 and split.result.capacity_qps > 0
    cost = run.cost
    prefill = cost.price(Composition(chunks=(Chunk(DISTSERVE_PROMPT, 0, True),))).time_s
    decode = cost.price(Composition(decode_contexts=(DISTSERVE_PROMPT,) * 32)).time_s
    link = DISTSERVE_SPLIT.link_for(cost)
    kv = DISTSERVE_PROMPT * cost.kv_bytes_per_token
    note = (f"colocated ({DISTSERVE_POLICY}, one GPU): {colocated.result.capacity_qps:.3g} "
            f"requests/s (paper {DISTSERVE_COLOCATED_RPS:g}); 2 prefill + 1 decode GPUs: "
            f"{split.result.capacity_qps:.3g} requests/s, {split.per_gpu:.3g} per GPU (paper "
            f"{DISTSERVE_DISAGGREGATED_RPS:g}, {DISTSERVE_DISAGGREGATED_RPS / 3:.2g}) "
            f"({effort.describe()}). The lab's iterations are within about 10% of DistServe's "
            f"fits (a 512-token prefill {fmt_seconds(prefill)} vs "
            f"{fmt_seconds(DISTSERVE_PREFILL_512_S)}, a decode step of 32 at 512 of context "
            f"{fmt_seconds(decode)} vs {fmt_seconds(DISTSERVE_DECODE_32_S)}), yet the colocated "
            f"GPU sustains {colocated.result.capacity_qps / DISTSERVE_COLOCATED_RPS:.2g}x the "
            f"paper's rate and the split "
            f"{split.result.capacity_qps / DISTSERVE_DISAGGREGATED_RPS:.2g}x: the paper's rates "
            "are measured on vLLM and its prototype as the paper ran them (their batching, CPU "
            "overheads and tails), the lab's are its engines' schedules on those iteration "
            "times, and the ratio's gap is the colocated side gaining more than the split; no "
            "figure here says which overhead of the paper's vLLM that is. Each hand-off moves "
            f"{fmt_bytes(kv)} over {link.name} in {fmt_seconds(link.transfer_seconds(kv))}")
    for result in (colocated.result, split.result):
        if result.cut_short:
            note += "; " + result.cut_short_words()
    ratio = split.per_gpu / colocated.per_gpu if proved else None
    return [row("distserve-example", "per-GPU goodput ratio, 2 prefill + 1 decode / colocated",
                ratio, DISTSERVE_RATIO, note, "x", DISTSERVE_SOURCE)]


# --- every scenario, by name ------------------------------------------------------------------
SCENARIOS: dict[str, str] = {
    **{name: f"capacity, {s.model} on {s.tp} x {GPU}, P99 TBT SLO {s.tbt_slo_s:g} s, "
             f"Sarathi-Serve budget {s.budget:,} vs {s.baseline}" for name, s in CAPACITY.items()},
    "batch-times": "one iteration's time, Yi-34B TP2: decode-only, hybrid, prefill-only",
    "chunking-overhead": "a prompt's prefill in chunks of 512 and 1,024 vs in one piece, Yi-34B TP2",
    "ablation": "Table 4: hybrid batching only, chunking only, both (Yi-34B TP2, 128 requests)",
    "distserve-example": "DistServe's opening example: per-GPU goodput of 2 prefill + 1 decode "
                         "A100s against one colocated A100, OPT-13B, 512-token prompts, 64 "
                         "output tokens",
}


def check_scenario(name: str) -> str:
    if name not in SCENARIOS:
        raise InputError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}")
    return name


def reproduce(name: str, effort: Effort = FULL, **search) -> list[Row]:
    """Scenario `name`'s rows; `effort` and `search` (may_start, finished) shape a capacity one."""
    if check_scenario(name) in CAPACITY:
        return capacity_rows(name, effort, **search)
    if name == "distserve-example":
        return distserve_rows(effort, **search)
    return {"batch-times": batch_time_rows, "chunking-overhead": chunking_rows,
            "ablation": ablation_rows}[name]()


# --- the shipped results --------------------------------------------------------------------
@dataclass(frozen=True)
class Shipped:
    """The results file: every scenario's rows and how they were made."""
    rows: tuple[Row, ...]
    command: str
    commit: str
    effort: str


def load_shipped(path: Path = SHIPPED_RESULTS) -> Shipped:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = tuple(Row(**r) for r in data["rows"])
        return Shipped(rows, data["command"], data["commit"], data["effort"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"the shipped results {path.name} cannot be read ({e}); regenerate them "
                         "with `python -m benchmarks.reproduce`") from None


def shipped_json(rows: list[Row], command: str, commit: str) -> str:
    return json.dumps({"command": command, "commit": commit, "effort": FULL.describe(),
                       "rows": [r.to_json() for r in rows]}, indent=1, allow_nan=False) + "\n"

