"""Schedulers: each builds the next iteration's batch, in the shape of the `build_batch`
sketch in the source article "Splitting Prefill From Decode Inside a Step".

A policy reads the engine's state (running decodes, partial prefills, the waiting queue, free KV),
the token budget and the limits, and returns a `Batch`: how many running decodes take a token,
which prefill chunks run, which waiting requests are admitted, and the KV all that commits. The
engine does the rest (KV pool, clock, tokens). Read side by side, the policies differ only where
the real systems differ; docs/sources.md gives the source of each (paper section, or upstream file
at its release tag).

Decodes are always "the first `decodes` of the running list" (admission order), so a policy only
says how many. KV follows the one reservation rule of the policy's `PolicySpec`
(`reserve_whole_prompt`), handed to its function as `whole_prompt`.

A new policy declares what it does in its `PolicySpec`, because the run-effort estimate
(sim/effort/estimate.py, which bounds a run's CPU time and memory before it starts) reads these
flags instead of calling the function: `chunked`, `decodes_take_budget`, `prefill_with_decodes`,
`budget_caps_decodes` and `prompt_work_finishes_or_fills`. The last one has no default: the
estimate's bound on iterations rests on "an iteration with prompt work finishes a prompt or fills
the token budget", which per-request chunk caps (vLLM's long_prefill_token_threshold) or pipeline
micro-batches break; a policy that breaks it declares False and is bounded by its prompt tokens
instead (one iteration per token at worst). tests/sim/effort/test_estimate.py checks the
declared value of every policy here on random runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sim.ceilings import MAX_REQUESTS
from sim.cost import overhead as engine_overhead
from sim.cost.overhead import Overhead
from sim.errors import InputError, check_number

DEFAULT_MAX_ITERATIONS = 2_000_000
MAX_ITERATION_CAP = 5_000_000   # ~20 s and ~2 GB here: the most any one run may take


@dataclass(frozen=True, kw_only=True)
class Limits:
    """A run's caps besides the token budget, checked when made; named, never positional."""
    max_seqs: int = 1024     # max running requests (max_num_seqs, max_running_requests)
    # chunked policies: requests mid-prefill at once, counting those a step admits (unchunked
    # ones finish every prefill in its iteration); None: no cap. vLLM V0's
    # max_num_partial_prefills ("the maximum number of sequences that can be partially prefilled
    # concurrently", default 1; vllm-project/vllm#10235; V1 has no such cap as of v0.33.0);
    # SGLang chunks one request at a time.
    max_partial_prefills: int | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS   # a run that needs more is refused

    def __post_init__(self):
        set_ = object.__setattr__   # frozen: store the checked, whole values
        set_(self, "max_seqs", check_number("max sequences", self.max_seqs, high=MAX_REQUESTS,
                                            integer=True))
        if self.max_partial_prefills is not None:
            set_(self, "max_partial_prefills", check_number(
                "max partial prefills", self.max_partial_prefills, high=MAX_REQUESTS, integer=True))
        set_(self, "max_iterations", check_number("iteration cap", self.max_iterations,
                                                  integer=True, high=MAX_ITERATION_CAP))


DEFAULT_LIMITS = Limits()


@dataclass
class Batch:
    """One iteration's work, and the KV it commits beyond one token per decode."""
    decodes: int = 0                                   # first `decodes` running decoders step
    chunks: list[tuple[int, int]] = field(default_factory=list)   # (request id, prompt tokens)
    admitted: list[int] = field(default_factory=list)  # waiting requests that join the running set
    kv: list[tuple[int, int]] = field(default_factory=list)       # (request id, KV tokens)

    def add_chunk(self, request: int, tokens: int, kv: int) -> None:
        self.chunks.append((request, tokens))
        if kv:
            self.kv.append((request, kv))

    def admit(self, request: int, tokens: int, kv: int) -> None:
        self.admitted.append(request)
        self.add_chunk(request, tokens, kv)

    @property
    def kv_tokens(self) -> int:
        """KV this batch needs free: a token per decode plus its reservations."""
        return self.decodes + sum([tokens for _, tokens in self.kv])


class State(Protocol):
    """What a policy may read (implemented by the engine)."""
    decoding: int                 # running requests whose prefill is complete
    partial: Sequence[int]        # requests part-way through prefill, in priority order
    waiting: Sequence[int]        # arrived, not yet admitted, in queue order
    free_kv: int                  # KV tokens free now
    kv_watermark: int             # KV tokens to keep free when admitting (Sarathi: 1%)
    preempted_this_step: bool

    def prefill_left(self, request: int) -> int: ...


