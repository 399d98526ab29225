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

Each `PolicySpec` carries its engine's `EngineProfile` (sim/serving/engines.py), pinned to one
release: KV block size, watermark, what admission must find free beyond the prompt, the memory
kept back, the CPU overhead per iteration and whether it hides, the default budget and running
requests by GPU tier, each figure with the file and lines it is read from (docs/sources.md,
"Engine profiles", lists the same addresses). The rules an engine adds around its policy's
batch sit beside that policy here: SGLang's new_token_ratio, vLLM V0's prompt limit.

A new policy declares what it does in its `PolicySpec`, because the run-effort estimate
(sim/effort/estimate.py, which bounds a run's CPU time and memory before it starts) reads these
flags instead of calling the function: `chunked`, `decodes_take_budget`, `prefill_with_decodes`,
`budget_caps_decodes`, `prefill_ahead_of_decodes` (a partial prefill ahead of decoders in the
running list may take the budget before them) and `prompt_work_finishes_or_fills`. The last one
has no default: the estimate's bound on iterations rests on "an iteration with prompt work
finishes a prompt or fills the token budget", which pipeline micro-batches break; a policy that
breaks it declares False and is bounded by its prompt tokens instead (one iteration per token at
worst). A per-request chunk cap (vLLM's long_prefill_token_threshold) breaks it too, but only
under the limits that set it: every chunked policy takes a request's next prefill tokens from
one hook, `next_prefill_tokens`, the smallest of the caps in `PREFILL_CAPS`, and each cap says
under which limits it stops short, so what the estimate reads, `PolicySpec.finishes_or_fills`,
is a function of the policy and its limits. So are the other flags where a limit changes them
(SGLang's --enable-mixed-chunk puts its decodes beside its chunks): the estimate reads the
policy `under` its limits. tests/sim/effort/test_estimate.py checks it for every policy here on
random runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from sim.ceilings import MAX_REQUESTS, MAX_TOKENS
from sim.cost.iteration import CostModel
from sim.cost.overhead import Overhead
from sim.errors import InputError, check_number
from sim.serving.chunking import CHUNKINGS, DynamicChunks
from sim.serving.engines import (
    ORCA_PROFILE,
    SARATHI_PROFILE,
    SGLANG_PROFILE,
    V0_PROFILE,
    V1_PROFILE,
    EngineProfile,
)
from sim.serving.workloads import Workload

SWITCHES = ("on", "off")
ORDERS = ("fcfs", "lpm")
LPM_MAX_WAITING = 128   # SGLang: lpm sorts no queue longer than this (schedule_policy.py:137)
DEFAULT_MAX_ITERATIONS = 2_000_000
MAX_ITERATION_CAP = 5_000_000   # ~20 s and ~2 GB here: the most any one run may take


@dataclass(frozen=True, kw_only=True)
class Limits:
    """A run's caps besides the token budget, checked when made; named, never positional."""
    max_seqs: int = 1024     # max running requests (max_num_seqs, max_running_requests)
    # chunked policies: requests mid-prefill at once, counting those a step admits (unchunked
    # ones finish every prefill in its iteration); None: no cap. A what-if of the lab's, not an
    # engine knob of the releases profiled here: vLLM V0 gained max_num_partial_prefills after
    # the release the lab pins (vllm-project/vllm#10235), vLLM V1 0.33.0 has none (proposals:
    # PRs 31330, 41399, 49075), SGLang chunks one request at a time.
    max_concurrent_prefills: int | None = None
    # vLLM V1's long_prefill_token_threshold: the most prompt tokens one request computes in an
    # iteration while another request is running or waiting; 0 (vLLM's default): no cap
    # (`long_prefill_cap`)
    long_prefill_token_threshold: int = 0
    # SGLang's --enable-mixed-chunk (default off): the running decodes ride with the prefill
    # batch, whose chunk is the budget less those decodes (`sglang`)
    mixed_chunk: bool = False
    # SGLang: the requests may stop at EOS (chat traffic), so the running requests keep KV for
    # new_token_ratio of their future tokens; False, as SGLang's benchmark sends every request
    # (ignore_eos unless --disable-ignore-eos): they keep it for all of them, ratio 1.0
    # (python/sglang/srt/managers/schedule_policy.py:787 at v0.5.23)
    disable_ignore_eos: bool = False
    # chunked policies: requests with more prompt tokens to compute than the long-prefill
    # threshold that may be mid-prefill at once; a waiting long prompt past it is skipped, so a
    # shorter one behind it goes first; None: no cap. A what-if like max_concurrent_prefills:
    # vLLM V0's max_long_partial_prefills (PR 10235, `can_schedule`), proposed for V1 by PRs
    # 41399 and 49075; vLLM V1 0.33.0 has none.
    max_long_partial_prefills: int | None = None
    # vLLM V1's threshold as it was at v0.19.0 (the release PR 41399 measured against): applied
    # to a request even when it is the only one running or waiting (scheduler.py:409-410,
    # 666-668 there); v0.33.0 exempts a lone request. False: the pinned release's rule.
    cap_lone_prefill: bool = False
    # chunked policies: how a request's chunks are sized, "fixed" (what the budget leaves) or
    # "dynamic" (SGLang's dynamic chunking, `_dynamic_chunk`; sim/serving/chunking.py)
    chunking: str = "fixed"
    # prefix caching (sim/serving/kv.py `PrefixCache`): None, the engine's own (on in vLLM V1
    # and SGLang, off in vLLM V0 0.4.0 and the Sarathi-Serve artifact); "on" or "off"
    prefix_caching: str | None = None
    # the waiting queue's order: "fcfs", or "lpm", SGLang's longest prefix match first (its
    # --schedule-policy lpm, FCFS past 128 waiting requests: `waiting_order`)
    order: str = "fcfs"
    max_iterations: int = DEFAULT_MAX_ITERATIONS   # a run that needs more is refused

    def __post_init__(self):
        set_ = object.__setattr__   # frozen: store the checked, whole values
        set_(self, "max_seqs", check_number("max sequences", self.max_seqs, high=MAX_REQUESTS,
                                            integer=True))
        if self.max_concurrent_prefills is not None:
            set_(self, "max_concurrent_prefills", check_number(
                "max concurrent prefills", self.max_concurrent_prefills, high=MAX_REQUESTS, integer=True))
        set_(self, "long_prefill_token_threshold", check_number(
            "long prefill token threshold", self.long_prefill_token_threshold, high=MAX_TOKENS,
            low_inclusive=True, integer=True))
        for switch in ("mixed_chunk", "disable_ignore_eos"):
            if not isinstance(getattr(self, switch), bool):
                raise InputError(f"{switch.replace('_', ' ')} is on (True) or off (False), got "
                                 f"{getattr(self, switch)!r}")
        if self.max_long_partial_prefills is not None:
            set_(self, "max_long_partial_prefills", check_number(
                "max long partial prefills", self.max_long_partial_prefills, high=MAX_REQUESTS,
                integer=True))
            if not self.long_prefill_token_threshold:
                raise InputError("max long partial prefills needs a long prefill token threshold "
                                 "to say which prompts are long: give one too (e.g. 256)")
        if not isinstance(self.cap_lone_prefill, bool):
            raise InputError(f"cap lone prefill is on (True) or off (False), got "
                             f"{self.cap_lone_prefill!r}")
        if self.cap_lone_prefill and not self.long_prefill_token_threshold:
            raise InputError("cap lone prefill needs a long prefill token threshold, the cap it "
                             "applies to a lone request: give one too (e.g. 256)")
        if self.chunking not in CHUNKINGS:
            raise InputError(f"chunking is one of {', '.join(CHUNKINGS)}, got {self.chunking!r}")
        if self.prefix_caching not in (None, *SWITCHES):
            raise InputError(f"prefix caching is on or off (or left to the engine), got "
                             f"{self.prefix_caching!r}")
        if self.order not in ORDERS:
            raise InputError(f"the waiting order is one of {', '.join(ORDERS)}, got "
                             f"{self.order!r}")
        set_(self, "max_iterations", check_number("iteration cap", self.max_iterations,
                                                  integer=True, high=MAX_ITERATION_CAP))


DEFAULT_LIMITS = Limits()


def prefix_caching_on(profile: EngineProfile, limits: Limits) -> bool:
    """Whether a run caches prefixes: `limits.prefix_caching`, or the engine's own default."""
    if limits.prefix_caching is None:
        return profile.prefix_caching
    return limits.prefix_caching == "on"


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


class State(Protocol):
    """What a policy may read (implemented by the engine). KV is counted in slots: tokens
    rounded up to the engine's KV blocks (sim/serving/kv.py)."""
    decoding: int                 # running requests whose prefill is complete
    partial: Sequence[int]        # requests part-way through prefill, in admission order
    waiting: Sequence[int]        # arrived, not yet admitted, in queue order
    free_kv: int                  # KV slots free now
    kv_watermark: int             # KV slots to keep free when admitting (Sarathi: 1%)
    decode_kv: int                # slots the running decoders need to step once
    reserved_kv: float            # slots held back for the running requests' future tokens
    preempted_this_step: bool

    def prefill_left(self, request: int) -> int:
        """Prompt tokens `request` has still to compute: with prefix caching, a waiting
        request's cached prefix is skipped first, before any cap (`PREFILL_CAPS`) applies."""

    def cached_prefix(self, request: int) -> int:
        """Tokens a waiting request would find cached now (0 without prefix caching)."""

    def prefix_of(self, request: int) -> int:
        """Prompt tokens of `request` already computed (in KV)."""

    chunk_sizer: DynamicChunks | None   # SGLang's fitted chunk sizes, where chunking is dynamic

    def kv_slots(self, request: int, tokens: int) -> int:
        """Slots `request` must be given to hold `tokens` more KV."""

    def future_kv(self, request: int) -> int:
        """Slots a new request must find free beyond its prompt (SGLang: its output, up to
        4,096; others 0)."""

    def decoders_before(self, request: int) -> int:
        """Running decoders admitted before the partial prefill `request` (ahead of it in the
        running list)."""


# --- a request's next prefill tokens ----------------------------------------------------------
@dataclass(frozen=True)
class PrefillCap:
    """One bound on the prompt tokens a request computes in an iteration: `tokens(state,
    request, budget_left, limits)` is the most it allows, with `budget_left` tokens of the budget
    left.
    `stops_short(limits)` says whether, under those limits, it can end an iteration's prompt
    work before the prompt finishes or the budget fills: the run-effort estimate then bounds the
    run's iterations by its prompt tokens (module docstring)."""
    tokens: Callable[[State, int, int, Limits], int]
    stops_short: Callable[[Limits], bool] = lambda limits: False


def _prompt_left(state: State, request: int, budget_left: int, limits: Limits) -> int:
    return state.prefill_left(request)


def _budget_left(state: State, request: int, budget_left: int, limits: Limits) -> int:
    return budget_left


def _long_prefill_threshold(state: State, request: int, budget_left: int, limits: Limits) -> int:
    """vLLM V1's long_prefill_token_threshold (vllm/v1/core/sched/scheduler.py at v0.33.0): a
    request computes at most this many prompt tokens (`0 < threshold < num_new_tokens`, :844 for
    the running requests, :1332 for the waiting ones), unless it is the only request running or
    waiting, "when it is the only request there is nobody to starve" (:754-763), an exemption
    v0.19.0 did not have (`Limits.cap_lone_prefill`). 0: no cap."""
    threshold = limits.long_prefill_token_threshold
    eligible = state.decoding + len(state.partial) + len(state.waiting)
    if threshold and (eligible > 1 or limits.cap_lone_prefill):
        return threshold
    return state.prefill_left(request)


def _dynamic_chunk(state: State, request: int, budget_left: int, limits: Limits) -> int:
    """SGLang's dynamic chunking (`Limits.chunking` "dynamic"; sim/serving/chunking.py): a
    request part-way through its prompt takes the chunk whose time the fitted prefill curve
    levels with the base chunk's; its first chunk, the budget's. SGLang's own rule at pp > 1
    (scheduler.py:1383, 4143-4147 at v0.5.23); a what-if for the other policies and at pp = 1.
    Where the fit fails (as SGLang's does without a quadratic term), no cap."""
    prefix = state.prefix_of(request) if limits.chunking == "dynamic" else 0
    if not prefix or state.chunk_sizer is None:
        return state.prefill_left(request)
    return state.chunk_sizer.chunk(prefix)


# Every cap a chunked policy applies; the smallest wins. A cached prefix is skipped before any of
# them: `State.prefill_left` is what is left once it is (`_prompt_left`), and the prefix a
# chunk sizer reads includes it (`_dynamic_chunk`), so a cap counts only the uncached rest.
PREFILL_CAPS: tuple[PrefillCap, ...] = (
    PrefillCap(_prompt_left), PrefillCap(_budget_left),
    PrefillCap(_long_prefill_threshold,
               stops_short=lambda limits: limits.long_prefill_token_threshold > 0),
    PrefillCap(_dynamic_chunk, stops_short=lambda limits: limits.chunking == "dynamic"))


def next_prefill_tokens(state: State, request: int, budget_left: int, limits: Limits) -> int:
    """The prompt tokens `request` computes next, with `budget_left` tokens of the budget: the
    smallest any cap allows (Sarathi-Serve's `_get_seq_next_num_prefill_tokens`,
    sarathi/core/scheduler/sarathi_scheduler.py)."""
    return min(cap.tokens(state, request, budget_left, limits) for cap in PREFILL_CAPS)


def _admit_chunked(state: State, budget: int, limits: Limits, used: int, batch: Batch,
                   whole_prompt: bool) -> None:
    """Admit waiting requests first-come-first-served, each chunked to the leftover budget, until
    the budget, KV memory, max_seqs or the cap on concurrent partial prefills runs out. A request
    is admitted only if KV for its whole prompt is free (Sarathi-Serve, SGLang, and vLLM V1 since
    `scheduler_reserve_full_isl`), so it never fails half-way through its prefill; it reserves all
    of it now (`whole_prompt`) or chunk by chunk (vLLM V1)."""
    if not state.waiting:
        return
    # this step's decodes get their KV first, so admitting a prompt never evicts a running
    # decoder; then what the batch already commits, and what the policy holds back
    free = state.free_kv - state.kv_watermark - state.decode_kv - state.reserved_kv \
        - sum(state.kv_slots(request, tokens) for request, tokens in batch.kv)
    running = state.decoding + len(state.partial)
    long_cap = limits.max_long_partial_prefills   # None: no cap, nothing to count
    long_prefills = 0 if long_cap is None else sum(
        _long(state.prefill_left(r), limits) for r in state.partial)
    for request in waiting_order(state, limits):
        budget_left = budget - used
        if budget_left <= 0 or running + len(batch.admitted) >= limits.max_seqs:
            break
        if limits.max_concurrent_prefills is not None \
                and len(state.partial) + len(batch.admitted) >= limits.max_concurrent_prefills:
            break
        need = state.prefill_left(request)
        long = long_cap is not None and _long(need, limits)
        if long and long_prefills >= long_cap:
            continue   # the long prompt keeps its place; a shorter one behind it may go first
        future = state.future_kv(request)
        if state.kv_slots(request, need) + future > free:
            break
        take = next_prefill_tokens(state, request, budget_left, limits)
        if take <= 0:
            break
        kv = need if whole_prompt else take
        batch.admit(request, take, kv)
        long_prefills += long
        used += take
        free -= state.kv_slots(request, kv) + future


def waiting_order(state: State, limits: Limits) -> Sequence[int]:
    """The waiting requests in the order admission considers them: the queue's (FCFS), or with
    `order` "lpm" SGLang's longest prefix match first (`_sort_by_longest_prefix`, stable, so
    equal matches keep the queue's order), which it skips for a queue of more than 128
    (python/sglang/srt/managers/schedule_policy.py:137, 304-315, 441-450 at v0.5.23)."""
    if limits.order == "fcfs" or len(state.waiting) > LPM_MAX_WAITING:
        return state.waiting
    return sorted(state.waiting, key=lambda r: -state.cached_prefix(r))


def _long(tokens_left: int, limits: Limits) -> bool:
    """A request with more prompt tokens still to compute than the long-prefill threshold (vLLM
    V0's PartialPrefillMetadata counts `get_num_new_tokens() > long_prefill_token_threshold`)."""
    return 0 < limits.long_prefill_token_threshold < tokens_left


def _continue_partials(state: State, budget: int, limits: Limits, used: int, batch: Batch,
                       whole_prompt: bool) -> int:
    """Give each partially prefilled request its next chunk (`next_prefill_tokens`); its KV
    was reserved at admission, or is taken now chunk by chunk."""
    for request in state.partial:
        take = next_prefill_tokens(state, request, budget - used, limits)
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
    used = _continue_partials(state, budget, limits, batch.decodes, batch, whole_prompt)
    _admit_chunked(state, budget, limits, used, batch, whole_prompt)
    return batch


def vllm_v1(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """vLLM V1 (vllm/v1/core/sched/scheduler.py at v0.33.0): the running list in its order
    (admission order: `self.running.append` at :1549), each request given min(what it needs,
    budget left) (:795), so the budget caps decodes too and a partial prefill admitted before a
    decoder runs before it; then waiting requests with chunking and KV per chunk, each only if
    its whole prompt's KV fits. No admission in a step that preempted (:1050)."""
    batch = Batch()
    left = budget
    for request in state.partial:
        ahead = min(left, state.decoders_before(request) - batch.decodes)
        batch.decodes += ahead
        left -= ahead
        take = next_prefill_tokens(state, request, left, limits)
        if take <= 0:
            break
        batch.add_chunk(request, take, 0 if whole_prompt else take)
        left -= take
    rest = max(0, min(left, state.decoding - batch.decodes))
    batch.decodes += rest
    left -= rest
    if not state.preempted_this_step and left > 0:
        _admit_chunked(state, budget, limits, budget - left, batch, whole_prompt)
    return batch


def sglang(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """SGLang default (python/sglang/srt/managers/scheduler.py at v0.5.23, get_next_batch_to_run):
    prefill-first. If a prefill batch can be formed (the chunked request's next chunk, then new
    requests up to the chunk size, each needing KV for its prompt plus min(max_new_tokens, 4096)
    beside what the running requests keep for their future tokens), it runs alone and decodes
    wait; otherwise every running request decodes, up to max running requests.
    With --enable-mixed-chunk (`Limits.mixed_chunk`) the chunk size is less the running
    requests (`running_bs if self.is_mixed_chunk else 0`, scheduler.py:4165, taken off
    rem_chunk_tokens at schedule_policy.py:654-655), and they decode in the prefill batch
    (`mix_with_running`, scheduler.py:4375-4395); no prefill batch at all when they fill it
    (schedule_policy.py:890-891)."""
    running = min(state.decoding, limits.max_seqs)
    batch = Batch()
    used = _continue_partials(state, budget, limits, running if limits.mixed_chunk else 0, batch,
                              whole_prompt)
    _admit_chunked(state, budget, limits, used, batch, whole_prompt)
    if limits.mixed_chunk or not batch.chunks:
        batch.decodes = running
    return batch


# SGLang's admission keeps KV for the running requests' future tokens (python/sglang/srt at
# v0.5.23): each keeps its output still to come, up to 4,096 (SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION,
# managers/schedule_policy.py:1407-1412), times new_token_ratio (schedule_policy.py:785-794).
NEW_TOKEN_RATIO = 0.7                          # environ.py:646-649: the ratio's start,
MIN_NEW_TOKEN_RATIO = NEW_TOKEN_RATIO * 0.14   # its floor,
NEW_TOKEN_RATIO_DECAY = (NEW_TOKEN_RATIO - MIN_NEW_TOKEN_RATIO) / 600   # and its fall a step
CLIP_MAX_NEW_TOKENS = 4096
RETRACT_DECODE_STEPS = 20    # SGLANG_RETRACT_DECODE_STEPS: steps a retracted request is assumed to run


def future_tokens(output_left):
    """SGLang: the KV a request keeps for its output still to come, at most 4,096 (numbers or
    numpy arrays)."""
    return np.minimum(output_left, CLIP_MAX_NEW_TOKENS)


class NewTokenRatio:
    """SGLang's new_token_ratio: the share of their future tokens the running requests keep KV
    for. It falls a decode step at a time to its floor, and after a retraction it is set from
    the running requests (new_token_ratio_tracker.py estimate_new_token_ratio_after_retract)."""

    def __init__(self):
        self.value = NEW_TOKEN_RATIO

    def reset(self) -> None:
        """Back to its start: the server went idle (new_token_ratio_tracker.py:37-38)."""
        self.value = NEW_TOKEN_RATIO

    def after_decode_step(self) -> None:
        self.value = max(MIN_NEW_TOKEN_RATIO, self.value - NEW_TOKEN_RATIO_DECAY)

    def after_retraction(self, outputs: Sequence[int], left: Sequence[int]) -> None:
        """(tokens decoded + 20 per request) / (their max_new_tokens + 1), at most 1, over the
        running requests: their `outputs` and the output each has still to come (`left`)."""
        decoded = sum(output - rest for output, rest in zip(outputs, left))
        self.value = min(1.0, (decoded + RETRACT_DECODE_STEPS * len(outputs))
                         / (sum(outputs) + 1))


def _admit_whole(state: State, limits: Limits, batch: Batch, token_cap: float) -> None:
    """Admit waiting requests with their whole prompt, FCFS, while KV, max_seqs and the token cap
    allow (the first prompt is never refused for the cap: unchunked prompts cannot be split).
    The chunk is the whole prompt, so either reservation rule reserves all of it now."""
    free = state.free_kv - state.kv_watermark - state.decode_kv   # the decodes' KV comes first
    used = 0
    running = state.decoding + len(state.partial)
    for request in waiting_order(state, limits):
        need = state.prefill_left(request)
        slots = state.kv_slots(request, need)
        if slots > free or running + len(batch.admitted) >= limits.max_seqs:
            break
        if batch.admitted and used + need > token_cap:
            break
        batch.admit(request, need, need)
        used += need
        free -= slots


def vllm_v0(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """vLLM V0 default, the 'vLLM' baseline of Sarathi-Serve: if waiting prompts fit, a
    prefill-only iteration of whole prompts (up to the budget of batched tokens; decodes pause:
    the stall); otherwise every running request decodes. A prompt longer than the budget is
    ignored upstream; the engine refuses such a run (`EngineProfile.prompt_limit`)."""
    batch = Batch()
    _admit_whole(state, limits, batch, token_cap=budget)
    if not batch.chunks:
        batch.decodes = state.decoding
    return batch


def max_model_len(workload: Workload) -> int:
    """The smallest max_model_len that serves `workload`: its longest request, prompt + output."""
    return int(np.max(workload.prompt + workload.output))


def prompt_limit_problem(workload: Workload, policy: PolicySpec, budget: int) -> str | None:
    """What `policy`'s engine does with a prompt longer than `budget` where it ignores such
    prompts (vLLM V0: prompt_limit = max_num_batched_tokens without chunking, status
    FINISHED_IGNORED); None when every new prompt fits."""
    if not policy.profile.prompt_limit:
        return None
    prompts = workload.prompt[~workload.prefilled]
    longer = int(np.count_nonzero(prompts > budget))
    if not longer:
        return None
    longest = int(prompts.max())
    return (f"{policy.profile.name} ignores a prompt longer than its token budget (prompt_limit "
            f"= max_num_batched_tokens: the request ends at once with no output, status "
            f"FINISHED_IGNORED), "
            f"and {longer:,} of these {len(prompts):,} prompts are longer than {budget:,} tokens "
            f"(the longest {longest:,}); give a budget of at least {longest:,}, or vLLM V0's own "
            f"without chunking, max(max_model_len, 2,048) = "
            f"{unchunked_budget(workload):,}")


def check_prompt_limit(workload: Workload, policy: PolicySpec, budget: int) -> None:
    """Refuse, with what the engine would do, a run whose engine would ignore some prompts."""
    problem = prompt_limit_problem(workload, policy, budget)
    if problem:
        raise InputError(problem)


def lane_budget(policy: PolicySpec, workload: Workload, budget: int) -> int:
    """The budget a side-by-side lane runs `policy` at: vLLM V0 at its own without chunking
    (`unchunked_budget`), the budget it runs a whole prompt at (at a smaller one it would ignore
    the prompt, and the lane would show no stall but a dropped request); any other at `budget`."""
    return unchunked_budget(workload) if policy.profile.prompt_limit else budget


def lane_budget_note(policy: PolicySpec, workload: Workload, budget: int) -> str | None:
    """What a page or command says when it runs `policy` at `lane_budget` instead of `budget`
    (None when they agree)."""
    own = lane_budget(policy, workload, budget)
    if own == budget:
        return None
    longer = int(np.count_nonzero(workload.prompt[~workload.prefilled] > budget))
    ignored = (f": at {budget:,} it would ignore the {longer:,} prompt{'s' * (longer != 1)} "
               "longer than that (each would end at once with no output), since it never splits a "
               "prompt"
               if longer else "")
    return (f"{policy.engine} runs at its own budget without chunking, max(max_model_len, 2,048) "
            f"= {own:,} tokens, max_model_len the longest request{ignored}")


def unchunked_budget(workload: Workload) -> int:
    """vLLM V0's budget for `workload`, max_model_len its longest request, so every prompt fits."""
    return vllm_v0_budget(max_model_len(workload))


def vllm_v0_budget(max_model_len: int) -> int:
    """vLLM V0's budget without chunked prefill: max_num_batched_tokens = max(max_model_len,
    2048) (vllm/config.py:562 at v0.4.0.post1)."""
    return max(int(max_model_len), 2048)

def orca(state: State, budget: int, limits: Limits, whole_prompt: bool) -> Batch:
    """Orca (OSDI'22) iteration-level scheduling: every running decode plus whole new prompts in
    the same iteration, no token budget; as the Sarathi-Serve artifact runs it, each admitted
    request is given max_model_len of KV up front (`EngineProfile.kv_floor`)."""
    batch = Batch(decodes=state.decoding)
    _admit_whole(state, limits, batch, token_cap=float("inf"))
    return batch


@dataclass(frozen=True, kw_only=True)
class PolicySpec:
    """A scheduler and what it does, declared (the run-effort estimate reads these fields
    instead of asking the function; tests/sim/serving/test_policies.py checks each against the
    function), with the engine it is named after (`profile`)."""
    name: str
    build: Callable[[State, int, Limits, bool], Batch]
    chunked: bool               # splits a prompt to fit the budget
    decodes_take_budget: bool   # decodes and chunks share one budget (a budget <= decodes starves)
    prefill_with_decodes: bool  # prompt work runs in the same iteration as the running decodes
    budget_caps_decodes: bool   # the budget caps the decodes too (some decoders skip a step)
    # every iteration with prompt work finishes a prompt or fills the budget (module docstring)
    prompt_work_finishes_or_fills: bool
    reserve_whole_prompt: bool  # KV for the whole prompt at admission, else per chunk
    style: str                  # how it batches, in a few words: "stall-free, chunked"
    summary: str                # how it builds an iteration, in one phrase for the app's text
    intro: str                  # what the engine is, in one sentence, where the text first names it
    profile: EngineProfile
    # a partial prefill ahead of decoders in the running list can take the budget before them,
    # so decoders may skip a step even when they number fewer than the budget (vLLM V1)
    prefill_ahead_of_decodes: bool = False
    token_budget: bool = True   # reads the token budget (Orca: every decode plus whole prompts)
    # the limits under which its decodes join its prompt iterations and share the budget, as
    # the other fields then declare (`under`): SGLang's --enable-mixed-chunk
    mixes_decodes: Callable[[Limits], bool] = lambda limits: False

    @property
    def engine(self) -> str:
        """The engine's name alone, as prose lists it."""
        return self.profile.engine

    @property
    def label(self) -> str:
        """The engine, its release and how it batches, wherever the lab names the policy:
        "vLLM V1 0.33 (chunked prefill)", short enough for a lane's title beside another."""
        return f"{self.engine} {self.profile.release} ({self.style})"

    @property
    def overhead(self) -> Overhead:
        """The engine's per-iteration CPU work and how it adds to the GPU step."""
        return self.profile.overhead

    @property
    def kv_watermark(self) -> float:
        """Share of KV kept free when admitting (Sarathi: 1% of blocks)."""
        return self.profile.kv_watermark

    def under(self, limits: Limits) -> PolicySpec:
        """What the policy does under `limits`: itself, or where a limit mixes its decodes into
        its prompt iterations (`mixes_decodes`), a policy whose decodes run with the prompt work
        and take the budget."""
        if self.mixes_decodes(limits):
            return replace(self, prefill_with_decodes=True, decodes_take_budget=True)
        return self

    def finishes_or_fills(self, limits: Limits) -> bool:
        """Whether, under `limits`, every iteration with prompt work finishes a prompt or fills
        the budget (module docstring): the policy's own rule holds it, and no chunk cap stops
        short of it."""
        return self.prompt_work_finishes_or_fills and not (
            self.chunked and any(cap.stops_short(limits) for cap in PREFILL_CAPS))

    def plan(self, state: State, budget: int, limits: Limits) -> Batch:
        """The next batch, its KV reserved by this policy's one reservation rule."""
        return self.build(state, budget, limits, self.reserve_whole_prompt)


POLICIES: dict[str, PolicySpec] = {p.name: p for p in (
    PolicySpec(name="sarathi", build=sarathi, chunked=True, decodes_take_budget=True,
               prefill_with_decodes=True, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True, profile=SARATHI_PROFILE,
               style="stall-free",
               intro="Sarathi-Serve is the research scheduler that introduced stall-free "
                     "batching with a token budget (Agrawal et al., OSDI 2024)",
               summary="every stream's decode token first, then a chunk of the prompt fills what "
                       "is left of the budget, in the same iteration"),
    PolicySpec(name="vllm-v1", build=vllm_v1, chunked=True, decodes_take_budget=True,
               prefill_with_decodes=True, budget_caps_decodes=True, reserve_whole_prompt=False,
               prompt_work_finishes_or_fills=True, profile=V1_PROFILE,
               prefill_ahead_of_decodes=True,
               style="chunked prefill",
               intro="vLLM is a widely used open-source LLM server; its V1 engine, the "
                     "default since 2025, chunks prompts",
               summary="the running requests in admission order (the budget caps their decode "
                       "tokens too), then a chunk of the prompt fills what is left of the budget"),
    PolicySpec(name="sglang", build=sglang, chunked=True, decodes_take_budget=False,
               prefill_with_decodes=False, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True, profile=SGLANG_PROFILE,
               mixes_decodes=lambda limits: limits.mixed_chunk,
               style="prefill-first",
               intro="SGLang is another open-source LLM server; by default it runs prompt "
                     "chunks before decodes",
               summary="prefill first: chunks of the prompt, up to the budget each, run alone "
                       "while the streams wait"),
    PolicySpec(name="vllm-v0", build=vllm_v0, chunked=False, decodes_take_budget=False,
               prefill_with_decodes=False, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True, profile=V0_PROFILE,
               style="prefill-only",
               intro="vLLM V0 is the open-source vLLM server's first engine, the baseline "
                     "the Sarathi-Serve paper measures against",
               summary="the whole prompt in a prefill-only iteration while the streams wait"),
    PolicySpec(name="orca", build=orca, chunked=False, decodes_take_budget=False,
               prefill_with_decodes=True, budget_caps_decodes=False, reserve_whole_prompt=True,
               prompt_work_finishes_or_fills=True, profile=ORCA_PROFILE, token_budget=False,
               style="decodes + whole prompts",
               intro="Orca (OSDI 2022) is the research server that introduced "
                     "iteration-level scheduling, now called continuous batching",
               summary="every stream's decode token plus the whole prompt in one iteration"),
)}
CHUNKED = tuple(n for n, p in POLICIES.items() if p.chunked)
UNCHUNKED = tuple(n for n, p in POLICIES.items() if not p.chunked)


def engine_max_seqs(policy: PolicySpec, cost: CostModel, budget: int | None = None) -> int:
    """`policy`'s engine's own max running requests on `cost`'s GPUs for its model at `budget`
    (None: its engine's default budget there): SGLang sizes it by its KV cache."""
    profile = policy.profile
    if budget is None:
        budget = profile.budget(cost.gpu) if profile.budget else MAX_TOKENS
    return profile.max_seqs(cost, budget)


def default_max_seqs(policy: PolicySpec, cost: CostModel, budget: int | None = None,
                     workload=None) -> int:
    """`engine_max_seqs`, raised to hold the streams `workload` starts with (those arriving with
    its first request) plus one more request."""
    most = engine_max_seqs(policy, cost, budget)
    if workload is not None and len(workload):
        at_start = workload.prefilled & (workload.arrival_s == workload.arrival_s[0])
        if at_start.any():
            most = max(most, int(at_start.sum()) + 1)
    return most


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
