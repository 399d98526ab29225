"""How much work a run is for this machine, before it runs: what the engine will count, and the
CPU seconds and bytes of memory that costs (the simulator's own effort, not the GPU's time), so a
command or a page can refuse a run that would not finish within its allowance (sim/effort/caps.py)
instead of hanging or running out of memory.

One set of counts (`Counts`: iterations, token times, prefill chunk rows, requests, stays in the
running set, explicit decode rows, passes over the running set, and for a sliding-window model
the iterations and decode rows it prices one by one), one price per counted item (ITEM_COSTS,
measured by `python -m benchmarks.work_bench`), and two estimates of every run side by side
(`estimate_run`), from the workload, the policy's declared behaviour (`PolicySpec`: the flags it
reads are listed in sim/serving/policies.py; read `under` the run's limits, which can change
them) and the cost model, before anything runs:

- the bound (`RunEstimate.bound`): no run does more, item by item. Token times, decode rows,
  requests and stays are exact. Iterations: where the policy under the run's limits
  `finishes_or_fills` (its declared rule, and no chunk cap that stops short), one that carries
  prompt work either finishes a prompt or
  fills the token budget B, so there are at most N + (P + D) / B of them (N new prompts of P
  tokens in all; D decode rows, counted only where the decodes share those iterations); where it
  does not, each computes at least one prompt token, so there are at most P. One without prompt
  work steps at least one decoder, and where every running decoder steps in every iteration (all
  policies but vLLM V1 once its running set can outgrow the token budget), streams that arrive
  together step together, so those iterations number at most the longest output of each such
  group plus each new request's output. Chunk rows: as many as those prompt iterations (a chunk
  finishes its prompt or fills the budget, or holds at least a token). The running set is at
  most the requests, max_seqs and what fits in KV.
- the likely estimate (`RunEstimate.likely`): the same counts with the iterations estimated from
  how many decoders share an iteration (max_seqs, what fits in KV, the token budget where it caps
  the decodes, and Little's law: arrival rate x how long a request runs) and how many prompt
  tokens an iteration takes, then kept between the longest output and the bound. It takes a
  chunked policy's chunks to fill the budget even where the policy declares they may not: such a
  policy's likely iterations can be low, which its caps (the bound, where that fits) absorb.

A run's iterations are always capped (the engine stops at `Limits.max_iterations`), so the most a
run can cost is its bound with the iterations at that cap; sim/effort/caps.py turns an allowance
into each run's cap.

Assumptions: no preemption (the KV cache never runs out; a preempted request's prompt is computed
again, which can exceed the bound: the caps leave what room the allowance has for that, and stop
such a run past it); the prices were measured on the project's reference machine (2 shared
cores) and carry a margin of about 1.5x. How tight the bound and the likely estimate are on real
runs, and how the prices compare with measured CPU time and memory, is what
`python -m benchmarks.work_bench` prints; tests/sim/effort/test_estimate.py checks the bound and
LIKELY_FACTOR under hypothesis and a few runs' memory against its MARGIN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from sim.cost.iteration import CostModel
from sim.serving.disaggregated import round_robin_shares
from sim.serving.engine import RESERVE_FRACTION, kv_capacity_tokens, policy_reserve
from sim.serving.pipeline import (
    dealt,
    pipeline_kv_tokens,
    stage_costs,
    virtual_engine_limits,
)
from sim.serving.policies import Limits, PolicySpec
from sim.serving.run import Run
from sim.serving.workloads import Workload


@dataclass(frozen=True)
class ItemCost:
    """What one counted item costs on the reference machine, with a margin."""
    seconds: float
    bytes: float


# Per counted item (see benchmarks/work_bench.py: measured, fitted, then rounded up with a margin).
ITEM_COSTS = {
    "runs": ItemCost(5e-3, 0),                 # a run's fixed cost: its set-up and metrics
    "iterations": ItemCost(8e-6, 150),         # plan, price, step, record
    "tokens": ItemCost(1e-7, 64),              # a decode row stepped; its time assembled,
    #                                            sorted and measured by the metrics
    "chunk_rows": ItemCost(1e-6, 64),          # a prefill chunk, priced and recorded
    "requests": ItemCost(4e-6, 450),           # arrival, admission, first token, metrics
    "stays": ItemCost(3e-6, 48),               # a decoder's stay in the running set, recorded
    "changes": ItemCost(1.6e-5, 0),            # a join or a leave (of one or more decoders)
    "partial_rows": ItemCost(1.5e-7, 16),      # a decode row recorded one by one (vLLM V1)
    "running_passes": ItemCost(6e-10, 0),      # a running-set element moved at a change or a
    #                                            partial step
    "window_iterations": ItemCost(1.7e-5, 24),  # pricing the decoders one by one (sliding window)
    "window_rows": ItemCost(5e-9, 0),          # and each decode row so priced
    "stage_passes": ItemCost(2e-6, 80),        # a micro-batch through one pipeline stage
}

# The likely estimate keeps within this factor of a run's real iterations, either way
# (tests/sim/effort/test_estimate.py checks it under hypothesis; benchmarks/work_bench.py prints
# the factors it measures).
LIKELY_FACTOR = 4.0


@dataclass(frozen=True)
class Counts:
    """What one run does (or several together), counted: priced item by item by ITEM_COSTS."""
    runs: int = 0
    iterations: int = 0
    tokens: int = 0               # token times (every output token, and each stream's last one)
    chunk_rows: int = 0
    requests: int = 0
    stays: int = 0                # stays in the running set (a join, then a leave)
    changes: int = 0              # joins and leaves of the running set (several decoders each)
    partial_rows: int = 0         # decode rows of iterations where the budget skipped decoders
    running_passes: int = 0       # running-set elements moved at its changes and partial steps
    window_iterations: int = 0    # iterations whose decoders a sliding window prices one by one
    window_rows: int = 0          # decode rows so priced
    stage_passes: int = 0         # micro-batches x pipeline stages (sim/serving/pipeline.py)

    def seconds(self) -> float:
        return sum(getattr(self, name) * cost.seconds for name, cost in ITEM_COSTS.items())

    def bytes(self) -> float:
        return float(sum(getattr(self, name) * cost.bytes for name, cost in ITEM_COSTS.items()))

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def stages(self) -> float:
        """Pipeline stages each iteration passes (0 without a pipeline)."""
        return self.stage_passes / self.iterations if self.iterations else 0.0

    def with_iterations(self, iterations: int) -> Counts:
        """These counts with `iterations` instead: fewer (a cap) keep at most as many window
        iterations; more count every added one as windowed when the run has any (upper bounds);
        each passes the same pipeline stages."""
        window = min(iterations, self.window_iterations
                     + max(0, iterations - self.iterations)) if self.window_iterations else 0
        return replace(self, iterations=iterations, window_iterations=window,
                       stage_passes=math.ceil(self.stages * iterations))

    def iterations_within(self, seconds: float, nbytes: float = math.inf) -> int:
        """The most iterations these counts can have within `seconds` and `nbytes` (0 if the
        rest alone does not fit)."""
        rest = self.with_iterations(0)
        windowed = bool(self.window_iterations)
        per_s = ITEM_COSTS["iterations"].seconds + windowed * ITEM_COSTS["window_iterations"].seconds \
            + self.stages * ITEM_COSTS["stage_passes"].seconds
        per_b = ITEM_COSTS["iterations"].bytes + windowed * ITEM_COSTS["window_iterations"].bytes \
            + self.stages * ITEM_COSTS["stage_passes"].bytes
        return max(0, int(min((seconds - rest.seconds()) / per_s, (nbytes - rest.bytes()) / per_b)))

    @classmethod
    def of_trace(cls, trace, windowed: bool) -> Counts:
        """A finished run's own counts, from its Trace (`windowed`: its model has a sliding
        window)."""
        running = trace.running_decoders
        joins, leaves = np.unique(trace.member_first), np.unique(trace.member_stop - 1)
        passes = sum(int(running[at].sum()) for at in (
            joins, leaves, np.unique(trace.partial_step_iteration)))
        decoding = trace.decode_tokens > 0
        return cls(1, trace.iterations, len(trace.token_s), len(trace.chunk_request),
                   len(trace.prompt), len(trace.member_request), len(joins) + len(leaves),
                   len(trace.partial_step_request), passes,
                   int(decoding.sum()) if windowed else 0,
                   int(trace.decode_tokens.sum()) if windowed else 0)


@dataclass(frozen=True)
class RunEstimate:
    """One run, estimated before it starts: its likely counts and its bound (module docstring),
    the fewest iterations it can take (its longest output) and its own iteration cap."""
    likely: Counts
    bound: Counts
    least_iterations: int
    cap: int

    @property
    def most_iterations(self) -> int:
        """What the run can never exceed: its bound, or the cap that stops it."""
        return min(self.bound.iterations, self.cap)

    def iterations_at(self, scale: float) -> int:
        """An iteration cap of `scale` times its likely iterations, within what it can take."""
        wanted = max(self.least_iterations, math.ceil(scale * self.likely.iterations))
        return min(self.most_iterations, wanted)

    def most(self, cap: int | None = None) -> Counts:
        """The most this run can do when stopped at `cap` iterations (at most its own cap), or
        by default its bound within its own cap. A cap above the bound is priced as that many
        iterations: a preempted prompt computed again can take the run past its bound."""
        if cap is None:
            return self.bound.with_iterations(self.most_iterations)
        return self.bound.with_iterations(min(self.cap, cap))


# --- the estimates ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Shape:
    """What the estimates read of a workload, computed once."""
    requests: int
    streams: int
    new: int
    prompt_tokens: int          # of the new requests
    decode_rows: int            # every output token but the first of each new request
    tokens: int                 # token times
    stays: int                  # new requests that decode, and the streams
    longest: int                # the longest output
    group_steps: int            # the streams' longest output per arrival time, summed
    new_steps: int              # the new requests' decode rows
    join_groups: int            # arrival times of streams
    leave_groups: int           # (arrival time, output) pairs of streams

    @classmethod
    def of(cls, w: Workload) -> _Shape:
        output = w.output.astype(np.int64)
        streams = int(w.prefilled.sum())
        new_output = output[~w.prefilled]
        new_steps = int((new_output - 1).sum())
        stream_arrival, stream_output = w.arrival_s[w.prefilled], output[w.prefilled]
        groups, group = np.unique(stream_arrival, return_inverse=True)
        longest_per_group = np.zeros(len(groups), np.int64)
        np.maximum.at(longest_per_group, group, stream_output)
        leave_groups = len(np.unique(np.c_[group, stream_output], axis=0)) if streams else 0
        return cls(len(w), streams, len(w) - streams, int(w.prompt[~w.prefilled].sum()),
                   int(stream_output.sum()) + new_steps, token_times(w),
                   streams + int((new_output > 1).sum()), int(output.max()),
                   int(longest_per_group.sum()), new_steps, len(groups), leave_groups)


def _kv_tokens_at_most(policy: PolicySpec, cost: CostModel, budget: int) -> int:
    """The most KV tokens the run can have: its engine's capacity, or the lab's 10% reserve's
    where that leaves more (never below what the engine gets)."""
    return kv_capacity_tokens(cost, min(RESERVE_FRACTION, policy_reserve(policy, cost, budget)))


def _running_bound(w: Workload, shape: _Shape, limits: Limits, kv_tokens: int) -> int:
    """Decoders running at once, at most: the requests, max_seqs (streams that arrived before
    may join beyond it) and what fits in KV (each holds at least its prompt)."""
    return min(shape.requests, limits.max_seqs + shape.streams,
               kv_tokens // max(1, int(w.prompt.min())))


def _streams_after_prompts(w: Workload) -> bool:
    """Whether a stream can arrive after a new prompt, and so join the running list behind a
    partial prefill (a partial prefill still running took the whole budget, so nothing admitted
    after it joins the list while it runs: only such streams can be behind it)."""
    new = w.arrival_s[~w.prefilled]
    return bool(len(new) and np.any(w.arrival_s[w.prefilled] > new.min()))


def _bound(w: Workload, shape: _Shape, policy: PolicySpec, budget: int, limits: Limits,
           cost: CostModel) -> Counts:
    """Upper bounds on one run's counts (the module docstring)."""
    running = _running_bound(w, shape, limits, _kv_tokens_at_most(policy, cost, budget))
    # a decoder may skip a step only where the running set can outgrow what one step takes: the
    # budget, where it caps the decodes, or max_seqs (which streams arriving late can pass), or
    # a partial prefill ahead of them in the running list (vLLM V1)
    per_step = min(budget, limits.max_seqs) if policy.budget_caps_decodes else limits.max_seqs
    skips = running > per_step or (policy.prefill_ahead_of_decodes and _streams_after_prompts(w))
    if policy.finishes_or_fills(limits):
        shared = shape.decode_rows if policy.prefill_with_decodes else 0
        prefill_iterations = shape.new + ((shape.prompt_tokens + shared) // budget
                                          if policy.chunked else 0)
    else:   # each iteration with prompt work computes at least one prompt token
        prefill_iterations = shape.prompt_tokens
    decode_only = shape.decode_rows if skips else shape.group_steps + shape.new_steps
    iterations = prefill_iterations + decode_only
    partial_iterations = shape.decode_rows // per_step if skips else 0
    new_stays = shape.stays - shape.streams
    if skips:
        changes = 2 * shape.stays
    else:   # streams that arrive together join together, and leave together by their output
        changes = shape.join_groups + shape.leave_groups + 2 * new_stays
    windowed = cost.model.sliding_window > 0
    # chunk rows: each finishes its prompt or fills the budget (or holds a token): the same bound
    return Counts(runs=1, iterations=iterations, tokens=shape.tokens,
                  chunk_rows=prefill_iterations, requests=shape.requests, stays=shape.stays,
                  changes=changes, partial_rows=shape.decode_rows if skips else 0,
                  running_passes=(changes + partial_iterations) * running,
                  window_iterations=min(iterations, shape.decode_rows) if windowed else 0,
                  window_rows=shape.decode_rows if windowed else 0)


