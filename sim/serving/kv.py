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
"""

from __future__ import annotations

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

    @property
    def free_tokens(self) -> int:
        """Slots not allocated to anyone."""
        return self.capacity - self.allocated

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
        """Slots allocated to `request`: its tokens in whole blocks, at least its floor."""
        return max(round_up(self.held_of(request), self.block_tokens), self._floor[request])

    def slots_for(self, request: int, tokens: int, floor: int = 0) -> int:
        """Slots `request` must be given to hold `tokens` more (whole blocks; at least `floor`
        slots in all)."""
        want = max(round_up(self.held_of(request) + tokens, self.block_tokens), floor)
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

    def free(self, requests: Iterable[int]) -> None:
        """Give back everything `requests` hold (they finished, or were preempted)."""
        for request in requests:
            held, slots = self.held_of(request), self.slots_of(request)
            if self._decoding[request]:
                self._stop_decoding(request, held)
            del self._holders[request]
            self.used -= held
            self.allocated -= slots
            self._held[request] = 0
            self._floor[request] = 0

    def newest(self) -> int | None:
        """The holder admitted last (None when nobody holds KV)."""
        return next(reversed(self._holders), None)

    def preempt(self, victim: int | None) -> int:
        """Free `victim`'s KV and return it (the engine sends it back to the queue); None, when
        the engine found nobody to preempt, is a scheduling bug."""
        if victim is None:
            raise KvOverflow("KV exhausted with nothing to preempt")
        self.free((victim,))
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
        self.allocated += slots
