"""The step engine: ask the policy for a batch, price it, advance the clock, emit tokens.

Each iteration runs the loop of the `build_batch` sketch in the source article "Splitting Prefill
From Decode Inside a Step" and of the engines it describes, one named phase at a time: arrive
(requests whose time has come join the queue), plan (the policy's batch, preempting the newest
running request while its KV does not fit), admit (the batch's new requests leave the queue, by id,
and its KV is reserved), price (the cost model times the iteration; the clock advances), step
decoders (one token each; those the budget skipped do not advance) and finish prefills (a completed
prompt emits its first token, then decodes or finishes).

Tokens come out at the end of the iteration that produced them. KV memory is counted in tokens by
one `KvPool`: capacity = (GPU memory - weights - reserve) / KV bytes per token. A preempted request
is recomputed later (its KV is freed and its prompt plus the tokens it had generated are prefilled
again). Running decoders live in numpy arrays in admission order; the `TraceRecorder` keeps the
run in memory linear in requests + tokens.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from sim.ceilings import MAX_TOKENS
from sim.cost.iteration import CostModel, attended_pairs, prefix_read
from sim.errors import InputError, check_number
from sim.serving.chunking import fit_dynamic_chunks
from sim.serving.engines import kv_capacity_bytes
from sim.serving.kv import KvPool, PrefixCache, round_up
from sim.serving.policies import (
    DEFAULT_LIMITS,
    Batch,
    Limits,
    NewTokenRatio,
    PolicySpec,
    check_prompt_limit,
    future_tokens,
    max_model_len,
    prefix_caching_on,
)
from sim.serving.trace import Trace, TraceRecorder
from sim.serving.workloads import Workload
from sim.units import fmt_bytes

RESERVE_FRACTION = 0.10   # vLLM's gpu_memory_utilization=0.9 leaves 10% for activations etc.
NEVER = np.iinfo(np.int64).max


class SimulationLimitError(InputError):
    """The run needed more iterations than the cap allows; `cap` says which cap it hit, so a
    caller that lowered it (to keep within a time budget) can say why."""

    def __init__(self, message: str, cap: int | None = None):
        super().__init__(message)
        self.cap = cap


def policy_reserve(spec: PolicySpec, cost: CostModel, budget: int) -> float:
    """The share of GPU memory `spec`'s engine keeps back from the KV cache at `budget`."""
    return spec.profile.reserve(cost, budget)