def _decode_time(cost: CostModel, rows: float, context: float) -> float:
    """Seconds of an iteration of `rows` decodes at `context` tokens each."""
    return cost.time(rows, rows * (context + 1), rows * context, rows)[2]


def _likely_rows(w: Workload, policy: PolicySpec, budget: int, limits: Limits,
                 cost: CostModel, cadence: int = 1) -> float:
    """Decoders sharing an iteration, likely: at most max_seqs, what fits in KV and, where the
    budget caps the decodes, the budget; fewer when arrivals are sparse (Little's law, a step
    taking `cadence` iterations of `cost`), but no fewer than arrive together (a request's group
    of arrivals at one instant, averaged over the requests: Little's law over the whole span
    spreads a burst thin)."""
    n = len(w)
    held = float(np.mean(w.prompt + w.output / 2))   # KV a request holds, on average
    cap = min(limits.max_seqs, n, max(1.0, _kv_tokens_at_most(policy, cost, budget) / held))
    if policy.budget_caps_decodes:
        cap = min(cap, budget)
    elif policy.prefill_with_decodes and policy.chunked:
        # a prompt gets a chunk, and then decodes, only while the decodes leave room in the
        # budget (the decoders streaming from the start aside)
        cap = min(cap, max(budget, int(w.prefilled.sum())))
    span = float(w.arrival_s[-1] - w.arrival_s[0])
    rate = (n - 1) / span if span > 0 else math.inf
    decode_tokens = float(w.output.sum())
    _, together = np.unique(w.arrival_s, return_counts=True)
    at_once = float(np.sum(together.astype(float) ** 2)) / n
    rows = cap
    for _ in range(3):   # the iteration time depends on the rows, the rows on the time
        rows = min(cap, max(1.0, at_once,
                            rate * decode_tokens / n * cadence * _decode_time(cost, rows, held)))
    return rows


