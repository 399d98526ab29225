"""How much work a run is, before it runs: upper bounds on what the engine will do, and the seconds
and bytes that costs, so a command or a page can refuse a run that would not finish in its budget
(with the estimate and what to change) instead of hanging or running out of memory.

`estimate_run` is a pure function of the workload, the policy and its limits, and the cost model.
It counts, from above:

- iterations <= D + P_iterations, where D is the run's decode steps (every output token but the
  first of each new request, all of a streaming request's) and P_iterations bounds the iterations
  that carry a prefill: an unchunked policy finishes at least one prompt in each (<= new
  requests); a chunked one either fills its budget B (<= (P + D) / B such iterations, P the prompt
  tokens) or finishes every prefill it carries (<= new requests). An iteration without a prefill
  steps at least one decoder, so there are at most D of those.
- output tokens and prefill chunk rows (a chunk either finishes its prompt or fills the budget).
- requests running at once (<= requests, max running requests, KV tokens), the engine's changes of
  the running set (each join and leave; today every change stores a snapshot of the whole running
  set, so its bytes are changes x running: with Sarathi-Serve and Orca every running decoder steps
  in every iteration, which bounds the snapshots by S(S+1)/2 + 2 x output tokens for S streaming
  requests), decode rows priced one by one (a sliding-window model), and vLLM V1's copies of the
  running set when its budget skips decoders.

Assumptions: no preemption (the KV cache never runs out; a preempted request's prompt is computed
again, which can add iterations beyond the bound: the engine's iteration cap still stops such a
run); the seconds and bytes per counted item were measured on the project's reference machine (2
shared cores) with a margin (benchmarks/work_bench.py prints measured against estimated).

How tight: tokens are exact; the iteration bound is reached when requests run one at a time and is
loose by up to the number of decoders running together (each decode step is counted as its own
iteration: the worked example's 64 streams take 256 iterations, bounded by 16,458). Seconds stay
within ESTIMATE_FACTOR of the same model applied to the run's real counts: the bound adds at most
2 x ITERATION_S + WINDOW_ITERATION_S + CHUNK_S per decode step (and less per request), while the
real run costs at least TOKEN_S per decode step. Observed: 17x for the worked example, 21x for
3,000 ShareGPT requests at 1,000 QPS, 28x for 1,000 on Mistral-7B (sliding window), under 7x for
the small workloads of tests/sim/test_work.py, which checks both directions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.serving.engine import kv_capacity_tokens
from sim.serving.policies import Limits, PolicySpec
from sim.serving.workloads import Workload

# Per counted item, on the reference machine, with a margin (see benchmarks/work_bench.py).
ITERATION_S = 15e-6           # one engine iteration: plan, price, record
WINDOW_ITERATION_S = 25e-6    # more when a sliding-window model prices its decoders one by one
WINDOW_ROW_S = 2e-8           # and per decode row so priced
TOKEN_S = 5e-7                # one output token: its time, ordering, metrics
CHUNK_S = 2e-6                # one prefill chunk row
REQUEST_S = 4e-5              # one request: bookkeeping, admission, metrics
SNAPSHOT_ELEMENT_S = 3e-8     # one element of a running-set snapshot (copied when stored)
COPY_ELEMENT_S = 1e-8         # one element of vLLM V1's copy of the running set
ITERATION_B = 320             # per-iteration records (Python lists, then arrays)
TOKEN_B = 96                  # token times, owners, sort order, gaps
CHUNK_B = 160
REQUEST_B = 2000              # per-request state and metrics
SNAPSHOT_ELEMENT_B = 12
SNAPSHOT_B = 120              # one snapshot array's header

# the most estimated seconds / seconds of the real counts can be (see the module docstring)
ESTIMATE_FACTOR = 1 + (2 * ITERATION_S + WINDOW_ITERATION_S + CHUNK_S) / TOKEN_S

# Policies in which every running decoder steps in every iteration (never paused by a prefill,
# never capped by the budget), and the one whose budget caps the decoders (policies.py).
EVERY_ITERATION_DECODES = ("sarathi", "orca")
BUDGET_CAPS_DECODES = ("vllm-v1",)


@dataclass(frozen=True)
class Budget:
    """What one command (or one page's run) may take."""
    seconds: float
    bytes: float


CLI_BUDGET = Budget(seconds=60.0, bytes=1.5e9)


@dataclass(frozen=True)
class Counts:
    """What one run does, counted: bounds before it runs (`estimate_run`), or a finished run's
    own counts (`Counts.of_trace`) where the Trace records them."""
    iterations: int
    decode_steps: int          # decode rows over the run
    tokens: int                # entries of Trace.token_s
    chunk_rows: int
    requests: int
    running: int               # requests running at once
    changes: int               # changes of the running set
    snapshot_elements: int     # elements of the running-set snapshots stored at those changes
    copies: int                # elements of vLLM V1's running-set copies
    windowed: bool             # a sliding-window model prices decode rows one by one

    def seconds(self) -> float:
        return (self.iterations * ITERATION_S + self.tokens * TOKEN_S
                + self.chunk_rows * CHUNK_S + self.requests * REQUEST_S
                + self.snapshot_elements * SNAPSHOT_ELEMENT_S + self.copies * COPY_ELEMENT_S
                + (min(self.iterations, self.decode_steps) * WINDOW_ITERATION_S
                   + self.decode_steps * WINDOW_ROW_S if self.windowed else 0.0))

    def bytes(self) -> float:
        return float(self.iterations * ITERATION_B + self.tokens * TOKEN_B
                     + self.chunk_rows * CHUNK_B + self.requests * REQUEST_B
                     + self.snapshot_elements * SNAPSHOT_ELEMENT_B + self.changes * SNAPSHOT_B)

    def with_trace(self, trace) -> Counts:
        """These bounds with what a finished run records replaced by its real counts: the
        iterations, decode rows, tokens and chunk rows (the snapshot and copy terms stay bounds)."""
        return replace(self, iterations=trace.iterations,
                       decode_steps=int(trace.decode_tokens.sum()), tokens=len(trace.token_s),
                       chunk_rows=len(trace.chunk_request))


@dataclass(frozen=True)
class Work:
    """The work of one or more runs: counts per run, seconds and bytes in all."""
    counts: Counts
    seconds: float
    bytes: float
    runs: int = 1

    @classmethod
    def of(cls, counts: Counts) -> Work:
        return cls(counts, counts.seconds(), counts.bytes())

    def plus(self, seconds: float, nbytes: float) -> Work:
        """With more work alongside (drawing a figure of the run, a process's own start)."""
        return replace(self, seconds=self.seconds + seconds, bytes=self.bytes + nbytes)

    def summary(self) -> str:
        c = self.counts
        runs, each = (f"{self.runs:,} runs of ", " each") if self.runs > 1 else ("", "")
        return (f"{runs}up to {c.iterations:,} iterations and {c.tokens:,} output tokens{each}: "
                f"≈ {fmt_work_seconds(self.seconds)} and {fmt_work_bytes(self.bytes)}")

    def over(self, budget: Budget) -> str | None:
        """Which part of `budget` this work exceeds, in words; None when it fits."""
        parts = []
        if self.seconds > budget.seconds:
            parts.append(f"over the {fmt_work_seconds(budget.seconds)} time budget")
        if self.bytes > budget.bytes:
            parts.append(f"over the {fmt_work_bytes(budget.bytes)} memory budget")
        return " and ".join(parts) or None

    def check(self, budget: Budget, what: str, remedy: str) -> None:
        """Raise WorkTooLarge, with the estimate and `remedy` (what to change), when over."""
        over = self.over(budget)
        if over:
            raise WorkTooLarge(f"{what} would take {self.summary()}, {over}; {remedy}")


def combined(works: list[Work]) -> Work:
    """Runs one after another (a sweep): their seconds add up, memory is the largest one's."""
    largest = max(works, key=lambda w: w.seconds)
    return Work(largest.counts, sum(w.seconds for w in works), max(w.bytes for w in works),
                sum(w.runs for w in works))


@dataclass
class WorkAccount:
    """The time a sequence of runs has spent against a budget, counted with the same model from
    each finished run's own counts (deterministic, unlike the wall clock): a search that does not
    know how many runs it needs (capacity) asks before each run whether one more fits."""
    budget: Budget
    spent_s: float = 0.0

    def affords_counts(self, bound: Counts) -> bool:
        """Whether one more run with these bounds fits in what is left."""
        return (self.spent_s + bound.seconds() <= self.budget.seconds
                and bound.bytes() <= self.budget.bytes)

    def charge(self, bound: Counts, trace) -> None:
        """Add a finished run: `bound` (its estimate) with the trace's real counts."""
        self.spent_s += bound.with_trace(trace).seconds()


class WorkTooLarge(InputError):
    """A run refused before it starts: its estimated work is over the budget."""


def fmt_work_seconds(s: float) -> str:
    return f"{s:,.0f} s" if s >= 10 else f"{s:.2g} s"


def fmt_work_bytes(b: float) -> str:
    return f"{b / 1e9:.3g} GB" if b >= 1e9 else f"{b / 1e6:,.0f} MB"


def estimate_counts(workload: Workload, policy: PolicySpec, budget: int, limits: Limits,
                    cost: CostModel) -> Counts:
    """Upper bounds on what one run of `workload` under `policy` does (the module docstring)."""
    prefilled = workload.prefilled
    output = workload.output.astype(np.int64)
    requests = len(workload)
    streaming = int(prefilled.sum())
    new = requests - streaming
    decode_steps = int(output[prefilled].sum() + (output[~prefilled] - 1).sum())
    prompt_tokens = int(workload.prompt[~prefilled].sum())
    prefill_iterations = new + ((prompt_tokens + decode_steps) // budget
                                if policy.chunked else 0)
    running = min(requests, max(limits.max_seqs, streaming), kv_capacity_tokens(cost))
    changes = 1 + 2 * requests
    tokens = int(output.sum()) + streaming          # a stream's previous token is recorded too
    snapshots = 0   # the engine keeps a row per stay in the running set (counted by changes)
    copies = (decode_steps // budget) * running \
        if policy.name in BUDGET_CAPS_DECODES and running > budget else 0
    return Counts(decode_steps + prefill_iterations, decode_steps, tokens,
                  prefill_iterations + new, requests, running, changes, snapshots, copies,
                  cost.model.sliding_window > 0)


def least_iterations(workload: Workload) -> int:
    """A lower bound on any run's iterations: a request emits one token per iteration it takes
    part in (a new one its first at the end of its prefill), so a run takes at least as many
    iterations as its longest output."""
    return int(workload.output.max())


def estimate_run(workload: Workload, policy: PolicySpec, budget: int, limits: Limits,
                 cost: CostModel) -> Work:
    """The work of one run, bounded from above before it starts."""
    return Work.of(estimate_counts(workload, policy, budget, limits, cost))
