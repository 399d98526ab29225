"""Prefill on some GPUs, decode on others: one workload served by two pools of engine instances
with the KV cache handed from one to the other over a link.

`Disaggregation` says how: X prefill GPUs and Y decode GPUs, in instances of `prefill_tp` and
`decode_tp` GPUs each, and the link between them. Every instance is the lab's own engine
(sim/serving/engine.py) under the run's policy, budget and limits; a loop steps whichever
instance's clock is earliest (`_Loop`), so one instance's hand-off reaches another in time order.

- A prompt goes round-robin to a prefill instance, which runs it as a request of one output
  token: its prefill, chunked by the policy's budget, then its first token.
- Its KV stays held on the prefill instance (out of that instance's pool, so nothing preempts it)
  until it is sent. The request goes to the decode instance with the most free KV (less what is
  already queued for it); that instance accepts its queue head first come, first served, once
  its free KV holds the prompt and a seat is free (DistServe's decoding scheduler: a migrating
  request waits in `unaccepted_queue` until its blocks fit, the prefill GPU's memory serving as
  the queue, distserve/decoding_stage_scheduler.py `post_process`; vLLM's NIXL connector likewise
  reads the remote KV once the decode side has allocated its blocks). It then reserves the KV,
  and the transfer runs over the decode instance's link, one transfer at a time, priced by
  sim/presets/links.py (`price_transfer`).
- The first token reaches the user with the decode instance, once the transfer is done: TTFT =
  arrival -> transfer done. This is vLLM's disaggregated prefill (its proxy sends the prompt to
  the prefill instance with max_tokens=1, then streams the answer from the decode instance);
  DistServe streams the first token from the prefill instance at once, which would leave the
  transfer out of TTFT. The transfer is then a visible cost of disaggregation, not a hidden one.
- The decode instance runs the request as a stream with its prompt's KV in place, for its
  remaining output - 1 tokens; a request preempted there (KV full) is recomputed there, as the
  engine recomputes any preempted request.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from sim.ceilings import MAX_TOKENS
from sim.cost.iteration import CostModel
from sim.errors import InputError, check_number
from sim.presets.links import Link, Transfer, get_link, gpu_link, price_transfer
from sim.serving.engine import _check_fits, _Engine, policy_reserve
from sim.serving.metrics import Percentiles, request_times
from sim.serving.policies import Limits, PolicySpec, check_prompt_limit
from sim.serving.trace import Trace
from sim.serving.workloads import Workload, make_workload, round_robin

MAX_GPUS = 64   # per pool


@dataclass(frozen=True)
class Disaggregation:
    """X prefill GPUs and Y decode GPUs in instances of `prefill_tp` / `decode_tp` GPUs (None:
    the run's tp), and the link a KV hand-off crosses (a sim/presets/links.py id; None: the GPU
    preset's own GPU-to-GPU link); `layerwise_send`: the send overlaps the prefill layer by
    layer. Its fields are the knobs of sim/knobs.py `DISAGGREGATION_KNOBS`, named alike."""
    prefill_gpus: int
    decode_gpus: int
    prefill_tp: int | None = None
    decode_tp: int | None = None
    link: str | None = None
    layerwise_send: bool = False

    def __post_init__(self):
        for name, value in (("prefill GPUs", self.prefill_gpus), ("decode GPUs", self.decode_gpus)):
            check_number(name, value, low=1, low_inclusive=True, high=MAX_GPUS, integer=True)
        for name, value in (("prefill tp", self.prefill_tp), ("decode tp", self.decode_tp)):
            if value is not None:
                check_number(name, value, low=1, low_inclusive=True, high=MAX_GPUS, integer=True)
        if self.link is not None:
            get_link(self.link)

    @property
    def gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    def tps(self, run_tp: int) -> tuple[int, int]:
        """Each pool's GPUs per instance."""
        return self.prefill_tp or run_tp, self.decode_tp or run_tp

    def instances(self, run_tp: int) -> tuple[int, int]:
        """Each pool's instances: its GPUs / its tp, which must divide them."""
        counts = []
        for pool, gpus, tp in (("prefill", self.prefill_gpus, self.tps(run_tp)[0]),
                               ("decode", self.decode_gpus, self.tps(run_tp)[1])):
            if gpus % tp:
                raise InputError(f"{gpus} {pool} GPUs do not split into instances of tp {tp}; "
                                 f"give a multiple of {tp} {pool} GPUs or another --{pool}-tp")
            counts.append(gpus // tp)
        return counts[0], counts[1]

    def pool_costs(self, cost: CostModel) -> tuple[CostModel, CostModel]:
        """The prefill and the decode pool's cost models: `cost` at each pool's tp."""
        return tuple(CostModel(cost.gpu, cost.model, cost.mode, cost.overhead_set_s, tp)
                     for tp in self.tps(cost.tp))

    def prefill_shares(self, workload: Workload, run_tp: int) -> tuple[Workload, ...]:
        """Each prefill instance's prompts (round-robin), each a request of one output token."""
        return tuple(workload.take(ids, np.ones(len(ids), np.int64))
                     for ids in round_robin(len(workload), self.instances(run_tp)[0]))

    def link_for(self, cost: CostModel) -> Link:
        return gpu_link(cost.gpu) if self.link is None else get_link(self.link)


def parse_split(text: str) -> tuple[int, int]:
    """'PREFILL_GPUS:DECODE_GPUS' ('2:1') as two whole numbers of GPUs, 1 to MAX_GPUS each."""
    parts = str(text).split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise InputError(f"--disaggregate takes PREFILL_GPUS:DECODE_GPUS, two whole numbers such "
                         f"as 2:1, got {text!r}")
    prefill, decode = (int(p) for p in parts)
    for pool, n in (("prefill", prefill), ("decode", decode)):
        if not 1 <= n <= MAX_GPUS:
            raise InputError(f"--disaggregate {text}: {n} {pool} GPUs; each pool takes 1 to "
                             f"{MAX_GPUS} GPUs")
    return prefill, decode


def round_robin_shares(workload: Workload, instances: int) -> tuple[Workload, ...]:
    """`workload` split round-robin over `instances` (see `round_robin`), each share a workload
    of its own in arrival order (colocated instances, each its own engine)."""
    return tuple(workload.take(ids) for ids in round_robin(len(workload), instances))


@dataclass(frozen=True, eq=False)
class DisaggregatedTrace:
    """What a disaggregated run produced: each instance's own Trace, and per request where it
    went and when its KV moved. It has a Trace's per-request fields (arrival_s, prompt, output,
    prefilled, token_offsets, token_s, preemptions) and every instance's iterations as one list
    ordered by their end (start_s, end_s; chunk_request and chunk_iteration the prefill chunks
    in it), so sim/serving/metrics.py's `summarize`, `request_times` and `token_gaps` read it:
    TTFT, TBT, TPOT and SLO attainment come out as for one engine. Times in seconds; -1 / NaN where a request
    has none (a one-token request never leaves its prefill instance)."""
    policy: str
    budget: int
    link: Link
    layerwise_send: bool
    prefill_tp: int
    decode_tp: int
    # each prefill instance's run, in its own request numbering (instance i's request j is request
    # prefill_requests[i][j]), each request of one output token: its first token there is the
    # prefill's end, not what the user sees; its kv_used_tokens leave out the KV held for sending
    # (a request's prompt tokens from prefill_end_s to send_end_s)
    prefill: tuple[Trace, ...]
    prefill_requests: tuple[np.ndarray, ...]
    # each decode instance's run, in the workload's numbering: a request it was handed runs there
    # with its prompt as context and output - 1 tokens to emit; the others have no tokens there
    decode: tuple[Trace, ...]
    # per request
    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    prefilled: np.ndarray
    prefill_instance: np.ndarray
    decode_instance: np.ndarray
    prefill_end_s: np.ndarray          # its first token computed, its KV held for sending
    send_start_s: np.ndarray           # the decode instance accepted it and the transfer began
    send_end_s: np.ndarray             # the KV arrived: the first token reaches the user
    kv_bytes: np.ndarray               # bytes each GPU sent (prompt x KV bytes per token per GPU)
    transfer_s: np.ndarray             # send_end - send_start: the link's price, exposed part
    token_offsets: np.ndarray
    token_s: np.ndarray
    chunk_request: np.ndarray
    chunk_iteration: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    preemptions: np.ndarray
    notes: tuple[str, ...]

    @property
    def iterations(self) -> int:
        return len(self.end_s)

    @property
    def decode_wait_s(self) -> np.ndarray:
        """Prefill done -> its decode instance accepted it: the wait for decode KV or a seat."""
        return self.send_start_s - self.prefill_end_s


class _Instance(_Engine):
    """One instance's engine, stepped from outside (`_Loop`). KV held for a transfer is taken out
    of the pool's capacity (`hold`) until it moves (`release`): no request holds it, so the
    scheduler sees less free KV and can preempt none of it."""

    def hold(self, slots: int) -> None:
        self.pool.capacity -= slots

    def release(self, slots: int) -> None:
        self.pool.capacity += slots


class _PrefillInstance(_Instance):
    """Prefills its share of the prompts (each a request of one output token); a finished
    prompt's KV stays held, out of the pool, until its transfer ends."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.done: list[tuple[int, int]] = []        # (request, slots held) since last asked
        self.releases: list[tuple[float, int]] = []  # heap of (time the KV left, slots)
        self.started = [np.nan] * self.n               # each prompt's first chunk's start

    def _admit(self, batch) -> None:
        for request in batch.admitted:
            if self.started[request] != self.started[request]:   # NaN: its first admission
                self.started[request] = self.now
        super()._admit(batch)

    def _finish_prefills(self, completed: list[int]) -> None:
        for request in completed:
            self.partial.remove(request)
            self.record.first_token(request)
            self.generated[request] += 1
            self.finished += 1
            slots = self.pool.slots_of(request)
            self.pool.free((request,))
            self.hold(slots)
            self.done.append((request, slots))

    def catch_up(self) -> None:
        """KV whose transfer has ended by the clock goes back to the pool."""
        while self.releases and self.releases[0][0] <= self.now:
            self.release(heapq.heappop(self.releases)[1])

    def next_event(self) -> float:
        times = [self.arrival[self.arrived]] if self.arrived < self.n else []
        if self.releases:
            times.append(self.releases[0][0])
        return min(times, default=np.inf)


class _DecodeInstance(_Instance):
    """Decodes the requests handed to it: each waits in `queue` until the free KV holds its prompt
    and a seat is free, then its KV moves over `link` (one transfer at a time) and it joins the
    running decoders as a stream."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.queue: deque[tuple[float, int, Transfer]] = deque()   # (ready, request, transfer)
        self.queued_slots = 0
        self.inbox: deque[tuple[float, int, int]] = deque()      # (arrives, request, slots)
        self.link_free = 0.0

    def accept(self, on_send) -> None:
        """Accept queued requests, head first, while KV and seats allow; `on_send(request,
        start, end)` hears of each transfer."""
        while self.queue and self.queue[0][0] <= self.now:
            ready, request, transfer = self.queue[0]
            slots = self.pool.slots_for(request, self.prompt[request])
            seated = self.decoding + len(self.partial) + len(self.waiting) + len(self.inbox) \
                + len(self.streams_waiting)
            if slots > self.pool.free_tokens - self.pool.watermark \
                    or seated >= self.limits.max_seqs:
                return
            self.queue.popleft()
            self.queued_slots -= slots
            self.hold(slots)
            start = max(self.now, self.link_free)
            # a layer-by-layer send overlaps the prefill only where the KV could leave at once
            seconds = transfer.exposed_s if start <= ready else transfer.seconds
            self.link_free = end = start + seconds
            self.inbox.append((end, request, slots))
            on_send(request, start, end)

    def _arrive(self) -> None:
        while self.inbox and self.inbox[0][0] <= self.now:
            _, request, slots = self.inbox.popleft()
            self.release(slots)
            self.streams_waiting.append(request)

    def next_event(self) -> float:
        """When it can next act while idle: a transfer landing, or its queue's head becoming
        ready (a head already ready but not accepted waits for KV or a seat, which only its
        own iterations free; an idle instance always has room for it)."""
        times = [self.inbox[0][0]] if self.inbox else []
        if self.queue and self.queue[0][0] > self.now:
            times.append(self.queue[0][0])
        return min(times, default=np.inf)

    @property
    def free_for_routing(self) -> int:
        return self.pool.free_tokens - self.queued_slots


def simulate_disaggregated(workload: Workload, policy: PolicySpec, cost: CostModel, *,
                           budget: int, limits: Limits,
                           split: Disaggregation) -> DisaggregatedTrace:
    """Serve `workload` on `split`'s two pools under `policy` at `budget` (each instance at the
    run's limits), the KV priced over its link; see the module's docstring."""
    if workload.prefilled.any():
        raise InputError("a disaggregated run serves new prompts only (Poisson arrivals or a "
                         "trace); the textbook and burst scenarios start with streams already "
                         "decoding on one GPU")
    budget = int(check_number("budget", budget, high=MAX_TOKENS, integer=True))
    check_prompt_limit(workload, policy, budget)
    return _Loop(workload, policy, cost, budget, limits, split).run()


class _Loop:
    """The instances and the hand-offs between them, stepped in clock order."""

    def __init__(self, workload, policy, cost, budget, limits, split: Disaggregation):
        self.w, self.policy, self.budget, self.split = workload, policy, budget, split
        n = self.n = len(workload)
        prefills, decodes = split.instances(cost.tp)
        self.prefill_cost, self.decode_cost = split.pool_costs(cost)
        self.prefill_tp, self.decode_tp = self.prefill_cost.tp, self.decode_cost.tp
        self.link = split.link_for(cost)
        # each GPU sends its own shard; the pool with fewer shards sends the larger ones
        self.kv_per_token = max(self.prefill_cost.kv_bytes_per_token,
                                self.decode_cost.kv_bytes_per_token)
        self.layers = cost.model.layers
        self.owners = round_robin(n, prefills)
        self.prefills = [self._engine(_PrefillInstance, share, self.prefill_cost, limits)
                         for share in split.prefill_shares(workload, cost.tp)]
        decode_work = make_workload(workload.arrival_s, workload.prompt,
                                    np.maximum(workload.output - 1, 1), name=workload.name)
        self.decodes = [self._engine(_DecodeInstance, decode_work, self.decode_cost, limits)
                        for _ in range(decodes)]
        nan = np.full(n, np.nan)
        self.prefill_end, self.send_start, self.send_end = nan.copy(), nan.copy(), nan.copy()
        self.prefill_instance = np.full(n, -1, np.int64)
        self.decode_instance = np.full(n, -1, np.int64)
        for i, ids in enumerate(self.owners):
            self.prefill_instance[ids] = i
        self.kv_bytes = np.zeros(n)
        self.held: dict[int, tuple[int, int]] = {}   # request -> (prefill instance, slots held)
        self.done = 0

    def _engine(self, kind, workload, cost, limits):
        engine = kind(workload, self.policy, self.budget, limits,
                      cost.for_engine(self.policy.overhead),
                      policy_reserve(self.policy, cost, self.budget))
        _check_fits(workload, engine)
        return engine

    def run(self) -> DisaggregatedTrace:
        engines: list[_Instance] = [*self.prefills, *self.decodes]
        ready = [float(e.arrival[0]) for e in self.prefills] + [np.inf] * len(self.decodes)
        first_decode = len(self.prefills)
        while self.done < self.n:
            index = min(range(len(engines)), key=ready.__getitem__)
            engine, when = engines[index], ready[index]
            if when == np.inf:
                raise RuntimeError("the disaggregated run made no progress with work left")
            engine.now = max(engine.now, when)
            # the same engine steps on while its clock stays before every other's and no hand-off
            # has moved another's
            others = min((ready[i] for i in range(len(engines)) if i != index), default=np.inf)
            handed = False
            while True:
                if index < first_decode:
                    engine.catch_up()
                    progressed = engine.step()
                    if engine.done:
                        self._route(index, engine, ready)
                        handed = True
                else:
                    before = engine.finished
                    if engine.queue:
                        engine.accept(lambda request, start, end: self._sent(request, start, end,
                                                                             ready))
                        handed = True
                    progressed = engine.step()
                    self.done += engine.finished - before
                ready[index] = engine.now if progressed else engine.next_event()
                if handed or not progressed or ready[index] >= others or self.done >= self.n:
                    break
        return self._trace()

    def _route(self, index: int, engine: _PrefillInstance, ready: list) -> None:
        """Prompts this prefill instance just finished: one-token ones are done (their KV freed);
        the others queue at the decode instance with the most free KV, their transfer priced."""
        ids = self.owners[index]
        for local, slots in engine.done:
            request = int(ids[local])
            self.prefill_end[request] = engine.now
            if self.w.output[request] == 1:
                engine.release(slots)
                self.send_start[request] = self.send_end[request] = engine.now
                self.done += 1
                continue
            target = max(range(len(self.decodes)), key=lambda d: self.decodes[d].free_for_routing)
            decode = self.decodes[target]
            prompt = int(self.w.prompt[request])
            transfer = price_transfer(prompt, self.kv_per_token, self.link, layers=self.layers,
                                      prefill_s=engine.now - engine.started[local],
                                      layerwise=self.split.layerwise_send)
            decode.queue.append((engine.now, request, transfer))
            decode.queued_slots += decode.pool.slots_for(request, prompt)
            self.kv_bytes[request] = transfer.nbytes
            self.decode_instance[request] = target
            self.held[request] = (index, slots)
            at = len(self.prefills) + target
            ready[at] = min(ready[at], max(decode.now, engine.now))
        engine.done.clear()

    def _sent(self, request: int, start: float, end: float, ready: list) -> None:
        """A transfer began: its prefill instance gets the KV back when it ends."""
        self.send_start[request], self.send_end[request] = start, end
        index, slots = self.held.pop(request)
        prefill = self.prefills[index]
        heapq.heappush(prefill.releases, (end, slots))
        ready[index] = min(ready[index], max(prefill.now, end))

    def _trace(self) -> DisaggregatedTrace:
        prefill = tuple(e._trace() for e in self.prefills)
        decode = tuple(e._trace() for e in self.decodes)
        n = self.n
        first = np.where(self.w.output > 1, self.send_end, self.prefill_end)
        owners = [np.repeat(np.arange(n), np.diff(t.token_offsets)) for t in decode]
        reqs = np.concatenate([np.arange(n), *owners])
        times = np.concatenate([first, *(t.token_s for t in decode)])
        by_request = np.lexsort((times, reqs))
        offsets = np.r_[0, np.cumsum(np.bincount(reqs, minlength=n))]
        every = (*prefill, *decode)
        shift = np.cumsum([0] + [t.iterations for t in every])
        ends = np.concatenate([t.end_s for t in every])
        order = np.argsort(ends, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        preemptions = sum(t.preemptions for t in decode)
        notes = []
        for pool, traces in (("prefill", prefill), ("decode", decode)):
            for i, t in enumerate(traces):
                notes += [f"{pool} instance {i + 1}: {note}" for note in t.notes]
        for ids, t in zip(self.owners, prefill):
            preemptions[ids] += t.preemptions
        return DisaggregatedTrace(
            policy=self.policy.name, budget=self.budget, link=self.link,
            layerwise_send=self.split.layerwise_send, prefill_tp=self.prefill_tp,
            decode_tp=self.decode_tp, prefill=prefill, prefill_requests=self.owners,
            decode=decode, arrival_s=self.w.arrival_s, prompt=self.w.prompt,
            output=self.w.output, prefilled=self.w.prefilled,
            prefill_instance=self.prefill_instance, decode_instance=self.decode_instance,
            prefill_end_s=self.prefill_end, send_start_s=self.send_start,
            send_end_s=self.send_end, kv_bytes=self.kv_bytes,
            transfer_s=self.send_end - self.send_start, token_offsets=offsets,
            token_s=times[by_request],
            chunk_request=np.concatenate([ids[t.chunk_request]
                                          for ids, t in zip(self.owners, prefill)]),
            chunk_iteration=rank[np.concatenate([t.chunk_iteration + k
                                                 for t, k in zip(prefill, shift)])],
            start_s=np.concatenate([t.start_s for t in every])[order], end_s=ends[order],
            preemptions=preemptions, notes=tuple(notes))


@dataclass(frozen=True)
class PoolSummary:
    """One pool of a disaggregated run: how busy its GPUs were and how long requests queued."""
    instances: int
    tp: int
    utilisation: float          # its instances' iteration time / (instances x makespan)
    iterations: int
    queue_s: Percentiles        # prefill: arrival -> first chunk; decode: prefill done -> accepted


def pool_summaries(trace: DisaggregatedTrace) -> dict[str, PoolSummary]:
    """The prefill and the decode pool, by name."""
    makespan = float(trace.end_s[-1] - trace.arrival_s.min())
    times = request_times(trace)
    sent = trace.decode_instance >= 0
    queues = {"prefill": times.queue_s[~np.isnan(times.queue_s)],
              "decode": trace.decode_wait_s[sent]}
    result = {}
    for pool, traces, tp in (("prefill", trace.prefill, trace.prefill_tp),
                             ("decode", trace.decode, trace.decode_tp)):
        busy = sum(float(t.duration_s.sum()) for t in traces)
        result[pool] = PoolSummary(len(traces), tp, busy / (len(traces) * makespan)
                                   if makespan > 0 else 0.0,
                                   sum(t.iterations for t in traces), Percentiles.of(queues[pool]))
    return result


def transfer_times(trace: DisaggregatedTrace) -> np.ndarray:
    """The KV transfers' times (those of requests that moved), seconds."""
    return trace.transfer_s[trace.decode_instance >= 0]
