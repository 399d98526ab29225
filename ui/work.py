"""How much work a page's runs are before any of them starts, and the limits a page keeps to:
under PAGE_SECONDS and PAGE_BYTES of server memory for one run of a page on this 2-core machine.
Pure Python + numpy (no Streamlit).

A run costs time per iteration of the engine and per token time its trace keeps (one per output
token), and memory per token time. The token times are exact (the workload says how many tokens
each request emits); the iterations are estimated from three rates: how many decoders share an
iteration (at most max_seqs, what fits in the KV cache and, for vLLM V1, the budget; fewer when
arrivals are sparse, by Little's law: arrival rate x how long a request runs), how many prompt
tokens an iteration takes (the budget, less the decodes where they share it; whole prompts for
the unchunked policies), and whether prompt work rides with the decodes or runs alone. The
estimate decides whether a page runs at once, behind a button or not at all; the engine's
iteration cap (the allowance of the page's tier) is what bounds a run whatever the estimate says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sim.cost.iteration import CostModel
from sim.serving.engine import kv_capacity_tokens
from sim.serving.policies import Limits, PolicySpec
from sim.serving.workloads import Workload
from sim.units import fmt_seconds

# What a run costs on this machine (2 cores, shared; benchmarks/limits_bench.py measures them):
SECONDS_PER_ITERATION = 15e-6   # the engine's loop: a policy's batch, its price, the records
SECONDS_PER_WINDOW_ITERATION = 30e-6   # the same for a sliding-window model (Mistral-7B), whose
#                                 attention the engine adds up per chunk with numpy
SECONDS_PER_TOKEN = 150e-9      # a token's time: assembled, sorted, then read by the metrics

# The limits (README "Limits"; the fuzz suite records each page's worst case against them).
PAGE_SECONDS = 10               # one run of any page, whatever its link
PAGE_BYTES = 1 << 30            # server memory one run of a page may add
NOW_SECONDS = 3.0               # estimated work a page does without asking
BUTTON_SECONDS = 60.0           # estimated work a page does behind a button; more is refused
RUN_ITERATIONS = 500_000        # the engine's cap on one run (~2-8 s here)
RUN_TOKENS = 6_000_000          # token times one run may keep (~300 MB while its trace is built)
PAGE_TOKENS = 12_000_000        # token times the traces a page shows together may keep
# what a page may spend, by tier, whatever the estimate said: twice the estimate it allows (a run
# gets the iteration cap that fits in what is left; past it the page stops and says so)
NOW_DEADLINE_S = 2 * NOW_SECONDS
BUTTON_DEADLINE_S = 2 * BUTTON_SECONDS


@dataclass(frozen=True)
class Work:
    """The cost of some runs: `iterations` estimated (or, `seen`, more than that: an earlier run
    stopped at that cap), `tokens` (token times kept) exact, each iteration `iteration_s`."""
    runs: int
    iterations: int
    tokens: int
    iteration_s: float = SECONDS_PER_ITERATION
    seen: bool = False

    @property
    def seconds(self) -> float:
        return self.iterations * self.iteration_s + self.tokens * SECONDS_PER_TOKEN

    def __add__(self, other: Work) -> Work:
        """Both together (a page's runs share a model: the dearer iteration is kept)."""
        return Work(self.runs + other.runs, self.iterations + other.iterations,
                    self.tokens + other.tokens, max(self.iteration_s, other.iteration_s),
                    self.seen or other.seen)

    def more_than(self, iterations: int) -> Work:
        """This work, knowing that it takes more than `iterations` (a cap an earlier run hit)."""
        if iterations < self.iterations:
            return self
        return replace(self, iterations=iterations, seen=True)

    def iterations_in(self, seconds: float) -> int:
        """The iterations of these runs that fit in `seconds`."""
        return int(seconds / self.iteration_s)

    def words(self) -> str:
        """The estimate with its formula (Markdown)."""
        runs = f"{self.runs:,} run{'s' if self.runs != 1 else ''}"
        return (f"{runs}, about {self.iterations:,} iterations × {fmt_seconds(self.iteration_s)}"
                f" + {self.tokens:,} token times × {SECONDS_PER_TOKEN * 1e9:g} ns = "
                f"**{fmt_seconds(self.seconds)}**")


NO_WORK = Work(0, 0, 0, iteration_s=0.0)


def total(works) -> Work:
    return sum(works, NO_WORK)


def tier(work: Work) -> str:
    """"now", "button" (progress and a cancel) or "refuse", by the estimated seconds."""
    if work.seconds <= NOW_SECONDS:
        return "now"
    return "button" if work.seconds <= BUTTON_SECONDS else "refuse"


def too_big(work: Work) -> str | None:
    """Why one run is over the limits of a run, or None."""
    if work.tokens > RUN_TOKENS:
        return (f"its trace would keep {work.tokens:,} token times (one per output token), more "
                f"than the {RUN_TOKENS:,} a run here may keep")
    if work.iterations > RUN_ITERATIONS or work.seen and work.iterations == RUN_ITERATIONS:
        return (f"it needs {'more than' if work.seen else 'about'} {work.iterations:,} "
                f"iterations{'' if work.seen else ' (estimated)'}, and a run here may take at most "
                f"{RUN_ITERATIONS:,}")
    return None


def trace_tokens(workload: Workload) -> int:
    """Token times a trace of `workload` keeps: every output token, and for each request already
    streaming, the token it emitted at arrival."""
    return int(workload.output.sum()) + int(workload.prefilled.sum())


def _decode_time(cost: CostModel, rows: float, context: float) -> float:
    """Seconds of an iteration of `rows` decodes at `context` tokens each."""
    return cost.time(rows, rows * (context + 1), rows * context, rows)[2]


@dataclass(frozen=True)
class _Probe:
    """An engine state for asking a policy what it does: `decoding` decoders running, the
    `waiting` prompts (1 token each), memory to spare."""
    decoding: int
    partial: tuple = ()
    waiting: tuple = (0,)
    free_kv: int = 1 << 30
    kv_watermark: int = 0
    preempted_this_step: bool = False

    def prefill_left(self, request: int) -> int:
        return 1


def fuses(policy: PolicySpec) -> bool:
    """Whether the policy runs prompt work and decodes in the same iteration (Sarathi-Serve,
    vLLM V1, Orca) rather than in turns (vLLM V0, SGLang): asked of the policy itself."""
    batch = policy.plan(_Probe(decoding=1), 2, Limits(max_seqs=4))
    return batch.decodes > 0 and bool(batch.chunks)


def caps_decodes(policy: PolicySpec) -> bool:
    """Whether the budget caps the decodes of an iteration too (vLLM V1)."""
    return policy.plan(_Probe(decoding=3, waiting=()), 2, Limits(max_seqs=4)).decodes < 3


def estimate_iterations(workload: Workload, policy: PolicySpec, cost: CostModel, *, budget: int,
                        max_seqs: int) -> int:
    """The engine's iterations for this run, estimated (see the module's docstring)."""
    prompt_tokens = float(workload.prompt[~workload.prefilled].sum())
    decode_tokens = float(workload.output.sum())
    n = len(workload)
    held = float(np.mean(workload.prompt + workload.output / 2))   # KV a request holds, on average
    rows_cap = min(max_seqs, n, max(1.0, kv_capacity_tokens(cost) / held))
    chunks_beside_decodes = fuses(policy) and policy.chunked
    if caps_decodes(policy):
        rows_cap = min(rows_cap, budget)
    elif chunks_beside_decodes:   # a prompt gets a chunk, and then decodes, only while the
        # decodes leave room in the budget (the decoders streaming from the start aside)
        rows_cap = min(rows_cap, max(budget, int(workload.prefilled.sum())))
    # Little's law: requests in flight = arrival rate x how long a request runs
    span = float(workload.arrival_s[-1] - workload.arrival_s[0])
    rate = (n - 1) / span if span > 0 else math.inf
    rows = rows_cap
    for _ in range(3):   # the iteration time depends on the rows, the rows on the time
        rows = min(rows_cap, max(1.0, rate * decode_tokens / n * _decode_time(cost, rows, held)))
    decode_iterations = decode_tokens / rows
    if not fuses(policy):   # prompt iterations alone: chunks (SGLang) or whole prompts (vLLM V0)
        prompts = workload.prompt[~workload.prefilled] / budget
        iterations = decode_iterations + float(
            prompts.sum() if policy.chunked else np.minimum(1.0, prompts).sum())
    elif not chunks_beside_decodes:   # Orca: whole prompts ride with the decodes, no budget
        iterations = decode_iterations
    elif rows < budget:   # chunks fill the budget beside the decodes
        iterations = max(decode_iterations, (decode_tokens + prompt_tokens) / budget)
    else:   # the decodes fill the budget: prompts wait until decoders finish
        iterations = decode_iterations + prompt_tokens / budget
    # and no request emits more than one token an iteration
    return int(math.ceil(max(iterations, float(workload.output.max()))))


def run_work(workload: Workload, policy: PolicySpec, cost: CostModel, *, budget: int,
             max_seqs: int) -> Work:
    """One run of `workload` under `policy`."""
    return Work(1, estimate_iterations(workload, policy, cost, budget=budget, max_seqs=max_seqs),
                trace_tokens(workload), SECONDS_PER_WINDOW_ITERATION
                if cost.model.sliding_window else SECONDS_PER_ITERATION)
