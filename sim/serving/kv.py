"""The KV cache as the engine counts it: a pool of token slots, the one place KV in use changes.

A request takes KV when its policy's batch commits it: its whole prompt at admission (Sarathi-Serve,
SGLang, the unchunked policies) or each chunk as it runs (vLLM V1); then one token per decode step;
it gives all of it back when it finishes or is preempted. Holders are kept in admission order, so
the newest, the one a full cache evicts (Sarathi-Serve: "preempt the lowest-priority sequence";
vLLM V1: `self.running.pop()`), is always at hand.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class KvOverflow(RuntimeError):
    """More KV was taken than the pool holds: a scheduling bug, never a user error."""


class KvPool:
    """`capacity` KV tokens shared by `requests` requests; `watermark` tokens are kept free when
    admitting (Sarathi-Serve keeps 1% of the blocks free)."""

    def __init__(self, capacity: int, watermark: int, requests: int):
        self.capacity = capacity
        self.watermark = watermark
        self.used = 0
        self.held = np.zeros(requests, np.int64)   # KV tokens of each request
        self._holders: dict[int, int] = {}        # request -> admission number, oldest first
        self._admitted = 0

    @property
    def free_tokens(self) -> int:
        return self.capacity - self.used

    def admission_number(self, request: int) -> int:
        """Its place in admission order (a request preempted and admitted again gets a new one)."""
        return self._holders[request]

    def reserve(self, request: int, tokens: int) -> None:
        """`tokens` more for `request`: its whole prompt at admission, or the chunk it runs now.
        Its first reservation makes it the newest holder."""
        self._take(tokens)
        if request not in self._holders:
            self._holders[request] = self._admitted
            self._admitted += 1
        self.held[request] += tokens

    def append(self, requests: np.ndarray) -> None:
        """One token each for `requests`, running decoders that step (the KV of the token each
        one emitted last)."""
        self._take(len(requests))
        self.held[requests] += 1

    def free(self, requests: Iterable[int]) -> None:
        """Give back everything `requests` hold (they finished, or were preempted)."""
        for request in requests:
            del self._holders[request]
            self.used -= int(self.held[request])
            self.held[request] = 0

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

    def _take(self, tokens: int) -> None:
        if tokens > self.free_tokens:
            raise KvOverflow(f"{tokens:,} KV tokens asked for with {self.free_tokens:,} of "
                             f"{self.capacity:,} free")
        self.used += tokens
