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
lowest-priority sequence"; vLLM V1: `self.running.pop()`), is always at hand.
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
    `watermark` slots are kept free when admitting (Sarathi-Serve keeps 1% of the blocks free)."""

    def __init__(self, capacity: int, watermark: int, requests: int, block_tokens: int = 1):
        self.block_tokens = block_tokens
        self.capacity = capacity // block_tokens * block_tokens
        self.watermark = watermark // block_tokens * block_tokens
        self.used = 0                               # tokens held (the context attention reads)
        self.allocated = 0                          # slots allocated: the memory in use
        self.held = np.zeros(requests, np.int64)    # KV tokens of each request
        self.slots = np.zeros(requests, np.int64)   # slots allocated to each request
        self._holders: dict[int, int] = {}        # request -> admission number, oldest first
        self._admitted = 0

    @property
    def free_tokens(self) -> int:
        """Slots not allocated to anyone."""
        return self.capacity - self.allocated

    def admission_number(self, request: int) -> int:
        """Its place in admission order (a request preempted and admitted again gets a new one)."""
        return self._holders[request]

    def slots_for(self, request: int, tokens: int, floor: int = 0) -> int:
        """Slots `request` must be given to hold `tokens` more (whole blocks; at least `floor`
        slots in all)."""
        want = max(round_up(int(self.held[request]) + tokens, self.block_tokens), floor)
        return max(0, want - int(self.slots[request]))

    def decode_slots(self, requests: np.ndarray) -> int:
        """Slots the running decoders `requests` need to step once: a block each for those whose
        last block is full."""
        full = self.held[requests] >= self.slots[requests]
        return int(np.count_nonzero(full)) * self.block_tokens

    def reserve(self, request: int, tokens: int, floor: int = 0) -> None:
        """`tokens` more for `request` (its whole prompt at admission, or the chunk it runs now),
        allocated in whole blocks, at least `floor` slots in all. Its first reservation makes it
        the newest holder."""
        self._take(self.slots_for(request, tokens, floor), request)
        if request not in self._holders:
            self._holders[request] = self._admitted
            self._admitted += 1
        self.held[request] += tokens
        self.used += tokens

    def append(self, requests: np.ndarray) -> None:
        """One token each for `requests`, running decoders that step (the KV of the token each
        one emitted last); a decoder whose blocks are full takes one more."""
        full = requests[self.held[requests] >= self.slots[requests]]
        if len(full):
            self._take_many(full)
        self.held[requests] += 1
        self.used += len(requests)

    def free(self, requests: Iterable[int]) -> None:
        """Give back everything `requests` hold (they finished, or were preempted)."""
        for request in requests:
            del self._holders[request]
            self.used -= int(self.held[request])
            self.allocated -= int(self.slots[request])
            self.held[request] = 0
            self.slots[request] = 0

    def newest(self) -> int | None:
        """The holder admitted last (None when nobody holds KV)."""
        return next(reversed(self._holders), None)

    def preempt_newest(self) -> int:
        """Free the newest holder's KV and return it (the engine sends it back to the queue)."""
        victim = self.newest()
        if victim is None:
            raise KvOverflow("KV exhausted with nothing to preempt")
        self.free((victim,))
        return victim

    def _take(self, slots: int, request: int) -> None:
        if slots > self.free_tokens:
            raise KvOverflow(f"{slots:,} KV slots asked for with {self.free_tokens:,} of "
                             f"{self.capacity:,} free")
        self.allocated += slots
        self.slots[request] += slots

    def _take_many(self, requests: np.ndarray) -> None:
        slots = len(requests) * self.block_tokens
        if slots > self.free_tokens:
            raise KvOverflow(f"{slots:,} KV slots asked for with {self.free_tokens:,} of "
                             f"{self.capacity:,} free")
        self.allocated += slots
        self.slots[requests] += self.block_tokens
