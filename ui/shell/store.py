"""A cache bounded in bytes, shared by every session of the server, and the size of what it keeps.

Streamlit's caches bound the number of entries, not their size, and one trace can hold a few
bytes or hundreds of megabytes (a token time per output token, a row per stay in the running
set). The stores here weigh every entry as it is put in (numpy arrays by their buffers, each
buffer once) and drop the least recently used ones until the total fits. Pure Python (no
Streamlit).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np
import pandas as pd


def deep_nbytes(value) -> int:
    """Bytes held by `value` and what it refers to: numpy buffers (each counted once, views by
    their base), pandas frames, and the containers and dataclasses around them."""
    seen: set[int] = set()

    def size(v) -> int:
        if isinstance(v, np.ndarray):
            base = v
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) in seen:
                return 0
            seen.add(id(base))
            return base.nbytes
        if id(v) in seen:
            return 0
        seen.add(id(v))
        if isinstance(v, (pd.DataFrame, pd.Series)):
            return int(np.sum(v.memory_usage(deep=True, index=True)))
        if isinstance(v, dict):
            return sys.getsizeof(v) + sum(size(k) + size(x) for k, x in v.items())
        if isinstance(v, (list, tuple, set, frozenset)):
            return sys.getsizeof(v) + sum(size(x) for x in v)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return sys.getsizeof(v) + sum(size(getattr(v, f.name)) for f in dataclasses.fields(v))
        return sys.getsizeof(v)

    return size(value)


class ByteStore:
    """A least-recently-used map whose entries together hold at most `max_bytes`. An entry larger
    than that is handed back but not kept. Safe to share between sessions (threads)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def get(self, key: Hashable, default=None):
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            return self._entries[key][0]

    def put(self, key: Hashable, value):
        """Keep `value` under `key` (if it fits at all) and return it."""
        weight = deep_nbytes((key, value))
        with self._lock:
            if key in self._entries:
                self._bytes -= self._entries.pop(key)[1]
            if weight <= self.max_bytes:
                self._entries[key] = (value, weight)
                self._bytes += weight
                while self._bytes > self.max_bytes:
                    self._bytes -= self._entries.popitem(last=False)[1][1]
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


# The server's stores (every session shares them; what stays after every tab closes is bounded by
# their sizes). Traces: the pages' simulations, learn and traffic pages alike.
TRACES = ByteStore(256 << 20)
# Results small enough to keep many: a budget sweep's points, what a run that hit an iteration cap
# saw (so the next estimate starts from there).
RESULTS = ByteStore(16 << 20)
