"""Pipeline parallelism: the model's layers split over P stages, each iteration's batch a
micro-batch that flows stage by stage, up to P of them in flight.

Stages. Each stage holds its layers' share of the weights (the embedding and LM head spread with
the layers) and of every token's KV, so a model too large for one GPU (or one tensor-parallel
group) fits across stages, and the KV pool grows with the memory the other stages bring. A stage
prices a micro-batch on its own layers (`stage_costs`: the same cost model on L_s of the model's L
layers; the LM head on the last stage only, the engine's CPU overhead on the first, where the
scheduler runs), then sends its activations, tokens x hidden x 2 bytes per GPU, to the next stage
over the link between them (sim/presets/links.py). Sarathi-Serve sends them with a blocking
`torch.distributed.send` at the end of each stage's forward (sarathi/model_executor/models/
falcon.py:416-421, parallel_utils/pipeline_parallel/mappings.py:12-24 on the osdi-sarathi-serve
branch), so the send occupies the sending stage.

Virtual engines. Up to P micro-batches are in flight, each from its own scheduler with its own
requests: vLLM V0's virtual engines (one `Scheduler` per pipeline stage in vllm/engine/
llm_engine.py, each with 1/P of the KV blocks, `num_gpu_blocks //= pipeline_parallel_size` in
vllm/core/scheduler.py, from v0.5.1), and Sarathi-Serve's pipeline engine, whose one scheduler
runs at most P batches at once (sarathi/core/scheduler/base_scheduler.py:74-87) and leaves out
of the next the requests still in flight (sarathi_scheduler.py:121-126). The lab runs P
`_VirtualEngine`s, each the step engine (sim/serving/engine.py) on its share of the requests,
dealt in arrival order in turn (vLLM adds a request to the scheduler with the fewest unfinished
ones, which is this order while the loads are even), on 1/P of the KV pool (Sarathi-Serve's
one scheduler shares its pool) and on 1/P of the running requests (`virtual_engine_limits`). A virtual engine
plans its next micro-batch once its last one has left the last stage (its requests' tokens are
out) and the first stage is free; of those ready, the earliest goes first, ties in turn.

The clock. Micro-batches keep their order through the stages (first in, first out). Micro-batch
m starts stage s at max(its end on stage s-1, the end of micro-batch m-1 on stage s): a stage is
idle while it waits for its next micro-batch, so micro-batches of uneven times leave bubbles. A
request's tokens come out when its micro-batch leaves the last stage. With one stage every
figure is the step engine's own.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, replace

import numpy as np

from sim.ceilings import MAX_TOKENS
from sim.cost.iteration import ACTIVATION_BYTES, CostModel
from sim.errors import InputError, check_number
from sim.presets.hardware import Gpu
from sim.presets.links import FREE_LINK, LINKS, Link, get_link, gpu_link
from sim.presets.models import Model
from sim.serving.engine import (
    SimulationLimitError,
    _check_fits,
    _Engine,
    kv_capacity_tokens,
    policy_reserve,
)
from sim.serving.policies import DEFAULT_LIMITS, Limits, PolicySpec, check_prompt_limit
from sim.serving.trace import Trace
from sim.serving.workloads import Workload, round_robin

MAX_STAGES = 64


@dataclass(frozen=True)
class Pipeline:
    """How a run's model is split: each stage's layers, in order, and the link between stages
    (an id of sim/presets/links.py; "" with one stage)."""
    layers: tuple[int, ...]
    link: str = ""

    @property
    def stages(self) -> int:
        return len(self.layers)


def make_pipeline(model: Model, gpu: Gpu, stages, layers=None, link: str | None = None) -> Pipeline:
    """`stages` checked, the model's layers split over them as vLLM splits them (`vllm_split`) or
    as `layers` gives them, and
    the link between stages: `link`, or by default the GPU's own (all stages in one node)."""
    p = check_number("pipeline stages (pp)", stages, low=1, low_inclusive=True, high=MAX_STAGES,
                     integer=True)
    if p > model.layers:
        raise InputError(f"pipeline stages (pp) {p} is more than {model.name}'s {model.layers} "
                         f"layers: a stage holds one layer or more; give at most {model.layers}")
    if layers is None:
        layers = vllm_split(model.layers, p)
    layers = tuple(layers)
    if len(layers) != p:
        raise InputError(f"--pp-layers gives {len(layers)} stages' layers but pp is {p}; give one "
                         f"count per stage (e.g. {_uneven_example(model.layers, p)})")
    if any(not isinstance(n, int) or n < 1 for n in layers) or sum(layers) != model.layers:
        raise InputError(f"--pp-layers {','.join(map(str, layers))} must be {p} whole numbers of at "
                         f"least 1 adding up to {model.name}'s {model.layers} layers (e.g. "
                         f"{_uneven_example(model.layers, p)})")
    if p == 1:
        if link is not None:
            raise InputError("--pp-link is the link between pipeline stages; with pp 1 there is "
                             "none: drop it or give --pp 2 or more")
        return Pipeline(layers)
    if link is not None:
        return Pipeline(layers, get_link(link).id)
    try:
        return Pipeline(layers, gpu_link(gpu).id)
    except InputError:
        raise InputError(f"{gpu.name} has no GPU-to-GPU link in its preset to carry activations "
                         f"between stages; name one with --pp-link ({', '.join(LINKS)} or "
                         f"{FREE_LINK.id})") from None


