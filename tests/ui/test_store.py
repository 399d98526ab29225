"""Stores bounded in bytes (ui/shell/store.py): what an entry weighs, and what the store keeps."""

import threading

import numpy as np
import pandas as pd

from sim.serving.engine import simulate
from sim.serving.policies import Limits, get_policy
from ui.shell.scenario import scenario_from
from ui.shell.store import ByteStore, deep_nbytes


def test_a_trace_weighs_its_arrays():
    s = scenario_from({"decodes": 512, "context": 100, "gpu": "mi300x"})
    trace = simulate(s.workload(), get_policy("sarathi"), s.cost_model(), budget=4096,
                     limits=Limits(max_seqs=513))
    arrays = sum(a.nbytes for a in vars(trace).values() if isinstance(a, np.ndarray))
    weight = deep_nbytes(trace)
    assert arrays <= weight <= arrays + 64 * 1024


def test_shared_buffers_and_views_count_once():
    a = np.zeros(1_000_000)
    assert 8_000_000 <= deep_nbytes([a, a, a[::2], a[10:]]) < 8_001_000
    frame = pd.DataFrame({"x": np.arange(100_000)})
    assert 800_000 <= deep_nbytes({"f": frame}) < 1_000_000


def test_least_recently_used_entries_go_first_until_the_bytes_fit():
    store = ByteStore(3_500_000)
    for key in "abc":
        store.put(key, np.zeros(125_000))          # 1 MB each
    store.get("a")                                  # a is now the most recent
    store.put("d", np.zeros(125_000))
    assert "b" not in store and all(k in store for k in "acd")
    assert store.nbytes <= store.max_bytes and len(store) == 3


def test_an_entry_larger_than_the_store_is_returned_not_kept():
    store = ByteStore(1_000_000)
    store.put("small", np.zeros(10))
    big = np.zeros(200_000)
    assert store.put("big", big) is big
    assert "big" not in store and "small" in store


def test_keys_are_weighed_too():
    store = ByteStore(1_000_000)
    for i in range(1000):
        store.put(("key", i, "x" * 10_000), 0)     # 10 kB keys, tiny values
    assert store.nbytes <= 1_000_000 and len(store) < 100


def test_sessions_putting_at_once_never_overfill_it():
    store = ByteStore(5_000_000)

    def fill(offset):
        for i in range(200):
            store.put((offset, i), np.zeros(10_000))    # 80 kB each

    threads = [threading.Thread(target=fill, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entry = deep_nbytes(((1, 2), np.zeros(10_000)))
    assert store.nbytes <= store.max_bytes
    assert store.nbytes == len(store) * entry and len(store) == store.max_bytes // entry