def _likely_iterations(w: Workload, policy: PolicySpec, budget: int, rows: float) -> float:
    """Iterations from the rows and from how many prompt tokens an iteration takes."""
    prompt_tokens = float(w.prompt[~w.prefilled].sum())
    decode_tokens = float(w.output.sum())
    decode_iterations = decode_tokens / rows
    if not policy.prefill_with_decodes:   # prompt iterations alone: chunks (SGLang) or whole
        prompts = w.prompt[~w.prefilled] / budget            # prompts (vLLM V0)
        return decode_iterations + float(
            prompts.sum() if policy.chunked else np.minimum(1.0, prompts).sum())
    if not policy.chunked:   # Orca: whole prompts ride with the decodes, no budget
        return decode_iterations
    if rows < budget:   # chunks fill the budget beside the decodes
        return max(decode_iterations, (decode_tokens + prompt_tokens) / budget)
    return decode_iterations + prompt_tokens / budget   # the decodes fill the budget: prompts
    #                                                     wait until decoders finish


def _likely(w: Workload, shape: _Shape, bound: Counts, policy: PolicySpec, budget: int,
            limits: Limits, cost: CostModel, cadence: int = 1) -> Counts:
    """One run's counts, likely (the module docstring), each within its bound; `cadence`: the
    iterations of `cost` between two of a request's steps (a pipeline's virtual engine steps
    once its micro-batch has passed every stage)."""
    rows = _likely_rows(w, policy, budget, limits, cost, cadence)
    iterations = min(bound.iterations, max(shape.longest, math.ceil(
        _likely_iterations(w, policy, budget, rows))))
    if policy.chunked:
        chunk = budget - rows if policy.decodes_take_budget and rows < budget else budget
        chunk_rows = min(bound.chunk_rows, int(np.ceil(w.prompt[~w.prefilled] / chunk).sum()))
    else:
        chunk_rows = shape.new
    capped = policy.budget_caps_decodes and rows >= budget
    partial_iterations = shape.decode_rows // budget if capped else 0
    changes = min(bound.changes, 2 * iterations)
    windowed = bound.window_rows > 0
    return Counts(runs=1, iterations=iterations, tokens=shape.tokens, chunk_rows=chunk_rows,
                  requests=shape.requests, stays=shape.stays, changes=changes,
                  partial_rows=min(bound.partial_rows, shape.decode_rows if capped else 0),
                  running_passes=min(bound.running_passes,
                                     round((changes + partial_iterations) * rows)),
                  window_iterations=min(iterations, math.ceil(shape.decode_rows / rows))
                  if windowed else 0,
                  window_rows=bound.window_rows)