def _admit_chunked(state: State, budget: int, limits: Limits, used: int, batch: Batch,
                   whole_prompt: bool) -> None:
    """Admit waiting requests first-come-first-served, each chunked to the leftover budget, until
    the budget, KV memory, max_seqs or the cap on partial prefills runs out. Reserving the whole
    prompt at admission (Sarathi, SGLang) means a request never fails half-way through its
    prefill; vLLM V1 needs KV for the chunk only."""
    # this step's decodes get their KV token first, whatever the reservation rule, so admitting
    # a prompt never evicts a running decoder; vLLM V1 also needs KV for the chunks before it
    free = state.free_kv - state.kv_watermark - (state.decoding if whole_prompt else used)
    running = state.decoding + len(state.partial)
    for request in state.waiting:
        room = budget - used
        if room <= 0 or running + len(batch.admitted) >= limits.max_seqs:
            break
        if limits.max_partial_prefills is not None \
                and len(state.partial) + len(batch.admitted) >= limits.max_partial_prefills:
            break
        need = state.prefill_left(request)
        take = min(need, room)
        kv = need if whole_prompt else take
        if kv > free:
            break
        batch.admit(request, take, kv)
        used += take
        free -= kv


def _continue_partials(state: State, budget: int, used: int, batch: Batch,
                       whole_prompt: bool) -> int:
    """Give each partially prefilled request its next chunk: min(left, budget - used); its KV
    was reserved at admission, or is taken now chunk by chunk."""
    for request in state.partial:
        take = min(state.prefill_left(request), budget - used)
        if take <= 0:
            break
        batch.add_chunk(request, take, 0 if whole_prompt else take)
        used += take
    return used