def kv_capacity_tokens(cost: CostModel, reserve_fraction: float = RESERVE_FRACTION) -> int:
    """KV tokens that fit beside the weights, keeping `reserve_fraction` of memory back. With
    tensor parallelism each GPU holds its share of the weights and of every token's KV."""
    gpu, model = cost.gpu, cost.model
    free = kv_capacity_bytes(cost, reserve_fraction)
    if free <= 0:
        share = f" (1/{cost.tp} per GPU)" if cost.tp > 1 else ""
        raise InputError(
            f"{model.name} weights ({fmt_bytes(cost.weight_bytes)}{share}) do not "
            f"fit in {gpu.name} memory ({fmt_bytes(gpu.memory_bytes)} less a "
            f"{reserve_fraction:.0%} reserve); choose a larger GPU, more GPUs (tp) or a smaller "
            "model")
    return int(free // cost.kv_bytes_per_token)


class _Engine:
    """Mutable run state; also the `State` view that policies read."""

    def __init__(self, workload: Workload, spec: PolicySpec, budget: int, limits: Limits,
                 cost: CostModel, reserve_fraction: float, kv_tokens: int | None = None):
        """`kv_tokens`: the KV pool's capacity where the caller sizes it (a pipeline's virtual
        engine, sim/serving/pipeline.py); by default what fits beside the weights on `cost`."""
        self.w, self.budget, self.limits, self.cost = workload, budget, limits, cost
        self.spec = spec.under(limits)   # what it does under these limits (SGLang's mixed chunk)
        self.n = n = len(workload)
        capacity = kv_capacity_tokens(cost, reserve_fraction) if kv_tokens is None else kv_tokens
        profile = spec.profile
        block = profile.kv_block_tokens
        self.pool = KvPool(capacity, int(profile.kv_watermark * (capacity // block)) * block, n,
                           block_tokens=block)
        # Orca as Sarathi-Serve runs it: max_model_len of blocks for each request it admits
        self.kv_floor = round_up(max_model_len(workload), block) if profile.kv_floor else 0
        self.ratio = NewTokenRatio() if profile.future_tokens else None   # SGLang's
        # SGLang's dynamic chunking, fitted on this engine's cost (`Limits.chunking`)
        self.chunk_sizer = fit_dynamic_chunks(cost, budget) if limits.chunking == "dynamic" \
            else None
        self.record = TraceRecorder()
        self.window = cost.model.sliding_window
        self.arrival = workload.arrival_s.tolist()
        self.streaming = workload.prefilled.tolist()
        self.prompt = workload.prompt.tolist()
        self.output = workload.output.tolist()
        self.target = list(self.prompt)        # tokens a prefill must compute (grows on recompute)
        self.computed = [0] * n
        self.generated = [0] * n               # up to date except while decoding (see dec_finish)
        self.preemptions = [0] * n
        self.recomputed = [0] * n
        self.partial: list[int] = []           # admitted, prefill under way, in admission order
        self.waiting: deque[int] = deque()
        self.streams_waiting: deque[int] = deque()   # streams that arrived with max_seqs full
        self.now = 0.0
        self.arrived = 0
        self.finished = 0
        self.starved = 0
        # running decoders, in admission order; a decode step that moves them all costs O(1): each
        # one's last token is due when `clock` (decode steps so far) reaches its `dec_finish`
        self.dec_ids = np.empty(0, np.int64)
        self.dec_admission = np.empty(0, np.int64)
        self.dec_finish = np.empty(0, np.int64)
        self.decoding = 0
        self.clock = 0
        self.next_finish = NEVER
        self.caching = prefix_caching_on(profile, limits)
        self.cached = [0] * n       # prompt tokens each request found cached, over its admissions
        self.looked_up = [0] * n    # prompt tokens each request looked up, over its admissions
        if self.caching:
            self._start_prefix_cache(workload, block, profile)

    def _start_prefix_cache(self, workload: Workload, block: int, profile) -> None:
        """Prefix caching on: the pool keeps a `PrefixCache`, and a waiting request's cached
        prefix is skipped wherever a policy reads what is left of its prompt."""
        if profile.kv_floor:
            raise InputError(f"{profile.engine} gives each request max_model_len of KV up front, "
                             "which prefix caching does not model; turn prefix caching off")
        n = self.n
        if workload.prefix_group is None:   # every request its own: found again after a preemption
            group, shared = np.full(n, -1, np.int64), np.zeros(n, np.int64)
        else:
            group, shared = workload.prefix_group, workload.prefix_tokens
        self.pool.cache = PrefixCache(block, group, shared)
        self.attached = [False] * n   # admitted: its cached prefix read
        self.lost = [0] * n           # tokens its last preemption counted as recomputed
        self.prefill_left = self._uncached_left
        self.prefix_of = self._prefix_with_cached
        self.kv_slots = self._kv_slots_with_cached

    # --- the State protocol (and `decoding`, `partial`, `waiting`, `preempted_this_step`) ---
    @property
    def free_kv(self) -> int:
        return self.pool.free_tokens

    @property
    def kv_watermark(self) -> int:
        return self.pool.watermark

    @property
    def decode_kv(self) -> int:
        return self.pool.decode_slots(self.dec_ids)

    @property
    def reserved_kv(self) -> float:
        """SGLang: what the running requests keep for their future tokens (`NewTokenRatio`);
        0 for the other engines."""
        if self.ratio is None:
            return 0.0
        left = future_tokens(self.dec_finish - self.clock).sum() + sum(
            self.future_kv(r) for r in self.partial)
        # a request that ignores EOS keeps all of it: ratio 1.0 (schedule_policy.py:787)
        return float(left) * (self.ratio.value if self.limits.disable_ignore_eos else 1.0)

    def prefill_left(self, request: int) -> int:
        return self.target[request] - self.computed[request]

    def prefix_of(self, request: int) -> int:
        return self.computed[request]

    def kv_slots(self, request: int, tokens: int) -> int:
        floor = self.kv_floor if not self.pool.held_of(request) else 0
        return self.pool.slots_for(request, tokens, floor)

    def future_kv(self, request: int) -> int:
        """SGLang: a request's output still to come (`future_tokens`); 0 for the other engines."""
        if self.ratio is None:
            return 0
        return int(future_tokens(self.output[request] - self.generated[request]))

    def decoders_before(self, request: int) -> int:
        return int(np.searchsorted(self.dec_admission, self.pool.admission_number(request)))

    def cached_prefix(self, request: int) -> int:
        if not self.caching or self.attached[request]:
            return 0
        return self.pool.cache.hit(request, self.target[request])

    # with prefix caching, in place of prefill_left, prefix_of and kv_slots
    def _uncached_left(self, request: int) -> int:
        return self.target[request] - self.computed[request] - self.cached_prefix(request)

    def _prefix_with_cached(self, request: int) -> int:
        return self.computed[request] + self.cached_prefix(request)

    def _kv_slots_with_cached(self, request: int, tokens: int) -> int:
        """A waiting request's new blocks, and the cached blocks its hit takes out of the
        evictable ones (`PrefixCache.pin_cost`)."""
        slots = _Engine.kv_slots(self, request, tokens)
        if not self.attached[request]:
            slots += self.pool.cache.pin_cost(request, self.cached_prefix(request))
        return slots

    # --- the loop -------------------------------------------------------------------------
    def run(self) -> Trace:
        while self.finished < self.n:
            if not self.step():
                self._idle_until_next_arrival()
        return self._trace()

    def step(self) -> bool:
        """One iteration at the clock, if the policy plans any work; False (the clock unmoved)
        when it plans none. A loop over several engines (sim/serving/disaggregated.py) calls it
        on whichever engine's clock is earliest."""
        self._arrive()
        if self.streams_waiting:
            self._join_waiting_streams()
        batch = self._plan()
        if not batch.decodes and not batch.chunks:
            return False
        self._check_iteration_cap()
        self._count_starvation(batch)
        if batch.chunks:
            self._admit(batch)
        completed = self._price(batch)
        self._step_decoders(batch.decodes, decode_only=not batch.chunks)
        if completed:
            self._finish_prefills(completed)
        self.record.end_iteration(self.pool.in_use,
                                  self.pool.cache.evictable if self.caching else 0)
        return True

    # --- the phases -----------------------------------------------------------------------
    def _arrive(self) -> None:
        """Requests whose arrival time has come: new ones queue, streaming ones start decoding
        with their context already in KV."""
        while self.arrived < self.n and self.arrival[self.arrived] <= self.now:
            request = self.arrived
            (self.streams_waiting if self.streaming[request] else self.waiting).append(request)
            self.arrived += 1

    def _join_waiting_streams(self) -> None:
        """Streams that arrived join the running decoders, their context already in KV, while
        max_seqs and the free KV allow (first come, first joined); the rest wait for a slot."""
        joining = []
        running = self.decoding + len(self.partial)
        while self.streams_waiting and running + len(joining) < self.limits.max_seqs:
            request = self.streams_waiting[0]
            if self.pool.slots_for(request, self.prompt[request]) > self.pool.free_tokens:
                break
            self.pool.reserve(request, self.prompt[request])
            joining.append(self.streams_waiting.popleft())
        if joining:
            self._join(joining)

    def _plan(self) -> Batch:
        """The policy's batch, after preempting a running request (`_preempt`) until its KV
        fits. An empty batch is an idle server, where SGLang's new_token_ratio starts again
        (its scheduler's on_idle, python/sglang/srt/managers/scheduler.py:2050-2053, 5317-5318
        at v0.5.23)."""
        self.preempted_this_step = False
        while True:
            batch = self.spec.plan(self, self.budget, self.limits)
            if self._fits(batch):
                if self.ratio is not None and not batch.decodes and not batch.chunks:
                    self.ratio.reset()
                return batch
            self._preempt()
            self.preempted_this_step = True

    def _fits(self, batch: Batch) -> bool:
        """Whether the free KV holds what the batch needs: its reservations and a new block for
        each stepping decoder whose last block is full. Counting those decoders is the costly
        part, skipped when a new block for every one of them would fit too."""
        free = self.pool.free_tokens
        if batch.kv:
            free -= sum(self.kv_slots(request, tokens) for request, tokens in batch.kv)
        return batch.decodes * self.pool.block_tokens <= free \
            or self.pool.decode_slots(self.dec_ids[:batch.decodes]) <= free

    def _idle_until_next_arrival(self) -> None:
        if self.arrived == self.n or self.streams_waiting and not self.decoding and not self.partial:
            raise RuntimeError("the scheduler made no progress with work left")
        self.now = self.arrival[self.arrived]

    def _check_iteration_cap(self) -> None:
        if self.record.iterations >= self.limits.max_iterations:
            raise SimulationLimitError(
                f"the run needed more than {self.limits.max_iterations:,} iterations (the cap); "
                "shorten the workload or raise the iteration cap", cap=self.limits.max_iterations)

    def _count_starvation(self, batch: Batch) -> None:
        """Decodes used the whole shared budget while prompts wait."""
        if self.spec.decodes_take_budget and (self.waiting or self.partial) \
                and not batch.chunks and batch.decodes >= self.budget:
            self.starved += 1

    def _admit(self, batch: Batch) -> None:
        """The batch's new requests leave the queue, by id, and join the partial prefills; the
        pool reserves the KV the batch commits (beyond the decodes' tokens)."""
        for request in batch.admitted:
            self.waiting.remove(request)
            self.partial.append(request)
            if self.caching:   # every hit pinned before any block is taken (and may evict)
                self._attach(request)
        for request, tokens in batch.kv:
            self.pool.reserve(request, tokens, self.kv_floor)

    def _attach(self, request: int) -> None:
        """An admitted request reads its cached prefix: computed without being computed."""
        hit = self.pool.attach_cached(request, self.target[request])
        self.attached[request] = True
        self.computed[request] = hit
        self.cached[request] += hit
        self.looked_up[request] += self.target[request]
        if self.lost[request]:   # what a preemption freed and the cache kept is not recomputed
            self.recomputed[request] -= min(hit, self.lost[request])
            self.lost[request] = 0

    def _price(self, batch: Batch) -> list[int]:
        """Time the iteration from aggregates (`CostModel.time`), advance the clock and record
        it; return the requests whose prefill it completes."""
        k = batch.decodes
        if self.window and k:   # a decoder's context is the KV it holds
            context = self.pool.held_by(self.dec_ids[:k])
            attended = float(attended_pairs(context, 1, self.window).sum())
            kv_read = float(prefix_read(context, self.window).sum())
        else:
            kv_read = self._decoders_context(k)
            attended = kv_read + k             # each decode attends to its context + itself
        tokens, rows, completed = k, k, []
        for request, take in batch.chunks:
            prefix = self.computed[request]
            attended += attended_pairs(prefix, take, self.window)
            kv_read += prefix_read(prefix, self.window)
            tokens += take
            self.record.chunk(request, prefix, take)
            self.computed[request] = prefix + take
            if self.caching:
                self.pool.share_computed(request, prefix + take)
            if prefix + take == self.target[request]:
                completed.append(request)
                rows += 1
        start = self.now
        compute_s, memory_s, self.now, overhead_s = self._pass(start, tokens, float(attended),
                                                               float(kv_read), rows)
        self.record.iteration(start, self.now, k, tokens - k, compute_s, memory_s, overhead_s,
                              self.decoding)
        return completed

    def _pass(self, start: float, tokens: int, attended: float, kv_read: float,
              rows: int) -> tuple[float, float, float, float]:
        """(compute_s, memory_s, end_s, overhead_s) of an iteration from `start`: one pass priced
        by the cost model. A pipeline's virtual engine passes it stage by stage
        (sim/serving/pipeline.py)."""
        compute_s, memory_s, time_s, overhead_s = self.cost.time(tokens, attended, kv_read, rows)
        return compute_s, memory_s, start + time_s, overhead_s

    def _step_decoders(self, k: int, decode_only: bool) -> None:
        """The first `k` running decoders emit a token and take one more token of KV; any the
        budget skipped do not advance. SGLang's new_token_ratio falls after a decode batch only,
        not after a prefill batch its decodes ride with (--enable-mixed-chunk): decay_step is in
        update_running_batch (python/sglang/srt/managers/scheduler.py:4542 at v0.5.23)."""
        if not k:
            return
        if self.ratio is not None and decode_only:
            self.ratio.after_decode_step()
        stepping = self.dec_ids[:k]
        self.pool.step(stepping, self.dec_ids[k:])
        if k < self.decoding:
            self.record.partial_step(stepping)
            self.dec_finish[k:] += 1   # the rest's last token is one step further away
            self.next_finish = int(self.dec_finish.min())
        self.clock += 1
        if self.clock >= self.next_finish:
            self.finished += self._leave(self.dec_finish <= self.clock)

    def _finish_prefills(self, completed: list[int]) -> None:
        """Completed prompts emit their first token, then start decoding (their KV stays, as
        context) or, with nothing more to emit, finish and free it."""
        joining = []
        for request in completed:
            self.partial.remove(request)
            self.record.first_token(request)
            self.generated[request] += 1
            if self.generated[request] >= self.output[request]:
                self.finished += 1
                self.pool.free((request,))
            else:
                joining.append(request)
        if joining:
            self._join(joining)

    # --- the running decoders -------------------------------------------------------------
    def _decoders_context(self, k: int) -> int:
        """Context tokens of the first `k` running decoders. Every KV holder is a running decoder
        or a partial prefill, so all the decoders together hold what the partial ones do not."""
        if k == self.decoding:
            if not self.partial:   # the common case, without a generator (6-10% of a run)
                return self.pool.used
            return self.pool.used - sum(self.pool.held_of(r) for r in self.partial)
        return int(self.pool.held_by(self.dec_ids[:k]).sum())

    def _join(self, requests: list[int]) -> None:
        """`requests` start decoding, kept in admission order."""
        admission = [self.pool.admission_number(r) for r in requests]
        finish = [self.clock + self.output[r] - self.generated[r] for r in requests]
        self.pool.start_decoding(requests)
        newest = not self.decoding or admission[0] > self.dec_admission[-1]
        if newest and admission == sorted(admission):   # the common case: after every decoder
            self._set_decoders(np.concatenate((self.dec_ids, requests)),
                               np.concatenate((self.dec_admission, admission)),
                               np.concatenate((self.dec_finish, finish)))
        else:
            at = np.searchsorted(self.dec_admission, admission)
            self._set_decoders(np.insert(self.dec_ids, at, requests),
                               np.insert(self.dec_admission, at, admission),
                               np.insert(self.dec_finish, at, finish))
        self.record.join(requests, admission)

    def _leave(self, mask: np.ndarray) -> int:
        """Decoders under `mask` finish: they stop running and free their KV; return how many."""
        self.pool.free(self.dec_ids[mask].tolist())
        return self._stop_running(mask)

    def _stop_running(self, mask: np.ndarray) -> int:
        """Decoders under `mask` leave the running list; return how many."""
        gone = self.dec_ids[mask]
        self.record.leave(gone)
        keep = ~mask
        self._set_decoders(self.dec_ids[keep], self.dec_admission[keep], self.dec_finish[keep])
        return len(gone)

    def _set_decoders(self, ids: np.ndarray, admission: np.ndarray, finish: np.ndarray) -> None:
        self.dec_ids, self.dec_admission, self.dec_finish = ids, admission, finish
        self.decoding = len(ids)
        self.next_finish = int(finish.min()) if len(finish) else NEVER

    def _victim(self) -> int | None:
        """The request a full cache preempts: the newest holder (the pool's), or under SGLang's
        retraction the running decoder with the fewest output tokens, ties to the longest prompt,
        then the latest in the batch (python/sglang/srt/managers/schedule_batch.py:3467, 3552-3553
        at v0.5.23); SGLang keeps its last running request, so with one decoder, the newest."""
        if not self.spec.profile.retract_fewest_output or self.decoding < 2:
            return self.pool.newest()
        ids = self.dec_ids
        generated = self.w.output[ids] - (self.dec_finish - self.clock)
        prompt = self.w.prompt[ids]
        # lexsort's last key sorts first; of equals, the latest in the batch comes last
        order = np.lexsort((-np.arange(len(ids)), -prompt, generated))
        return int(ids[order[0]])

    def _preempt(self) -> None:
        """Free a running request's KV (`_victim`); it goes back to the head of the queue and its
        prompt plus generated tokens are recomputed."""
        victim = self._victim()
        # a partial prefill holds its whole prompt's slots; only what it computed is KV to keep
        victim = self.pool.preempt(victim, self.computed[victim] if victim in self.partial
                                   else None)
        self.record.preemption(victim)
        if victim in self.partial:
            self.partial.remove(victim)
            lost = self.computed[victim]
        else:   # a running decoder (the last one, in admission order)
            mask = self.dec_ids == victim
            self.generated[victim] = self.output[victim] - int(self.dec_finish[mask][0] - self.clock)
            lost = self.prompt[victim] + self.generated[victim]
            self._stop_running(mask)
        self.recomputed[victim] += lost
        if self.caching:   # its blocks stay cached until evicted (`_attach` reads them)
            self.attached[victim] = False
            self.lost[victim] = lost
        self.target[victim] = self.prompt[victim] + self.generated[victim]
        self.computed[victim] = 0
        self.preemptions[victim] += 1
        self.waiting.appendleft(victim)
        if self.ratio is not None:
            self.ratio.after_retraction(*self._running_outputs())

    def _running_outputs(self) -> tuple[list[int], list[int]]:
        """The running requests' (decoders', then partial prefills') outputs, and the output
        each has still to come."""
        running = self.dec_ids.tolist() + list(self.partial)
        left = (self.dec_finish - self.clock).tolist() + [
            self.output[r] - self.generated[r] for r in self.partial]
        return [self.output[r] for r in running], left

    # --- the result -----------------------------------------------------------------------
    def _trace(self) -> Trace:
        notes = []
        if self.starved:
            notes.append(
                f"starvation: in {self.starved:,} iterations the running streams' decodes used the whole "
                f"budget of {self.budget:,} tokens and waiting prompts got none (budget <= "
                "streams: new requests wait until streams finish)")
        if any(self.preemptions):
            notes.append(f"{sum(1 for p in self.preemptions if p)} requests were preempted "
                         f"(KV full) and recomputed {sum(self.recomputed):,} tokens")
        return self.record.trace(
            self.w, policy=self.spec.name, budget=self.budget,
            kv_capacity_tokens=self.pool.capacity,
            preemptions=np.array(self.preemptions), recomputed_tokens=np.array(self.recomputed),
            cached_tokens=np.array(self.cached) if self.caching else None,
            looked_up_tokens=np.array(self.looked_up) if self.caching else None,
            notes=tuple(notes),
            starved_iterations=self.starved)


def simulate(workload: Workload, policy: PolicySpec, cost: CostModel, *, budget: int,
             limits: Limits = DEFAULT_LIMITS, reserve_fraction: float | None = None) -> Trace:
    """Run `workload` under `policy` at token `budget` to completion and return its Trace. The
    memory kept back from the KV cache is the policy's engine's (`policy_reserve`) unless
    `reserve_fraction` is given."""
    budget = check_number("budget", budget, high=MAX_TOKENS, integer=True)
    if reserve_fraction is None:
        reserve_fraction = policy_reserve(policy, cost, budget)
    check_number("reserve fraction", reserve_fraction, low=0, low_inclusive=True, high=0.99)
    check_prompt_limit(workload, policy, budget)
    engine = _Engine(workload, policy, budget, limits, cost.for_engine(policy.overhead),
                     reserve_fraction)
    _check_fits(workload, engine)
    return engine.run()


def _check_fits(workload: Workload, engine: _Engine) -> None:
    """Refuse work that could never be scheduled, instead of waiting forever for it."""
    usable = engine.pool.capacity - engine.pool.watermark
    kv_gb = engine.cost.model.kv_bytes_per_token / 1e9
    largest = int(np.max(workload.prompt + workload.output))
    if largest > usable:
        raise InputError(
            f"a request needs {largest:,} tokens of KV ({largest * kv_gb:.1f} GB) but "
            f"only {usable:,} tokens ({usable * kv_gb:.1f} GB) fit beside the weights; "
            "shorten the prompt or pick a GPU with more memory")
    streaming = int(np.sum((workload.prompt + workload.output)[workload.prefilled]))
    if streaming > engine.pool.capacity:
        raise InputError(
            f"the running streams need {streaming:,} tokens of KV ({_stream_tokens(workload)}) "
            f"but only {engine.pool.capacity:,} fit; use fewer streams or a shorter context")
    at_start = int(np.sum(workload.prefilled & (workload.arrival_s == workload.arrival_s[0])))
    if at_start > engine.limits.max_seqs:
        raise InputError(f"{at_start} running streams exceed max sequences "
                         f"({engine.limits.max_seqs})")


def _stream_tokens(workload: Workload) -> str:
    """Why the streams need what they need: each holds its context and grows by every token it
    will still emit, e.g. "8 streams × (4,000 of context + 256 each will emit)"."""
    context, output = workload.prompt[workload.prefilled], workload.output[workload.prefilled]
    if np.ptp(context) or np.ptp(output):
        return "each stream's context plus every token it will still emit"
    return (f"{len(context):,} streams × ({int(context[0]):,} of context + {int(output[0]):,} each "
            "will emit)")