def token_times(workload: Workload) -> int:
    """Token times a trace of `workload` keeps: every output token, and for each request already
    streaming, the token it emitted at arrival."""
    return int(workload.output.sum()) + int(workload.prefilled.sum())


def least_iterations(workload: Workload) -> int:
    """A lower bound on any run's iterations: a request emits one token per iteration it takes
    part in (a new one its first at the end of its prefill), so a run takes at least as many
    iterations as its longest output."""
    return int(workload.output.max())


def estimate_run(run: Run) -> RunEstimate:
    """One run, estimated before it starts (the module docstring): read whole, so a field a run
    gains reaches the estimate; the policy as it runs under its limits (`PolicySpec.under`)."""
    if run.pipeline is not None and run.pipeline.stages > 1:
        return _pipelined(run)
    if run.disaggregation is not None:
        return _disaggregated(run)
    workload, budget, limits, cost = run.workload, run.budget, run.limits, run.cost
    policy = run.policy.under(limits)
    shape = _Shape.of(workload)
    bound = _bound(workload, shape, policy, budget, limits, cost)
    return RunEstimate(_likely(workload, shape, bound, policy, budget, limits, cost), bound,
                       shape.longest, limits.max_iterations)


def _pipelined(run: Run) -> RunEstimate:
    """A run through pipeline stages: the sum of its virtual engines' runs, each its share of the
    requests and of the running requests on the first stage's cost model (sim/serving/
    pipeline.py), a step of its requests every `stages` stage times, every micro-batch also
    passing each stage. The KV each engine is estimated with is its stage's whole pool, more than
    its share: the bound stays a bound."""
    stages, budget, cost = run.pipeline.stages, run.budget, run.cost
    costs = stage_costs(cost.for_engine(run.policy.overhead), run.pipeline)
    pipeline_kv_tokens(costs, policy_reserve(run.policy, cost, budget))   # refused as the run is
    policy = run.policy.under(run.limits)
    bounds, likelies = [], []
    for _, share in dealt(run.workload, stages):
        limits = virtual_engine_limits(run.limits, share, stages)
        shape = _Shape.of(share)
        bounds.append(_bound(share, shape, policy, budget, limits, costs[0]))
        likelies.append(_likely(share, shape, bounds[-1], policy, budget, limits, costs[0],
                                cadence=stages))
    likely, bound = (sum(parts[1:], parts[0]) for parts in (likelies, bounds))
    likely = replace(likely, stage_passes=likely.iterations * stages)
    bound = replace(bound, stage_passes=bound.iterations * stages)
    return RunEstimate(likely, bound, least_iterations(run.workload), run.limits.max_iterations)


