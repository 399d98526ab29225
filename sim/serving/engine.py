"""The step engine: ask the policy for a batch, price it, advance the clock, emit tokens.

Tokens come out at the end of the iteration that produced them. KV memory is counted in tokens:
capacity = (GPU memory - weights - reserve) / KV bytes per token. Admission follows the policy
(whole prompt reserved, or KV per chunk); when a decode step cannot get KV, the newest running
request is preempted and recomputed later (its KV is freed and its prompt plus the tokens it had
generated are prefilled again).

Fast by construction: running decoders live in numpy arrays, and a decode step that moves every
decoder costs O(1): context and finish times are stored relative to a decode clock that ticks once
per step. Per-token times are assembled once at the end from which decoders stepped in which
iteration (a membership snapshot shared by every iteration until someone joins or leaves).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from sim.cost.iteration import CostModel, attended_pairs
from sim.errors import InputError, check_number
from sim.serving.policies import Batch, Limits, PolicySpec
from sim.serving.workloads import Workload
from sim.units import fmt_bytes

DEFAULT_MAX_ITERATIONS = 2_000_000
MAX_ITERATION_CAP = 5_000_000   # ~20 s and ~2 GB here: the most any one run may take
RESERVE_FRACTION = 0.10   # vLLM's gpu_memory_utilization=0.9 leaves 10% for activations etc.


class SimulationLimitError(InputError):
    """The run needed more iterations than the cap allows."""


@dataclass(frozen=True, eq=False)
class Trace:
    """Everything a run produced, columnar. Times in seconds."""

    policy: str
    budget: int
    kv_capacity_tokens: int
    # per iteration
    start_s: np.ndarray
    end_s: np.ndarray
    decode_tokens: np.ndarray
    prefill_tokens: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    kv_used_tokens: np.ndarray
    # prefill rows: which request, from which prompt position, how many tokens, in which iteration
    chunk_iteration: np.ndarray
    chunk_request: np.ndarray
    chunk_start: np.ndarray
    chunk_length: np.ndarray
    # per request
    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    prefilled: np.ndarray
    preemptions: np.ndarray
    recomputed_tokens: np.ndarray
    # token emission times, CSR by request: times of request r are token_s[token_offsets[r]:[r+1]]
    token_offsets: np.ndarray
    token_s: np.ndarray
    # decode rows: iteration i stepped decode_snapshots[decode_snapshot[i]][:decode_tokens[i]]
    decode_snapshot: np.ndarray
    decode_snapshots: list = field(repr=False)
    notes: tuple[str, ...] = ()
    starved_iterations: int = 0
    # per iteration: requests preempted to make room for it (KV full), for when it happened
    iteration_preemptions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def iterations(self) -> int:
        return len(self.start_s)

    @property
    def duration_s(self) -> np.ndarray:
        return self.end_s - self.start_s

    @property
    def bound(self) -> np.ndarray:
        return np.where(self.compute_s >= self.memory_s, "compute", "memory")

    def tokens_of(self, request: int) -> np.ndarray:
        return self.token_s[self.token_offsets[request]:self.token_offsets[request + 1]]

    def decode_rows(self, iteration: int) -> np.ndarray:
        """Request ids of the decode rows of one iteration."""
        return self.decode_snapshots[self.decode_snapshot[iteration]][:self.decode_tokens[iteration]]


def kv_capacity_bytes(cost: CostModel, reserve_fraction: float = RESERVE_FRACTION) -> float:
    """Memory left for the KV cache on each GPU: memory x (1 - reserve fraction) - its weights."""
    return cost.gpu.memory_bytes * (1 - reserve_fraction) - cost.weight_bytes


def kv_capacity_tokens(cost: CostModel, reserve_fraction: float = RESERVE_FRACTION) -> int:
    """KV tokens that fit beside the weights, keeping `reserve_fraction` of memory back. With
    tensor parallelism each GPU holds its share of the weights and of every token's KV."""
    gpu, model = cost.gpu, cost.model
    free = kv_capacity_bytes(cost, reserve_fraction)
    if free <= 0:
        share = f" (1/{cost.tp} per GPU)" if cost.tp > 1 else ""
        raise InputError(
            f"{model.name} weights ({fmt_bytes(cost.weight_bytes, binary=False)}{share}) do not "
            f"fit in {gpu.name} memory ({fmt_bytes(gpu.memory_bytes, binary=False)} less a "
            f"{reserve_fraction:.0%} reserve); choose a larger GPU, more GPUs (tp) or a smaller "
            "model")
    return int(free // cost.kv_bytes_per_token)


class _Engine:
    """Mutable run state; also the `State` view that policies read."""

    def __init__(self, workload: Workload, spec: PolicySpec, limits: Limits, cost: CostModel,
                 reserve_fraction: float, max_iterations: int):
        self.w, self.spec, self.limits, self.cost = workload, spec, limits, cost
        self.max_iterations = max_iterations
        self.capacity = kv_capacity_tokens(cost, reserve_fraction)
        self.kv_watermark = int(spec.kv_watermark * self.capacity)
        self.window = cost.model.sliding_window
        n = len(workload)
        self.prompt = workload.prompt.tolist()
        self.output = workload.output.tolist()
        self.target = list(self.prompt)        # tokens a prefill must compute (grows on recompute)
        self.computed = [0] * n
        self.generated = [0] * n
        self.kv_held = [0] * n                 # partial prefills only; decoders hold their context
        self.admit_seq = [0] * n
        self.preemptions = [0] * n
        self.recomputed = [0] * n
        self.partial: list[int] = []
        self.waiting: deque[int] = deque()
        self.used_kv = 0
        self.preempted_this_step = False
        self.unrecorded_preemptions = 0   # since the last iteration that ran
        self.next_seq = 0
        # running decoders, in admission order; context = ctx_base + clock, done when clock == finish
        self.clock = 0
        self.dec_ids = np.empty(0, np.int64)
        self.dec_seq = np.empty(0, np.int64)
        self.dec_base = np.empty(0, np.int64)
        self.dec_finish = np.empty(0, np.int64)
        self.base_sum = 0
        self.next_finish = np.iinfo(np.int64).max
        self.snapshots = [self.dec_ids]
        self.starved = 0

    # --- the State protocol ---------------------------------------------------------------
    @property
    def decoding(self) -> int:
        return len(self.dec_ids)

    @property
    def free_kv(self) -> int:
        return self.capacity - self.used_kv

    def prefill_left(self, request: int) -> int:
        return self.target[request] - self.computed[request]

    # --- decoder set ----------------------------------------------------------------------
    def _set_decoders(self, ids, seq, base, finish):
        self.dec_ids, self.dec_seq, self.dec_base, self.dec_finish = ids, seq, base, finish
        self.base_sum = int(base.sum())
        self.next_finish = int(finish.min()) if len(finish) else np.iinfo(np.int64).max
        self.snapshots.append(ids)

    def _join(self, requests: list[int]):
        """Requests whose prefill just completed start decoding (kept in admission order)."""
        seq = np.array([self.admit_seq[r] for r in requests], np.int64)
        ctx = np.array([self.target[r] for r in requests], np.int64)
        left = np.array([self.output[r] - self.generated[r] for r in requests], np.int64)
        at = np.searchsorted(self.dec_seq, seq)
        self._set_decoders(np.insert(self.dec_ids, at, requests), np.insert(self.dec_seq, at, seq),
                           np.insert(self.dec_base, at, ctx - self.clock),
                           np.insert(self.dec_finish, at, self.clock + left))

    def _leave(self, mask: np.ndarray) -> np.ndarray:
        """Remove decoders under `mask`; free their KV; return their ids."""
        gone = self.dec_ids[mask]
        self.used_kv -= int((self.dec_base[mask] + self.clock).sum())
        keep = ~mask
        self._set_decoders(self.dec_ids[keep], self.dec_seq[keep], self.dec_base[keep],
                           self.dec_finish[keep])
        return gone

    def _add_streaming(self, request: int):
        """A request already decoding at arrival (the seed's running decoders)."""
        self.admit_seq[request] = self.next_seq
        self.next_seq += 1
        self.used_kv += self.prompt[request]
        self._join([request])

    # --- preemption -----------------------------------------------------------------------
    def _preempt_newest(self):
        """Free the newest running request's KV; it goes back to the head of the queue and its
        prompt plus generated tokens are recomputed."""
        newest_partial = max(self.partial, key=self.admit_seq.__getitem__, default=None)
        newest_decoder = int(np.argmax(self.dec_seq)) if len(self.dec_seq) else None
        if newest_decoder is None and newest_partial is None:
            raise RuntimeError("KV exhausted with nothing to preempt")
        if newest_partial is not None and (
                newest_decoder is None
                or self.admit_seq[newest_partial] > self.dec_seq[newest_decoder]):
            victim = newest_partial
            self.partial.remove(victim)
            self.used_kv -= self.kv_held[victim]
            self.recomputed[victim] += self.computed[victim]
        else:
            victim = int(self.dec_ids[newest_decoder])
            self.generated[victim] = self.output[victim] - int(
                self.dec_finish[newest_decoder] - self.clock)
            mask = np.zeros(len(self.dec_ids), bool)
            mask[newest_decoder] = True
            self.recomputed[victim] += self.prompt[victim] + self.generated[victim]
            self._leave(mask)
        self.target[victim] = self.prompt[victim] + self.generated[victim]
        self.computed[victim] = 0
        self.kv_held[victim] = 0
        self.preemptions[victim] += 1
        self.waiting.appendleft(victim)

    def _kv_needed(self, batch: Batch) -> int:
        need = batch.decodes
        if self.spec.reserve_whole_prompt:
            need += sum(self.prefill_left(r) for r in batch.admitted)
        else:
            need += sum(take for _, take in batch.chunks)
        return need

    def _plan(self) -> Batch:
        """The policy's batch, after preempting until its KV fits."""
        self.preempted_this_step = False
        while True:
            batch = self.spec.build(self, self.limits)
            if self._kv_needed(batch) <= self.free_kv:
                return batch
            self._preempt_newest()
            self.preempted_this_step = True
            self.unrecorded_preemptions += 1

    # --- the loop -------------------------------------------------------------------------
    def run(self) -> Trace:
        w = self.w
        arrivals = w.arrival_s.tolist()
        prefilled = w.prefilled.tolist()
        n = len(arrivals)
        rec_start, rec_end, rec_dec, rec_pre, rec_c, rec_m, rec_kv, rec_snap, rec_evict = (
            [] for _ in range(9))
        ch_it, ch_req, ch_start, ch_len = [], [], [], []
        first_it, first_req = [], []
        now, nxt, finished, it = 0.0, 0, 0, 0
        cost_time = self.cost.time
        window = self.window
        while finished < n:
            while nxt < n and arrivals[nxt] <= now:
                if prefilled[nxt]:
                    self._add_streaming(nxt)
                else:
                    self.waiting.append(nxt)
                nxt += 1
            batch = self._plan()
            k = batch.decodes
            if k == 0 and not batch.chunks:
                if nxt < n:
                    now = arrivals[nxt]
                    continue
                raise RuntimeError("the scheduler made no progress with work left")
            if it >= self.max_iterations:
                raise SimulationLimitError(
                    f"the run needed more than {self.max_iterations:,} iterations (the cap); "
                    "shorten the workload or raise the iteration cap")
            if self.spec.decodes_take_budget and (self.waiting or self.partial) \
                    and not batch.chunks and k >= self.limits.budget:
                self.starved += 1
            for _ in batch.admitted:
                request = self.waiting.popleft()
                self.admit_seq[request] = self.next_seq
                self.next_seq += 1
                self.partial.append(request)
                if self.spec.reserve_whole_prompt:
                    self.kv_held[request] = self.prefill_left(request)
                    self.used_kv += self.kv_held[request]
            # price the iteration from aggregates
            # price the iteration from aggregates (cost.CostModel.aggregates, kept O(1) in the
            # number of decoders when there is no sliding window)
            if window and k:
                ctx = self.dec_base[:k] + self.clock
                attended = float(attended_pairs(ctx, 1, window).sum())
                kv_read = float(np.minimum(ctx, window).sum())
            else:
                kv_read = (self.base_sum + k * self.clock if k == len(self.dec_ids)
                           else int(self.dec_base[:k].sum()) + k * self.clock)
                attended = kv_read + k             # each decode attends to its context + itself
            tokens, rows, completed = k, k, []
            for request, take in batch.chunks:
                prefix = self.computed[request]
                attended += attended_pairs(prefix, take, window)
                kv_read += min(prefix, window) if window else prefix
                tokens += take
                ch_it.append(it), ch_req.append(request), ch_start.append(prefix), ch_len.append(take)
                self.computed[request] = prefix + take
                if not self.spec.reserve_whole_prompt:
                    self.kv_held[request] += take
                    self.used_kv += take
                if prefix + take == self.target[request]:
                    completed.append(request)
                    rows += 1
            compute_s, memory_s, time_s = cost_time(tokens, float(attended), float(kv_read), rows)
            rec_start.append(now)
            now += time_s
            rec_end.append(now), rec_dec.append(k), rec_pre.append(tokens - k)
            rec_c.append(compute_s), rec_m.append(memory_s), rec_snap.append(len(self.snapshots) - 1)
            # decoders step: one token each, one more KV token each
            if k:
                self.used_kv += k
                if k < len(self.dec_ids):   # the budget skipped the tail: it does not advance
                    self.dec_base = self.dec_base.copy()
                    self.dec_finish = self.dec_finish.copy()
                    self.dec_base[k:] -= 1
                    self.dec_finish[k:] += 1
                    self.base_sum = int(self.dec_base.sum())
                    self.next_finish = int(self.dec_finish.min())
                self.clock += 1
                if self.clock >= self.next_finish:
                    finished += len(self._leave(self.dec_finish <= self.clock))
            # completed prefills emit their next token, then decode or finish
            if completed:
                joining = []
                for request in completed:
                    self.partial.remove(request)
                    first_it.append(it), first_req.append(request)
                    self.generated[request] += 1
                    if self.generated[request] >= self.output[request]:
                        finished += 1
                        self.used_kv -= self.kv_held[request]
                    else:
                        joining.append(request)
                        # its KV stays allocated, now counted as decoder context
                        self.used_kv += self.target[request] - self.kv_held[request]
                    self.kv_held[request] = 0
                if joining:
                    self._join(joining)
            rec_kv.append(self.used_kv)
            rec_evict.append(self.unrecorded_preemptions)
            self.unrecorded_preemptions = 0
            it += 1
        return self._trace(rec_start, rec_end, rec_dec, rec_pre, rec_c, rec_m, rec_kv, rec_snap,
                           (ch_it, ch_req, ch_start, ch_len), (first_it, first_req), rec_evict)

    def _trace(self, start, end, dec, pre, comp, mem, kv, snap, chunks, firsts, evict) -> Trace:
        end_s = np.asarray(end, np.float64)
        dec = np.asarray(dec, np.int64)
        snap = np.asarray(snap, np.int64)
        req_parts, time_parts = [], []
        # decode tokens: group runs of iterations sharing (snapshot, k)
        if len(dec):
            change = np.flatnonzero((np.diff(snap) != 0) | (np.diff(dec) != 0)) + 1
            bounds = np.r_[0, change, len(dec)]
            for a, b in zip(bounds[:-1], bounds[1:]):
                k = dec[a]
                if k:
                    ids = self.snapshots[snap[a]][:k]
                    req_parts.append(np.tile(ids, b - a))
                    time_parts.append(np.repeat(end_s[a:b], k))
        first_it, first_req = firsts
        req_parts.append(np.asarray(first_req, np.int64))
        time_parts.append(end_s[np.asarray(first_it, np.int64)] if first_it else np.empty(0))
        streaming = np.flatnonzero(self.w.prefilled)   # their previous token, at arrival
        req_parts.append(streaming)
        time_parts.append(self.w.arrival_s[streaming])
        reqs = np.concatenate(req_parts)
        times = np.concatenate(time_parts)
        order = np.lexsort((times, reqs))
        counts = np.bincount(reqs, minlength=len(self.w))
        notes = []
        if self.starved:
            notes.append(
                f"starvation: in {self.starved:,} iterations the running decodes used the whole "
                f"budget of {self.limits.budget:,} tokens and waiting prompts got none (budget <= "
                "decodes: new requests wait until decoders finish)")
        if any(self.preemptions):
            notes.append(f"{sum(1 for p in self.preemptions if p)} requests were preempted "
                         f"(KV full) and recomputed {sum(self.recomputed):,} tokens")
        ch = [np.asarray(c, np.int64) for c in chunks]
        return Trace(self.spec.name, self.limits.budget, self.capacity,
                     np.asarray(start, np.float64), end_s, dec, np.asarray(pre, np.int64),
                     np.asarray(comp, np.float64), np.asarray(mem, np.float64),
                     np.asarray(kv, np.int64), *ch,
                     self.w.arrival_s, self.w.prompt, self.w.output, self.w.prefilled,
                     np.asarray(self.preemptions, np.int64), np.asarray(self.recomputed, np.int64),
                     np.r_[0, np.cumsum(counts)], times[order], snap, self.snapshots,
                     tuple(notes), self.starved, np.asarray(evict, np.int64))


def simulate(workload: Workload, policy: PolicySpec, cost: CostModel, *, budget: int,
             max_seqs: int = 1024, reserve_fraction: float = RESERVE_FRACTION,
             max_iterations: int = DEFAULT_MAX_ITERATIONS,
             max_partial_prefills: int | None = None) -> Trace:
    """Run `workload` under `policy` to completion and return its Trace."""
    limits = Limits(check_number("budget", budget, high=10_000_000, integer=True),
                    check_number("max sequences", max_seqs, high=1_000_000, integer=True),
                    None if max_partial_prefills is None else
                    check_number("max partial prefills", max_partial_prefills, high=1_000_000,
                                 integer=True))
    check_number("reserve fraction", reserve_fraction, low=0, low_inclusive=True, high=0.99)
    engine = _Engine(workload, policy, limits, cost, reserve_fraction,
                     check_number("iteration cap", max_iterations, integer=True,
                                  high=MAX_ITERATION_CAP))
    _check_fits(workload, engine)
    return engine.run()


def _check_fits(workload: Workload, engine: _Engine) -> None:
    """Refuse work that could never be scheduled, instead of waiting forever for it."""
    usable = engine.capacity - engine.kv_watermark
    kv_kib = engine.cost.model.kv_bytes_per_token / 1024
    largest = int(np.max(workload.prompt + workload.output))
    if largest > usable:
        raise InputError(
            f"a request needs {largest:,} tokens of KV ({largest * kv_kib / 2**20:.1f} GiB) but "
            f"only {usable:,} tokens ({usable * kv_kib / 2**20:.1f} GiB) fit beside the weights; "
            "shorten the prompt or pick a GPU with more memory")
    streaming = int(np.sum((workload.prompt + workload.output)[workload.prefilled]))
    if streaming > engine.capacity:
        raise InputError(
            f"the running decoders need {streaming:,} tokens of KV but only {engine.capacity:,} "
            "fit; use fewer decoders or a shorter context")
    if int(np.sum(workload.prefilled)) > engine.limits.max_seqs:
        raise InputError(f"{int(np.sum(workload.prefilled))} running decoders exceed max "
                         f"sequences ({engine.limits.max_seqs})")
