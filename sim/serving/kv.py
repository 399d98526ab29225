"""The KV cache as the engine counts it: a pool of token slots handed out in blocks, the one place
KV in use changes.

A request takes KV when its policy's batch commits it: its whole prompt at admission (Sarathi-Serve,
SGLang, the unchunked policies) or each chunk as it runs (vLLM V1); then one token per decode step;
it gives all of it back when it finishes or is preempted. Slots are allocated in whole blocks of
`block_tokens` (vLLM and Sarathi-Serve page KV in blocks of 16 tokens; SGLang's page is one
token), so a request holds its tokens rounded up to a block, and a decoder takes a new block only
when its last one is full. A request may also be given a floor at admission (Orca, as the
Sarathi-Serve artifact runs it, allocates max_model_len of blocks up front). Holders are kept in
admission order, so the newest, the one a full cache evicts (Sarathi-Serve: "preempt the
lowest-priority sequence"; vLLM V1: `self.running.pop()`; SGLang chooses its own, `_Engine._victim`),
is always at hand.

With prefix caching (`PrefixCache`) a request's KV may outlive it: its full blocks stay cached
until evicted, and a later request whose prompt starts with the same tokens reuses them. Cached
blocks nobody uses count as free (vLLM V1 keeps them in its free block queue, SGLang counts its
evictable size as available) and are evicted, least recently used first, when a block is taken.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import numpy as np


class KvOverflow(RuntimeError):
    """More KV was taken than the pool holds: a scheduling bug, never a user error."""


def round_up(tokens, block_tokens: int):
    """`tokens` rounded up to whole blocks of `block_tokens` (numbers or numpy arrays)."""
    return -(-tokens // block_tokens) * block_tokens


class KvPool:
    """`capacity` KV token slots (whole blocks of `block_tokens`) shared by `requests` requests;
    `watermark` slots are kept free when admitting (Sarathi-Serve keeps 1% of the blocks free).

    A request's slots are never stored: they are its tokens rounded up to whole blocks, or its
    floor if that is more, so they follow from what it holds. A running decoder's tokens are not
    stored either, since one step of the whole running set must cost the same however many run:
    each decoder holds its `_base` plus the steps so far (`_steps`; a decoder a step skips loses
    one from its base), and decoders whose last block fills at the same step share a phase, the
    base modulo the block, so a step's new blocks are one count (`_phase`)."""

    def __init__(self, capacity: int, watermark: int, requests: int, block_tokens: int = 1):
        self.block_tokens = block_tokens
        self.capacity = capacity // block_tokens * block_tokens
        self.watermark = watermark // block_tokens * block_tokens
        self.used = 0                               # tokens held (the context attention reads)
        self.allocated = 0                          # slots allocated: the memory in use
        self.decoders = 0                           # running decoders, stepped by `step`
        self._held = [0] * requests                 # KV tokens of each request not decoding
        self._floor = [0] * requests                # slots a request was given at least
        self._decoding = [False] * requests
        self._counted = np.zeros(requests, bool)    # a decoder at or past its floor: grows by blocks
        self._base = np.zeros(requests, np.int64)   # a decoder's tokens less the steps so far
        self._steps = 0
        self._phase = np.zeros(block_tokens, np.int64)   # counted decoders by base % block
        self._holders: dict[int, int] = {}        # request -> admission number, oldest first
        self._admitted = 0
        self._shared = [0] * requests               # of a request's tokens, those a cache entry holds
        self.cache: PrefixCache | None = None       # prefix caching, where the engine has it on

    @property
    def free_tokens(self) -> int:
        """Slots not allocated to anyone, cached blocks nobody uses among them (evicted when
        taken)."""
        if self.cache is None:
            return self.capacity - self.allocated
        return self.capacity - self.allocated + self.cache.evictable

    @property
    def in_use(self) -> int:
        """Slots the running requests hold (a cached block they use counted once); the cached
        blocks nobody uses left out."""
        return self.allocated - (self.cache.evictable if self.cache is not None else 0)

    def admission_number(self, request: int) -> int:
        """Its place in admission order (a request preempted and admitted again gets a new one)."""
        return self._holders[request]

    def held_of(self, request: int) -> int:
        """KV tokens `request` holds."""
        if self._decoding[request]:
            return int(self._base[request]) + self._steps
        return self._held[request]

    def held_by(self, decoders: np.ndarray) -> np.ndarray:
        """KV tokens each of the running `decoders` holds."""
        return self._base[decoders] + self._steps

    def slots_of(self, request: int) -> int:
        """Slots allocated to `request`: its tokens in whole blocks, at least its floor (the
        blocks of a cache entry it reads are the entry's: `_shared`)."""
        own = self.held_of(request) - self._shared[request]
        return max(round_up(own, self.block_tokens), self._floor[request])

    def slots_for(self, request: int, tokens: int, floor: int = 0) -> int:
        """Slots `request` must be given to hold `tokens` more (whole blocks; at least `floor`
        slots in all)."""
        own = self.held_of(request) - self._shared[request]
        want = max(round_up(own + tokens, self.block_tokens), floor)
        return max(0, want - self.slots_of(request))

    def decode_slots(self, decoders: np.ndarray) -> int:
        """Slots the running `decoders` (all of them, or the head of the running list) need to
        step once: a block each for those whose last block is full."""
        if len(decoders) == self.decoders:
            return int(self._phase[-self._steps % self.block_tokens]) * self.block_tokens
        return self._due(decoders) * self.block_tokens

    def reserve(self, request: int, tokens: int, floor: int = 0) -> None:
        """`tokens` more for `request`, not a running decoder (its whole prompt at admission, or
        the chunk it runs now), allocated in whole blocks, at least `floor` slots in all. Its
        first reservation makes it the newest holder."""
        self._take(self.slots_for(request, tokens, floor))
        if request not in self._holders:
            self._holders[request] = self._admitted
            self._admitted += 1
        self._held[request] += tokens
        self._floor[request] = max(self._floor[request], floor)
        self.used += tokens

    def start_decoding(self, requests: Iterable[int]) -> None:
        """`requests`, holders whose prefill is done (or streams that joined with their
        context), run as decoders: from now on each `step` gives them a token."""
        for request in requests:
            held = self._held[request]
            self._held[request] = 0
            self._decoding[request] = True
            self._base[request] = base = held - self._steps
            self.decoders += 1
            # below its floor a decoder's next tokens are already allocated; the engine's floor
            # (max_model_len) is one no request outgrows, which `free` checks
            if held >= self._floor[request]:
                self._counted[request] = True
                self._phase[base % self.block_tokens] += 1

    def step(self, stepping: np.ndarray, skipped: np.ndarray) -> None:
        """One decode step: the running decoders `stepping` each write one token (the KV of the
        token each emitted last), a decoder whose blocks are full taking one more; those
        `skipped` keep theirs."""
        if len(skipped):
            new_blocks = self._due(stepping)
            counted = skipped[self._counted[skipped]]
            phases = np.bincount(self._base[counted] % self.block_tokens,
                                 minlength=self.block_tokens)
            self._phase += np.roll(phases, -1) - phases   # each skipped one's phase moves back
            self._base[skipped] -= 1
        else:
            new_blocks = int(self._phase[-self._steps % self.block_tokens])
        self._take(new_blocks * self.block_tokens)
        self._steps += 1
        self.used += len(stepping)

    def free(self, requests: Iterable[int], computed: int | None = None) -> None:
        """Give back everything `requests` hold (they finished, or were preempted); with prefix
        caching their full blocks stay cached (`PrefixCache.release`), of a prefill cut short
        only its first `computed` tokens (the rest of its slots held no KV yet)."""
        for request in requests:
            held, slots = self.held_of(request), self.slots_of(request)
            if self._decoding[request]:
                self._stop_decoding(request, held)
            del self._holders[request]
            if self.cache is not None:
                kept = held if computed is None else min(held, computed)
                slots -= self.cache.release(request, kept)
                self._shared[request] = 0
            self.used -= held
            self.allocated -= slots
            self._held[request] = 0
            self._floor[request] = 0

    def attach_cached(self, request: int, target: int) -> int:
        """`request`, admitted to compute its first `target` tokens, reads its cached prefix
        (`PrefixCache.hit`): those tokens become its context without being computed; return
        how many."""
        hit = self.cache.hit(request, target)
        self._shared[request], freed = self.cache.attach(request, hit)
        self._held[request] += hit
        self.used += hit
        self.allocated -= freed
        return hit

    def share_computed(self, request: int, computed: int) -> None:
        """`request` has computed its first `computed` tokens: the full blocks of its shared
        prefix past its group's cache entry join the entry, for others to read now (vLLM V1
        caches a block once it is full)."""
        self._shared[request] += self.cache.extend(request, computed)

    def newest(self) -> int | None:
        """The holder admitted last (None when nobody holds KV)."""
        return next(reversed(self._holders), None)

    def preempt(self, victim: int | None, computed: int | None = None) -> int:
        """Free `victim`'s KV (`computed`: of a prefill cut short, the tokens it computed) and
        return it (the engine sends it back to the queue); None, when the engine found nobody to
        preempt, is a scheduling bug."""
        if victim is None:
            raise KvOverflow("KV exhausted with nothing to preempt")
        self.free((victim,), computed)
        return victim

    def _due(self, decoders: np.ndarray) -> int:
        """How many of `decoders` have their last block full (tokens a whole number of blocks)."""
        full = (self._base[decoders] + self._steps) % self.block_tokens == 0
        return int(np.count_nonzero(full & self._counted[decoders]))

    def _stop_decoding(self, request: int, held: int) -> None:
        if self._counted[request]:
            self._phase[self._base[request] % self.block_tokens] -= 1
        elif held > self._floor[request]:
            raise KvOverflow(f"a decoder grew to {held:,} tokens past its floor of "
                             f"{self._floor[request]:,} slots without a block")
        self._decoding[request] = self._counted[request] = False
        self.decoders -= 1

    def _take(self, slots: int) -> None:
        if slots > self.free_tokens:
            raise KvOverflow(f"{slots:,} KV slots asked for with {self.free_tokens:,} of "
                             f"{self.capacity:,} free")
        short = slots - (self.capacity - self.allocated)
        if short > 0:   # only cached blocks nobody uses are left: evict them
            self.allocated -= self.cache.evict(short)
        self.allocated += slots