def vllm_split(total: int, stages: int) -> tuple[int, ...]:
    """`total` layers over `stages` (at most `total`) as vLLM 0.33.0 splits them
    (`get_pp_indices`, vllm/distributed/utils.py:225-230): evenly, and a remainder one layer each
    to the stages before the last, from the second-to-last back (the last stage also runs the final
    norm and the LM head). SGLang 0.5.23 gives the remainder to the last stages instead
    (sglang/srt/distributed/utils.py:136-145): give those layers to match it."""
    base, extra = divmod(total, stages)
    return tuple(base + (stages - 1 - extra <= i < stages - 1) for i in range(stages))


def _uneven_example(total: int, stages: int) -> str:
    return ",".join(map(str, vllm_split(total, stages)))


def parse_layers(text: str) -> tuple[int, ...]:
    """--pp-layers "40,40": each stage's layers."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--pp-layers {text!r}: give each stage's layers as whole numbers "
                         "separated by commas, e.g. 40,40") from None


def stage_model(model: Model, layers: int) -> Model:
    """The model as one stage holds it: `layers` of its layers and that share of its weights,
    the embedding and LM head spread with the layers (a dense model's parameters counted as a
    nominal share; a mixture of experts keeps its shapes, its active parameters differing from
    its total, and counts both embeddings on every stage)."""
    if layers == model.layers:
        return model
    share = layers / model.layers
    if model.experts > 1 and not model.nominal_params:
        return replace(model, layers=layers)
    return replace(model, layers=layers, nominal_params=model.params * share)


def stage_costs(cost: CostModel, pipeline: Pipeline | None) -> tuple[CostModel, ...]:
    """Each stage's cost model: the run's on its layers, the CPU overhead on the first stage only
    (the scheduler's), the GPU and tensor parallelism alike; a run without a pipeline is one
    stage, the run's own."""
    if pipeline is None or pipeline.stages == 1:
        return (cost,)
    return tuple(CostModel(cost.gpu, stage_model(cost.model, n), cost.mode,
                           cost.overhead_set_s if s == 0 else 0.0, cost.tp, cost.engine)
                 for s, n in enumerate(pipeline.layers))


def pipeline_kv_tokens(costs: tuple[CostModel, ...], reserve_fraction: float) -> int:
    """KV tokens the pipeline holds: every stage holds each token's KV for its layers, so the
    fewest any stage fits beside its weights."""
    try:
        return min(kv_capacity_tokens(c, reserve_fraction) for c in costs)
    except InputError as e:
        if len(costs) == 1:
            raise
        raise InputError(f"{e}, or more pipeline stages (pp)") from None


@dataclass(frozen=True, eq=False)
class StageSchedule:
    """Every micro-batch on every stage, in the order they entered the pipeline (the merged
    Trace's iteration order): what a stage-by-time chart draws. Times in seconds; `start_s` and
    `end_s` are [micro-batch, stage] arrays (`end_s` includes the send to the next stage)."""
    stages: int
    layers: tuple[int, ...]
    link: Link | None
    engine: np.ndarray          # the virtual engine that planned it
    start_s: np.ndarray
    end_s: np.ndarray
    send_s: np.ndarray          # its activations' transfer after each stage but the last
    decode_tokens: np.ndarray
    prefill_tokens: np.ndarray
    request_engine: np.ndarray  # the virtual engine each request was dealt to

    @property
    def micro_batches(self) -> int:
        return len(self.engine)

    @property
    def busy_s(self) -> np.ndarray:
        """Each stage's time computing or sending micro-batches."""
        return (self.end_s - self.start_s).sum(axis=0) if self.micro_batches else np.zeros(
            self.stages)

    @property
    def working_s(self) -> float:
        """The time at least one micro-batch is in the pipeline (first stage's start to last
        stage's end, merged): the makespan less the time it stood empty waiting for arrivals."""
        if not self.micro_batches:
            return 0.0
        spans = np.c_[self.start_s[:, 0], self.end_s[:, -1]]
        total, reach = 0.0, -np.inf
        for start, end in spans[np.argsort(spans[:, 0], kind="stable")]:
            if start > reach:
                total += end - start
            elif end > reach:
                total += end - reach
            reach = max(reach, end)
        return float(total)

    @property
    def bubble_s(self) -> float:
        """Idle stage-seconds while micro-batches are in the pipeline, summed over stages:
        stages x working time - busy time (one stage is never idle while one is in it: 0)."""
        if self.stages == 1:
            return 0.0
        return max(0.0, self.stages * self.working_s - float(self.busy_s.sum()))

    @property
    def bubble_fraction(self) -> float:
        """bubble / (stages x working time); 0 for an empty run."""
        whole = self.stages * self.working_s
        return self.bubble_s / whole if whole else 0.0

    @property
    def figures(self) -> StageFigures:
        """The schedule's totals without its micro-batches (what a study keeps of each run)."""
        return StageFigures(self.stages, self.layers, self.link, self.micro_batches,
                            self.working_s, tuple(float(b) for b in self.busy_s), self.bubble_s,
                            self.bubble_fraction)


@dataclass(frozen=True)
class StageFigures:
    """A pipelined run's stages and bubble, as `StageSchedule` measures them (seconds): small
    enough for a sweep or a capacity search to keep one per run; the Pipeline page's bubble
    arithmetic and the CLI's read the same figures."""
    stages: int
    layers: tuple[int, ...]
    link: Link | None
    micro_batches: int
    working_s: float
    busy_s: tuple[float, ...]
    bubble_s: float
    bubble_fraction: float

    @classmethod
    def of_one_stage(cls, trace: Trace, pipeline: Pipeline) -> StageFigures:
        """A one-stage pipeline's figures from its one engine's Trace, as its schedule measures
        them (to rounding): each iteration a micro-batch, the stage busy for all of them and never
        idle while one is in it, so the run need not go through the stages' clock."""
        busy = float(trace.duration_s.sum())
        return cls(1, pipeline.layers, None, trace.iterations, busy, (busy,), 0.0, 0.0)


@dataclass(frozen=True, eq=False)
class StagedRun:
    """A pipelined run: the merged Trace (its iterations are the micro-batches, each from its
    first stage's start to its last stage's end) and the stage-by-stage schedule."""
    trace: Trace
    schedule: StageSchedule

    def requests_of(self, micro_batch: int) -> np.ndarray:
        """The requests a micro-batch carries (decode rows, then prompt chunks), by their
        number in the workload. A request stays in the merged trace's running set across the
        other engines' micro-batches too: its decode rows are those of its own engine's."""
        t, m = self.trace, micro_batch
        decoding = t.decode_rows(m)
        decoding = decoding[self.schedule.request_engine[decoding] == self.schedule.engine[m]]
        return np.concatenate([decoding, t.chunk_request[t.chunk_iteration == m]])


class _StageClock:
    """The stages' shared timeline: when each is next free, and every micro-batch's times."""

    def __init__(self, costs: tuple[CostModel, ...], link: Link | None, hidden: int):
        self.link, self.hidden = link, hidden
        self.p = len(costs)
        # stages priced alike (the same layers and CPU overhead, the LM head or not) are priced
        # once a micro-batch: each stage's entry in `pricings`, and how many stages each has
        last = self.p - 1
        kinds = [(c.model, c.overhead_s, s == last) for s, c in enumerate(costs)]
        unique = list(dict.fromkeys(kinds))
        self.pricings = [(costs[kinds.index(kind)], kind[2]) for kind in unique]
        self.pricing_of = [unique.index(kind) for kind in kinds]
        self.stages_of = [kinds.count(kind) for kind in unique]
        self.free = [0.0] * self.p
        self.starts = array("d")   # micro-batch by micro-batch, stage by stage
        self.ends = array("d")
        self.sends: list[float] = []

    def send_s(self, tokens: int) -> float:
        """A micro-batch's activations to the next stage: tokens x hidden x 2 bytes per GPU."""
        if self.link is None:
            return 0.0
        return self.link.transfer_seconds(tokens * self.hidden * ACTIVATION_BYTES)

    def flow(self, start: float, tokens: int, attended: float, kv_read: float,
             rows: int) -> tuple[float, float, float, float]:
        """Pass a micro-batch entering at `start` through every stage: (compute_s and memory_s
        summed over stages, its end on the last stage, the first stage's CPU overhead). A stage
        holds it for its time plus, but for the last, the send to the next."""
        priced = [cost.time(tokens, attended, kv_read, rows if last else 0)
                  for cost, last in self.pricings]
        send = self.send_s(tokens)
        held = [p[2] + (0.0 if last else send) for p, (_, last) in zip(priced, self.pricings)]
        t = start
        free, starts, ends = self.free, self.starts, self.ends
        for s, kind in enumerate(self.pricing_of):
            begin = t if t > free[s] else free[s]
            t = free[s] = begin + held[kind]
            starts.append(begin)
            ends.append(t)
        self.sends.append(send)
        compute = sum(p[0] * n for p, n in zip(priced, self.stages_of))
        memory = sum(p[1] * n for p, n in zip(priced, self.stages_of))
        return compute, memory, t, priced[self.pricing_of[0]][3]


class _VirtualEngine(_Engine):
    """One virtual engine: the step engine on its share of the requests and of the KV pool, its
    iterations micro-batches through the stages' shared clock."""

    def __init__(self, *args, clock: _StageClock, **kwargs):
        super().__init__(*args, **kwargs)
        self._pass = clock.flow        # each iteration through the stages
        self.order: list[int] = []     # the pipeline's micro-batch number of each iteration


def dealt(workload: Workload, stages: int) -> tuple[tuple[np.ndarray, Workload], ...]:
    """The requests each virtual engine serves, dealt in arrival order in turn: their numbers in
    `workload`, and they as a workload of their own (one per engine that gets any)."""
    return tuple((ids, workload.take(ids)) for ids in round_robin(len(workload), stages))


def virtual_engine_limits(limits: Limits, mine: Workload, stages: int) -> Limits:
    """A virtual engine's limits: its share of the running requests, max_seqs / stages (at least
    one more than the streams it starts with). One scheduler counts every running request,
    those of the micro-batches in flight too (Sarathi-Serve's `running`, vLLM V1's), and SGLang
    caps a micro-batch at max_running_requests // pp_size (scheduler.py:1237-1243 at v0.5.23)."""
    if stages == 1:
        return limits
    streams = int(np.sum(mine.prefilled & (mine.arrival_s == mine.arrival_s[0])))
    return replace(limits, max_seqs=max(limits.max_seqs // stages, streams + 1))


def simulate_pipeline(workload: Workload, policy: PolicySpec, cost: CostModel, *, budget: int,
                      pipeline: Pipeline, limits: Limits = DEFAULT_LIMITS,
                      reserve_fraction: float | None = None) -> StagedRun:
    """Run `workload` on `pipeline`'s stages (the module docstring) and return the merged Trace
    with the stage-by-stage schedule."""
    budget = check_number("budget", budget, high=MAX_TOKENS, integer=True)
    if reserve_fraction is None:
        reserve_fraction = policy_reserve(policy, cost, budget)
    check_number("reserve fraction", reserve_fraction, low=0, low_inclusive=True, high=0.99)
    check_prompt_limit(workload, policy, budget)
    costs = stage_costs(cost.for_engine(policy.overhead), pipeline)
    p = pipeline.stages
    block = policy.profile.kv_block_tokens
    share = pipeline_kv_tokens(costs, reserve_fraction) // block // p * block
    link = get_link(pipeline.link) if p > 1 else None
    clock = _StageClock(costs, link, cost.model.hidden)
    shares = dealt(workload, p)
    owners = tuple(ids for ids, _ in shares)
    engines = [_VirtualEngine(mine, policy, budget, virtual_engine_limits(limits, mine, p), costs[0],
                              reserve_fraction, kv_tokens=share if p > 1 else None, clock=clock)
               for _, mine in shares]
    for engine in engines:
        try:
            _check_fits(engine.w, engine)
        except InputError as e:
            if p == 1:
                raise
            raise InputError(f"{e} (each of the {len(engines)} virtual engines holds its share "
                             f"of the stages' KV pool, {share:,} tokens; more stages (pp) or "
                             "GPUs per stage (tp) leave more)") from None
    _drive(engines, clock, limits.max_iterations)
    parts = tuple(engine._trace() for engine in engines)
    return _merged(workload, policy, budget, parts, owners, engines, clock, pipeline, link)


def _drive(engines: list[_VirtualEngine], clock: _StageClock, cap: int) -> None:
    """Step the virtual engines in the order their micro-batches enter the first stage: of those
    with requests left, the one that can start earliest (its last micro-batch out, the first
    stage free), ties in turn after the last one that went (an idle one keeps its turn)."""
    running = list(engines)
    first = 0   # the engine after the last that went: ties go to it, then on in turn
    count = 0
    while running:
        free = clock.free[0]
        engine, soonest = None, np.inf
        for e in running[first:] + running[:first]:
            when = e.now if e.now > free else free
            if when < soonest:
                engine, soonest = e, when
        engine.now = soonest
        if count >= cap:
            raise SimulationLimitError(
                f"the run needed more than {cap:,} iterations (the cap); shorten the workload or "
                "raise the iteration cap", cap=cap)
        at = running.index(engine)
        went = engine.step()
        if went:
            engine.order.append(count)
            count += 1
        else:
            engine._idle_until_next_arrival()
        if engine.finished >= engine.n:
            running.pop(at)
        elif went:
            at += 1
        first = at % len(running) if running else 0


def _merged(workload: Workload, policy: PolicySpec, budget: int, parts: tuple[Trace, ...],
            owners: tuple[np.ndarray, ...], engines: list[_VirtualEngine], clock: _StageClock,
            pipeline: Pipeline, link: Link | None) -> StagedRun:
    """One Trace of the whole run, its iterations the micro-batches in the order they entered the
    pipeline, its requests the workload's; and the schedule beside it."""
    n_micro = sum(t.iterations for t in parts)
    where = [np.asarray(e.order, np.int64) for e in engines]   # engine v's iteration i -> m
    engine_of = np.empty(n_micro, np.int64)
    request_engine = np.empty(len(workload), np.int64)
    for v, (at, ids) in enumerate(zip(where, owners)):
        engine_of[at], request_engine[ids] = v, v

    def per_iteration(name: str) -> np.ndarray:
        values = np.empty(n_micro, getattr(parts[0], name).dtype)
        for t, at in zip(parts, where):
            values[at] = getattr(t, name)
        return values

    kv_used = _kv_in_use(parts, where, n_micro)
    chunk_order = np.argsort(np.concatenate([at[t.chunk_iteration] for t, at in zip(parts, where)]),
                             kind="stable")

    def chunks(name: str, to=lambda t, at, ids, column: column) -> np.ndarray:
        return np.concatenate([to(t, at, ids, getattr(t, name))
                               for t, at, ids in zip(parts, where, owners)])[chunk_order]

    stays = [np.concatenate(column) for column in zip(*(
        _stays(t, at, ids) for t, at, ids in zip(parts, where, owners)))]

    token_owner = np.concatenate([np.repeat(ids, np.diff(t.token_offsets))
                                  for t, ids in zip(parts, owners)])
    token_times = np.concatenate([t.token_s for t in parts])
    order = np.lexsort((token_times, token_owner))
    n = len(workload)
    preemptions = np.zeros(n, np.int64)
    recomputed = np.zeros(n, np.int64)
    caching = parts[0].cached_tokens is not None
    cached, looked_up = (np.zeros(n, np.int64), np.zeros(n, np.int64)) if caching else (None, None)
    for t, ids in zip(parts, owners):
        preemptions[ids] = t.preemptions
        recomputed[ids] = t.recomputed_tokens
        if caching:
            cached[ids], looked_up[ids] = t.cached_tokens, t.looked_up_tokens
    preempted_at = np.concatenate([_merged_index(at)[t.preemption_iteration]
                                   for t, at in zip(parts, where)])
    preempted = np.argsort(preempted_at, kind="stable")
    notes = tuple(f"virtual engine {v + 1}: {note}" for v, t in enumerate(parts)
                  for note in t.notes) if len(parts) > 1 else parts[0].notes
    trace = Trace(
        policy=parts[0].policy, budget=budget,
        kv_capacity_tokens=sum(t.kv_capacity_tokens for t in parts),
        start_s=per_iteration("start_s"), end_s=per_iteration("end_s"),
        decode_tokens=per_iteration("decode_tokens"), prefill_tokens=per_iteration("prefill_tokens"),
        compute_s=per_iteration("compute_s"), memory_s=per_iteration("memory_s"),
        overhead_s=per_iteration("overhead_s"), kv_used_tokens=kv_used,
        running_decoders=per_iteration("running_decoders"),
        chunk_iteration=chunks("chunk_iteration", lambda t, at, ids, c: at[c]),
        chunk_request=chunks("chunk_request", lambda t, at, ids, c: ids[c]),
        chunk_start=chunks("chunk_start"), chunk_length=chunks("chunk_length"),
        arrival_s=workload.arrival_s, prompt=workload.prompt, output=workload.output,
        prefilled=workload.prefilled, preemptions=preemptions, recomputed_tokens=recomputed,
        cached_tokens=cached, looked_up_tokens=looked_up,
        kv_cached_tokens=_kv_in_use(parts, where, n_micro, "kv_cached_tokens"),
        token_offsets=np.r_[0, np.cumsum(np.bincount(token_owner, minlength=n))],
        token_s=token_times[order],
        member_request=stays[0], member_admission=stays[1], member_first=stays[2],
        member_stop=stays[3],
        partial_step_iteration=np.concatenate([at[t.partial_step_iteration]
                                               for t, at in zip(parts, where)]),
        partial_step_request=np.concatenate([ids[t.partial_step_request]
                                             for t, ids in zip(parts, owners)]),
        preemption_iteration=preempted_at[preempted],
        preemption_request=np.concatenate([ids[t.preemption_request]
                                           for t, ids in zip(parts, owners)])[preempted],
        notes=notes, starved_iterations=sum(t.starved_iterations for t in parts),
        iteration_preemptions=per_iteration("iteration_preemptions"))
    schedule = StageSchedule(
        stages=pipeline.stages, layers=pipeline.layers, link=link, engine=engine_of,
        start_s=np.frombuffer(clock.starts).reshape(-1, pipeline.stages),
        end_s=np.frombuffer(clock.ends).reshape(-1, pipeline.stages),
        send_s=np.asarray(clock.sends), decode_tokens=trace.decode_tokens,
        prefill_tokens=trace.prefill_tokens, request_engine=request_engine)
    return StagedRun(trace, schedule)


def _merged_index(at: np.ndarray) -> np.ndarray:
    """A virtual engine's iteration i -> its micro-batch's number in the pipeline, with one more
    entry for 'after its last' (a stay still open at the end, a preemption before a plan)."""
    return np.append(at, at[-1] + 1 if len(at) else 0)


def _stays(trace: Trace, at: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, ...]:
    """A virtual engine's stays in its running set in the merged numbering: request, admission,
    first micro-batch, and the one after its last (the other engines' micro-batches between
    them are not its: `StageSchedule.engine` says whose each is)."""
    index = _merged_index(at)
    first = index[trace.member_first]
    ran = trace.member_stop > trace.member_first
    stop = np.where(ran, index[np.maximum(trace.member_stop - 1, 0)] + 1, first)
    return ids[trace.member_request], trace.member_admission, first, stop


def _kv_in_use(parts: tuple[Trace, ...], where: list[np.ndarray], n_micro: int,
               column: str = "kv_used_tokens") -> np.ndarray:
    """KV tokens in use (`column`: or held by cached blocks nobody reads) over the whole pipeline
    after each micro-batch: its own engine's, plus each other engine's after that engine's
    latest micro-batch before it."""
    total = np.zeros(n_micro, np.int64)
    for t, at in zip(parts, where):
        mine = np.zeros(n_micro, np.int64)
        mine[at] = getattr(t, column)
        seen = np.zeros(n_micro, bool)
        seen[at] = True
        latest = np.maximum.accumulate(np.where(seen, np.arange(n_micro), -1))
        total += np.where(latest >= 0, mine[latest.clip(min=0)], 0)
    return total
