"""What a run produced (`Trace`), and the recorder that builds it as the engine goes.

Memory stays linear in requests + tokens emitted: who decoded in which iteration is kept as each
decoder's membership of the running set (from the iteration it first runs in to the one after its
last), plus explicit rows only for iterations where the budget let part of the running list step.
Per-token times are assembled once, at the end.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from sim.serving.workloads import Workload


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
    overhead_s: np.ndarray         # the time the engine's CPU work added (0 where it hid)
    kv_used_tokens: np.ndarray
    running_decoders: np.ndarray   # decoders running when it was planned (decode_tokens of them step)
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
    # who decoded when: one row per stay of a request in the running decoders (its admission
    # number orders the running list), running from iteration `first` to before `stop`; in every
    # iteration where all running decoders step, each member steps
    member_request: np.ndarray = field(repr=False)
    member_admission: np.ndarray = field(repr=False)
    member_first: np.ndarray = field(repr=False)
    member_stop: np.ndarray = field(repr=False)
    # the decode rows of iterations where only the first decode_tokens of the running list stepped
    partial_step_iteration: np.ndarray = field(repr=False)
    partial_step_request: np.ndarray = field(repr=False)
    # preemptions in the order they happened: the iteration they made room for, the victim
    preemption_iteration: np.ndarray = field(repr=False)
    preemption_request: np.ndarray = field(repr=False)
    notes: tuple[str, ...]
    starved_iterations: int
    # per iteration: requests preempted to make room for it (KV full), for when it happened
    iteration_preemptions: np.ndarray
    # per request, with prefix caching: prompt tokens found cached and looked up, over its
    # admissions (None: a run without prefix caching)
    cached_tokens: np.ndarray | None = None
    looked_up_tokens: np.ndarray | None = None
    # per iteration, once it is done: KV tokens of cached blocks nobody reads (evictable, counted
    # as free; 0 without prefix caching), beside kv_used_tokens (what running requests hold)
    kv_cached_tokens: np.ndarray | None = None

    @property
    def prefix_hit_tokens(self) -> int:
        """Prompt tokens found in the prefix cache over the run (0 without caching)."""
        return 0 if self.cached_tokens is None else int(self.cached_tokens.sum())

    @property
    def prefix_hit_rate(self) -> float:
        """Hit tokens / prompt tokens looked up over the run, every admission's (a preempted
        request's again, with what it had generated): vLLM's prefix cache hit rate. 0 without
        caching."""
        if self.looked_up_tokens is None or not self.looked_up_tokens.sum():
            return 0.0
        return self.prefix_hit_tokens / int(self.looked_up_tokens.sum())

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
        """Request ids of the decode rows of one iteration, in running-list order."""
        if self.decode_tokens[iteration] < self.running_decoders[iteration]:
            return self.partial_step_request[self.partial_step_iteration == iteration]
        running = (self.member_first <= iteration) & (iteration < self.member_stop)
        order = np.argsort(self.member_admission[running])
        return self.member_request[running][order]


# An iteration's record, one row of ITERATION_COLUMNS values: kept as one float64 array (one
# extend an iteration, not one append a column); the counts are whole numbers, exact as floats.
ITERATION_COLUMNS = ("start_s", "end_s", "decode_tokens", "prefill_tokens", "compute_s",
                     "memory_s", "overhead_s", "running_decoders", "kv_used_tokens",
                     "iteration_preemptions", "kv_cached_tokens")
FLOAT_COLUMNS = ("start_s", "end_s", "compute_s", "memory_s", "overhead_s")


class TraceRecorder:
    """Collects a run as it happens (8 bytes a value), then builds its `Trace` by keyword."""

    def __init__(self):
        self.iterations = 0                  # begun so far (the one being built counts)
        self._rows = array("d")              # ITERATION_COLUMNS, a row per finished iteration
        self._row: tuple = ()                # the iteration being built, until it ends
        self.chunk_iteration, self.chunk_request, self.chunk_start, self.chunk_length = (
            array("q") for _ in range(4))
        self.first_iteration, self.first_request = array("q"), array("q")
        self.member_request, self.member_admission, self.member_first, self.member_stop = (
            array("q") for _ in range(4))
        self.partial_iteration, self.partial_request = array("q"), array("q")
        self.preemption_iteration, self.preemption_request = array("q"), array("q")
        self._open: dict[int, tuple[int, int]] = {}   # running decoder -> (admission, first)
        self._preemptions_counted = 0                   # in `preempted` so far

    # --- during an iteration, in the engine's order -------------------------------------------
    def chunk(self, request: int, start: int, length: int) -> None:
        """A prefill chunk of the iteration being built."""
        self.chunk_iteration.append(self.iterations)
        self.chunk_request.append(request)
        self.chunk_start.append(start)
        self.chunk_length.append(length)

    def iteration(self, start_s: float, end_s: float, decodes: int, prefill: int,
                  compute_s: float, memory_s: float, overhead_s: float,
                  running_decoders: int) -> None:
        self._row = (start_s, end_s, decodes, prefill, compute_s, memory_s, overhead_s,
                     running_decoders)
        self.iterations += 1

    def partial_step(self, requests: np.ndarray) -> None:
        """The last iteration stepped only `requests`, the head of the running list."""
        self.partial_iteration.extend([self.iterations - 1] * len(requests))
        self.partial_request.extend(requests.tolist())

    def first_token(self, request: int) -> None:
        """`request`'s prefill completed in the last iteration (its token comes at its end)."""
        self.first_iteration.append(self.iterations - 1)
        self.first_request.append(request)

    def preemption(self, request: int) -> None:
        """`request` was preempted to make room for the next iteration."""
        self.preemption_iteration.append(self.iterations)
        self.preemption_request.append(request)

    def end_iteration(self, kv_used: int, kv_cached: int = 0) -> None:
        """KV in use once the iteration is done, and held by cached blocks nobody reads; the
        preemptions since the one before."""
        preempted = len(self.preemption_request) - self._preemptions_counted
        self._rows.extend((*self._row, kv_used, preempted, kv_cached))
        self._preemptions_counted += preempted

    # --- the running decoders -------------------------------------------------------------------
    def join(self, requests, admissions) -> None:
        """`requests` run as decoders from the next iteration on."""
        for request, admission in zip(requests, admissions):
            self._open[int(request)] = (int(admission), self.iterations)

    def leave(self, requests) -> None:
        """`requests` (finished, or preempted before the next iteration) stop running."""
        for request in requests:
            admission, first = self._open.pop(int(request))
            for column, value in ((self.member_request, request), (self.member_admission, admission),
                                  (self.member_first, first), (self.member_stop, self.iterations)):
                column.append(int(value))

    # --- the result -----------------------------------------------------------------------------
    def trace(self, workload: Workload, **summary) -> Trace:
        """The Trace; `summary` holds the run's own fields (policy, budget, kv_capacity_tokens,
        preemptions, recomputed_tokens, notes, starved_iterations)."""
        self.leave(list(self._open))
        rows = np.asarray(self._rows).reshape(-1, len(ITERATION_COLUMNS))
        per_iteration = {name: rows[:, i] if name in FLOAT_COLUMNS else rows[:, i].astype(np.int64)
                         for i, name in enumerate(ITERATION_COLUMNS)}
        floats = {name: per_iteration.pop(name) for name in FLOAT_COLUMNS}
        # the other columns are typed arrays ("q": int64), so numpy keeps their type
        ints = {**{name: per_iteration.pop(name) for name in (
            "decode_tokens", "prefill_tokens", "running_decoders")},
            **{name: np.asarray(getattr(self, name)) for name in (
                "chunk_iteration", "chunk_request", "chunk_start", "chunk_length",
                "member_request", "member_admission", "member_first", "member_stop",
                "preemption_iteration", "preemption_request")}}
        partial = {"partial_step_iteration": np.asarray(self.partial_iteration),
                   "partial_step_request": np.asarray(self.partial_request)}
        firsts = (np.asarray(self.first_iteration), np.asarray(self.first_request))
        offsets, token_s = _token_times(workload, floats["end_s"], ints, partial, firsts)
        return Trace(**summary, **floats, **ints, **partial, **per_iteration,
                     arrival_s=workload.arrival_s, prompt=workload.prompt, output=workload.output,
                     prefilled=workload.prefilled, token_offsets=offsets, token_s=token_s)


def _token_times(workload: Workload, end_s: np.ndarray, ints: dict, partial: dict,
                 firsts: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every token's time, CSR by request: decode tokens (each membership's share of the
    iterations where every running decoder stepped, and the partial steps' rows), first tokens,
    and the streams' token emitted before the run (at their arrival)."""
    everyone = ints["decode_tokens"] == ints["running_decoders"]   # (none running: no members)
    iterations = np.flatnonzero(everyone)
    before = np.r_[0, np.cumsum(everyone)]          # such iterations before each iteration
    low, high = before[ints["member_first"]], before[ints["member_stop"]]
    counts = high - low
    slot = np.repeat(low - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    first_iteration, first_request = firsts
    streaming = np.flatnonzero(workload.prefilled)
    reqs = np.concatenate([np.repeat(ints["member_request"], counts),
                           partial["partial_step_request"], first_request, streaming])
    times = np.concatenate([end_s[iterations[slot]], end_s[partial["partial_step_iteration"]],
                            end_s[first_iteration], workload.arrival_s[streaming]])
    order = np.lexsort((times, reqs))
    per_request = np.bincount(reqs, minlength=len(workload))
    return np.r_[0, np.cumsum(per_request)], times[order]