def _disaggregated(run: Run) -> RunEstimate:
    """A run on a prefill and a decode pool (sim/serving/disaggregated.py): the sum of its
    instances' runs, each one engine at its pool's tp on its round-robin share: a prefill
    instance's prompts with one output token each, a decode instance's requests whole (their
    prefill counted too, and an even share where the run routes by free KV: a bound, not an
    exact count)."""
    split = run.disaggregation
    prefill_cost, decode_cost = split.pool_costs(run.cost)
    alone = replace(run, disaggregation=None)
    parts = [estimate_run(replace(alone, workload=share, cost=prefill_cost))
             for share in split.prefill_shares(run.workload, run.cost.tp)]
    every = len(run.workload)   # a decode instance keeps a row for each request it may be given
    for share in round_robin_shares(run.workload, split.instances(run.cost.tp)[1]):
        part = estimate_run(replace(alone, workload=share, cost=decode_cost))
        parts.append(replace(part, likely=replace(part.likely, requests=every),
                             bound=replace(part.bound, requests=every)))
    likely, bound = (sum((getattr(p, kind) for p in parts[1:]), getattr(parts[0], kind))
                     for kind in ("likely", "bound"))
    return RunEstimate(likely, bound, least_iterations(run.workload), run.limits.max_iterations)