def sarathi(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """Sarathi-Serve stall-free batching (arXiv 2403.02310, section 4.2): every running decode
    first (never refused, even past the budget), then partial prefills, then new requests chunked
    to the leftover budget, whole prompt's KV reserved at admission, 1% of KV kept free."""
    batch = Batch(decodes=state.decoding)
    used = _continue_partials(state, budget, batch.decodes, batch, whole_prompt)
    _admit_chunked(state, budget, limits, used, batch, whole_prompt)
    return batch


def vllm_v1(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """vLLM V1 (vllm/v1/core/sched/scheduler.py at v0.33.0): the running list in order, each request given
    min(what it needs, budget left), so the budget caps decodes too; then waiting requests with
    chunking and KV per chunk. No admission in a step that preempted."""
    batch = Batch(decodes=min(state.decoding, budget))
    used = _continue_partials(state, budget, batch.decodes, batch, whole_prompt)
    if not state.preempted_this_step:
        _admit_chunked(state, budget, limits, used, batch, whole_prompt)
    return batch


def sglang(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """SGLang default (python/sglang/srt/managers/scheduler.py at v0.5.23, get_next_batch_to_run):
    prefill-first. If a prefill batch can be formed (the chunked request's next chunk, then new
    requests up to the chunk size, whole prompt's KV reserved at admission), it runs alone and
    decodes wait; otherwise every running request decodes, up to max running requests."""
    batch = Batch()
    used = _continue_partials(state, budget, 0, batch, whole_prompt)
    _admit_chunked(state, budget, limits, used, batch, whole_prompt)
    if not batch.chunks:
        batch.decodes = min(state.decoding, limits.max_seqs)
    return batch


def _admit_whole(state: State, limits: Limits, batch: Batch, token_cap: float) -> None:
    """Admit waiting requests with their whole prompt, FCFS, while KV, max_seqs and the token cap
    allow (the first prompt is never refused for the cap: unchunked prompts cannot be split).
    The chunk is the whole prompt, so either reservation rule reserves all of it now."""
    free = state.free_kv - state.kv_watermark - state.decoding   # the decodes' KV comes first
    used = 0
    running = state.decoding + len(state.partial)
    for request in state.waiting:
        need = state.prefill_left(request)
        if need > free or running + len(batch.admitted) >= limits.max_seqs:
            break
        if batch.admitted and used + need > token_cap:
            break
        batch.admit(request, need, need)
        used += need
        free -= need


def vllm_v0(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """vLLM V0 default, the 'vLLM' baseline of Sarathi-Serve: if waiting prompts fit, a
    prefill-only iteration of whole prompts (up to the budget of batched tokens; decodes pause:
    the stall); otherwise every running request decodes."""
    batch = Batch()
    _admit_whole(state, limits, batch, token_cap=budget)
    if not batch.chunks:
        batch.decodes = state.decoding
    return batch


def orca(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """Orca (OSDI'22) iteration-level scheduling: every running decode plus whole new prompts in
    the same iteration, no token budget."""
    batch = Batch(decodes=state.decoding)
    _admit_whole(state, limits, batch, token_cap=float("inf"))
    return batch


@dataclass(frozen=True, kw_only=True)
class PolicySpec:
    """A scheduler and what it does, declared (the run-effort estimate reads these fields
    instead of asking the function; tests/sim/serving/test_policies.py checks each against the
    function)."""
    name: str
    build: Callable[[State, int, Limits, bool], Batch]
    chunked: bool               # splits a prompt to fit the budget
    decodes_take_budget: bool   # decodes and chunks share one budget (a budget <= decodes starves)
    prefill_with_decodes: bool  # prompt work runs in the same iteration as the running decodes
    budget_caps_decodes: bool   # the budget caps the decodes too (some decoders skip a step)
    # every iteration with prompt work finishes a prompt or fills the budget (module docstring)
    prompt_work_finishes_or_fills: bool
    reserve_whole_prompt: bool  # KV for the whole prompt at admission, else per chunk
    label: str
    summary: str                # how it builds an iteration, in one phrase for the app's text
    intro: str                  # what the engine is, in one sentence, where the text first names it
    kv_watermark: float = 0.0   # share of KV kept free when admitting (Sarathi: 1% of blocks)
    # the engine's CPU time per iteration and whether it hides behind the GPU step, pinned to its
    # release (sim/cost/overhead.py)
    overhead: Overhead = field(kw_only=True)

    @property
    def engine(self) -> str:
        """The engine's name alone, as prose lists it: the label before its parenthesis."""
        return self.label.split(" (")[0]

    def plan(self, state: State, budget: int, limits: Limits) -> Batch:
        """The next batch, its KV reserved by this policy's one reservation rule."""
        return self.build(state, budget, limits, self.reserve_whole_prompt)


POLICIES: dict[str, PolicySpec] = {p.name: p for p in (
    PolicySpec(name="sarathi", build=sarathi, chunked=True, decodes_take_budget=True,
               prefill_with_decodes=True, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True,
               label="Sarathi-Serve (stall-free, chunked)",
               intro="Sarathi-Serve is the research scheduler that introduced stall-free "
                     "batching with a token budget (Agrawal et al., OSDI 2024)",
               summary="every stream's decode token first, then a chunk of the prompt fills what "
                       "is left of the budget, in the same iteration", kv_watermark=0.01,
               overhead=engine_overhead.SARATHI_SERVE),
    PolicySpec(name="vllm-v1", build=vllm_v1, chunked=True, decodes_take_budget=True,
               prefill_with_decodes=True, budget_caps_decodes=True, reserve_whole_prompt=False,
               prompt_work_finishes_or_fills=True,
               label="vLLM V1 (chunked prefill)",
               intro="vLLM is a widely used open-source LLM server; its V1 engine, the "
                     "default since 2025, chunks prompts",
               summary="the streams first (the budget caps their decode tokens too), then a "
                       "chunk of the prompt fills what is left of the budget",
               overhead=engine_overhead.VLLM_V1),
    PolicySpec(name="sglang", build=sglang, chunked=True, decodes_take_budget=False,
               prefill_with_decodes=False, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True,
               label="SGLang (prefill-first, chunked)",
               intro="SGLang is another open-source LLM server; by default it runs prompt "
                     "chunks before decodes",
               summary="prefill first: chunks of the prompt, up to the budget each, run alone "
                       "while the streams wait",
               overhead=engine_overhead.SGLANG),
    PolicySpec(name="vllm-v0", build=vllm_v0, chunked=False, decodes_take_budget=False,
               prefill_with_decodes=False, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True,
               label="vLLM V0 (prefill-only iterations)",
               intro="vLLM V0 is the open-source vLLM server's first engine, the baseline "
                     "the Sarathi-Serve paper measures against",
               summary="the whole prompt in a prefill-only iteration while the streams wait",
               overhead=engine_overhead.VLLM_V0),
    PolicySpec(name="orca", build=orca, chunked=False, decodes_take_budget=False,
               prefill_with_decodes=True, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True,
               label="Orca (decodes + whole prompts)",
               intro="Orca (OSDI 2022) is the research server that introduced "
                     "iteration-level scheduling, now called continuous batching",
               summary="every stream's decode token plus the whole prompt in one iteration",
               overhead=engine_overhead.ORCA),
)}
CHUNKED = tuple(n for n, p in POLICIES.items() if p.chunked)
UNCHUNKED = tuple(n for n, p in POLICIES.items() if not p.chunked)


def in_words(names) -> str:
    """Policies as the app's help lists them, each from its PolicySpec ("vllm-v0: the whole
    prompt in a prefill-only iteration while the streams wait; orca: ...")."""
    return "; ".join(f"{n}: {POLICIES[n].summary}" for n in names) + "."


def names_in_prose(names) -> str:
    """Words listed as prose lists them: "A", "A and B", "A, B and C"."""
    names = list(names)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def get_policy(name: str) -> PolicySpec:
    try:
        return POLICIES[name]
    except KeyError:
        raise InputError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}") from None