def hit_tokens(shared: int, prompt: int, block: int) -> int:
    """The most a prompt of `prompt` tokens whose first `shared` are cached finds: whole blocks,
    at most prompt − 1 (one token is always computed, for its logits); `PrefixCache.hit` is this
    bound on what the cache holds now."""
    return min(shared, prompt - 1) // block * block


class PrefixCache:
    """Prefix caching: full blocks of KV kept after their request lets them go, found again by a
    request whose prompt starts with the same tokens (vLLM V1's automatic prefix caching, by
    block hash; SGLang's radix cache, by token).

    What a request shares is declared by its workload: a group and how many of its tokens are
    the group's (`Workload.prefix_group`, `prefix_tokens`: a shared system prompt, or a
    conversation whose every turn is the start of the next). The lab keeps, per group, how many
    of its tokens are cached (whole blocks, from the start), and per request, the blocks of its
    own tokens beyond the group's that a preemption left cached. A hit is the group's cached
    tokens (at most the request's shared tokens), then, if it covers them, the request's own
    cached blocks; at most prompt - 1 tokens, one token always computed for its logits (vLLM V1
    `get_computed_blocks`, v1/core/kv_cache_manager.py:294-302 at v0.33.0; SGLang
    `_compute_max_prefix_len`, managers/schedule_batch.py:1766-1768 at v0.5.23), rounded down
    to a block.

    An entry a running request reads is pinned; the others are evictable, least recently used
    first and each from its tail (vLLM V1 frees a request's blocks tail first into its LRU free
    queue, v1/core/single_type_kv_cache_manager.py:598-599, and evicts from the queue's head as
    it takes blocks, block_pool.py:706-729; SGLang evicts the least recently accessed leaves,
    mem_cache/radix_cache.py:552-575). A request's own blocks are freed before its group's, so
    they go first. A group entry is pinned whole while a running request reads it, where vLLM
    pins only the blocks a request reads: for a shared prompt or a conversation these are
    the same blocks."""

    def __init__(self, block_tokens: int, group: np.ndarray, shared: np.ndarray):
        self.block = block_tokens
        self.group = group.tolist()                                     # -1: none
        self.shared = (shared // block_tokens * block_tokens).tolist()   # whole blocks only
        self.tokens: dict[int, int] = {}     # entry -> cached tokens: group g as g, request r as ~r
        self.refs: dict[int, int] = {}       # group -> running requests that read its entry
        self.pinned: dict[int, bool] = {}    # request -> it reads its group's entry
        self.lru: OrderedDict[int, None] = OrderedDict()   # evictable entries, oldest first
        self.evictable = 0                   # tokens of the evictable entries

    def hit(self, request: int, target: int) -> int:
        """Tokens of `request`'s first `target` (its prompt, and what it had generated before a
        preemption) it would find cached now."""
        group, shared = self.group[request], self.shared[request]
        found = min(self.tokens.get(group, 0), shared) if shared else 0
        if found == shared:
            found += self.tokens.get(~request, 0)
        return min(found, (target - 1) // self.block * self.block)

    def pin_cost(self, request: int, hit: int) -> int:
        """Free slots that admitting `request` with `hit` cached tokens uses beyond its new
        blocks: its group's entry leaves the evictable ones if it reads it and nobody else does,
        and its own cached blocks become its own (vLLM V1 counts the evictable blocks a hit
        touches, single_type_kv_cache_manager.py:255-266)."""
        if not hit:
            return 0
        group, shared = self.group[request], self.shared[request]
        from_group = min(hit, shared)
        cost = hit - from_group
        if from_group and not self.refs.get(group):
            cost += self.tokens[group]
        return cost

    def attach(self, request: int, hit: int) -> tuple[int, int]:
        """`request` is admitted with `hit` cached tokens (`hit`, looked up now): its group's
        entry, if it reads it, is pinned while it runs, its own cached blocks become its own
        slots and the rest of its own entry is freed; return (the hit's tokens in the group's
        entry, the slots freed)."""
        from_group = min(hit, self.shared[request])
        if from_group:
            self._pin(request)
        own = 0
        if ~request in self.tokens:
            self._unlist(~request)
            own = self.tokens.pop(~request)
        return from_group, own - (hit - from_group)

    def extend(self, request: int, computed: int) -> int:
        """The group's entry grows to `request`'s computed full blocks of the shared prefix
        (pinned by it from then on: they are its KV too); return the tokens it took over from
        the request's own slots."""
        group, shared = self.group[request], self.shared[request]
        if not shared:
            return 0
        reach = min(shared, computed // self.block * self.block)
        cached = self.tokens.get(group, 0)
        if reach <= cached:
            return 0
        self._pin(request)
        self.tokens[group] = reach
        return reach - cached

    def release(self, request: int, held: int) -> int:
        """`request` lets go of its `held` tokens: its full blocks of the shared prefix extend
        the group's entry, those past it become its own entry (both then evictable once nobody
        reads them); return the slots that moved from the request to the cache."""
        group, shared = self.group[request], self.shared[request]
        moved = self.extend(request, held)
        full = held // self.block * self.block
        if self.pinned.pop(request, False):
            self.refs[group] -= 1
        own = full - shared if self.tokens.get(group, 0) >= shared or not shared else 0
        if own > 0:
            self.tokens[~request] = own
            self.lru[~request] = None
            self.evictable += own
            moved += own
        if shared and not self.refs.get(group) and self.tokens.get(group) \
                and group not in self.lru:
            self.lru[group] = None
            self.evictable += self.tokens[group]
        return moved

    def _pin(self, request: int) -> None:
        """`request` reads its group's entry: not evictable while it runs."""
        if self.pinned.get(request):
            return
        group = self.group[request]
        if not self.refs.get(group):
            self._unlist(group)
        self.refs[group] = self.refs.get(group, 0) + 1
        self.pinned[request] = True

    def evict(self, tokens: int) -> int:
        """Evict at least `tokens` (whole blocks) of the evictable entries, least recently used
        first, each from its tail; return how many went."""
        evicted = 0
        while evicted < tokens:
            entry = next(iter(self.lru))
            have = self.tokens[entry]
            cut = min(have, -(-(tokens - evicted) // self.block) * self.block)
            evicted += cut
            if cut == have:
                del self.tokens[entry], self.lru[entry]
            else:
                self.tokens[entry] = have - cut
        self.evictable -= evicted
        return evicted

    def _unlist(self, entry: int) -> None:
        """`entry` stops being evictable (read, or taken over)."""
        if entry in self.lru:
            del self.lru[entry]
            self.evictable -= self.tokens[entry]
