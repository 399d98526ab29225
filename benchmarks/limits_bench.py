"""The app's limits (issue 11) measured: each page at the worst link its limits let through, run
once on empty caches (time, and server memory added at the peak and after). What each counted
item of a run costs, which the pages' estimates price, is measured by benchmarks/work_bench.py.

    .venv/bin/python -m benchmarks.limits_bench

Each case runs through AppTest in a fresh process, so that process's resident set stands for a
server's that served only it (its peak reset before the case: /proc/self/clear_refs); a last
process runs them all in turn and says what stays. Printed, never asserted.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time

from streamlit.runtime.caching.cache_data_api import _data_caches
from streamlit.runtime.caching.cache_resource_api import _resource_caches
from streamlit.testing.v1 import AppTest

from sim.serving.policies import POLICIES
from tests.support.apptest import APP
from tests.support.memory import reset_peak, resident_mib
from ui import work
from ui.store import RESULTS, TRACES, deep_nbytes

FIVE = list(POLICIES)
MI300 = dict(gpu="mi300x", model="qwen2.5-7b")
# (page, link, button to click or None, what it is): the worst each page's limits let through
CASES = [
    ("pages/learn/home.py", dict(**MI300, decodes=4096, context=1, prompt=1_000_000,
                                 budget=4117), None,
     "4,096 decoders + a 1,000,000-token prompt in chunks of 21: two lanes at the 50,000 cap"),
    ("pages/learn/side_by_side.py", dict(**MI300, decodes=4096, context=1, prompt=1_000_000,
                                         budget=4117, compare="true", mode="roofline"), None,
     "the same, compared with the calibrated mode: four lanes"),
    ("pages/learn/roofline.py", dict(**MI300, decodes=4096, prompt=2_000_000), None,
     "a 2,000,000-token prompt beside 4,096 decoders"),
    ("pages/learn/worked_example.py", dict(prompt=2_000_000, budget2=1), None,
     "a 2,000,000-token prompt, second budget 1"),
    ("pages/check/fidelity.py", dict(gpu="a100-80gb", mode="calibrated"), None, "defaults"),
    ("pages/load/traffic.py", dict(**MI300, workload="poisson", requests=1000, qps=1000,
                                   lengths="fixed", plen=128, olen=2400, budget=4096,
                                   policies=FIVE), None,
     "5 policies x 2,400,000 token times: the 12,000,000 a page keeps, at once"),
    ("pages/load/traffic.py", dict(**MI300, workload="poisson", requests=1000, qps=1,
                                   lengths="fixed", plen=4096, olen=2000, budget=4096,
                                   policies=FIVE), "Run (",
     "5 policies, 1,000 requests at 1/s: ~1.8 million iterations, on the button"),
    ("pages/load/memory.py", dict(**MI300, workload="poisson", requests=1000, qps=1000,
                                  lengths="fixed", plen=128, olen=2400, budget=4096,
                                  kvpolicies=FIVE), None,
     "5 policies x 2,400,000 token times, at once"),
    ("pages/load/budget_tradeoff.py", dict(**MI300, workload="poisson", requests=1000, qps=1000,
                                           lengths="fixed", olen=1000, bmin=1,
                                           bmax=10_000_000), "Run (",
     "budgets 1 to 10,000,000 on 1,000,000 token times a run, on the button"),
    ("pages/load/capacity.py", dict(**MI300, requests=1000, lengths="fixed", plen=1024,
                                    olen=1000), "Find the capacity",
     "1,000 requests of 1,000 output tokens, on the button"),
]


def streamlit_caches() -> tuple[int, int]:
    """(resources, bytes) in Streamlit's caches: resources weighed like the stores' entries,
    data by the pickled bytes Streamlit keeps (its own statistics; read through its internals)."""
    resources = [result.value for caches in _resource_caches._function_caches.values()
                 for cache in caches.values() for result in cache._mem_cache.values()]
    data = [stat for stats in _data_caches.get_stats().values() for stat in stats]
    return len(resources), deep_nbytes(resources) + sum(stat.byte_length for stat in data)


def _measured(action) -> tuple[float, float, float]:
    """(seconds, MiB resident at the peak, MiB added at the peak) of `action()`."""
    gc.collect()
    before = resident_mib()
    reset_peak()
    start = time.perf_counter()
    action()
    seconds = time.perf_counter() - start
    return seconds, resident_mib("VmHWM"), resident_mib("VmHWM") - before


def _outcome(at: AppTest) -> str:
    if at.exception:
        return "TRACEBACK"
    if at.error:
        return f"refused: {at.error[0].value[:90]}"
    return "asks" if any(b.label.startswith("Run (") for b in at.button) else "ran"


def page_case(index: int):
    """One case, opened (and its button clicked) in this process after a warm-up run of Home:
    (step, outcome, seconds, MiB resident at the peak, MiB added at the peak) per step."""
    AppTest.from_file(APP, default_timeout=120).run()   # imports and first-run costs
    page, query, click, _ = CASES[index]
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({k: v if isinstance(v, list) else str(v) for k, v in query.items()})
    at.switch_page(page)
    measured = _measured(at.run)
    yield "open", _outcome(at), *measured
    button = next((b for b in at.button if click and b.label.startswith(click)), None)
    if button is not None:
        label = button.label
        measured = _measured(button.click().run)
        yield f"click {label}", _outcome(at), *measured


def every_case_in_one_server() -> str:
    """Every case opened and clicked in turn in this process, caches kept, like one server that
    served them all; then what stays."""
    for index in range(len(CASES)):
        for _ in page_case(index):
            pass
    entries, nbytes = streamlit_caches()
    return (f"traces {TRACES.nbytes / 2**20:,.0f} of {TRACES.max_bytes / 2**20:,.0f} MiB, "
            f"results {RESULTS.nbytes / 2**20:,.1f} of {RESULTS.max_bytes / 2**20:,.0f} MiB, "
            f"Streamlit's caches {entries} resources and the data, {nbytes / 2**20:,.1f} MiB; "
            f"process {resident_mib():,.0f} MiB resident, {resident_mib('VmHWM'):,.0f} MiB at its "
            "peak")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":      # one case, in a fresh process
        for step in page_case(int(sys.argv[2])):
            print(json.dumps(step))
        return
    if sys.argv[1:] == ["--all"]:
        print(every_case_in_one_server())
        return
    print(f"limits: a page {work.PAGE_SECONDS} s and {work.PAGE_BYTES / 2**20:,.0f} MiB; at once "
          f"<= {work.NOW_SECONDS:g} s estimated, on a button <= {work.BUTTON_SECONDS:g} s "
          f"(deadlines {work.NOW_DEADLINE_S:g} s / {work.BUTTON_DEADLINE_S:g} s); a run <= "
          f"{work.RUN_ITERATIONS:,} iterations and {work.RUN_TOKENS:,} token times; a page's "
          f"traces <= {work.PAGE_TOKENS:,} token times")
    print("each case in a fresh process, after a warm-up run of Home:")
    print(f"{'page':20} {'step':26} {'seconds':>8} {'peak MiB':>9} {'+peak MiB':>10}  case: "
          "outcome")
    for index, (page, _, _, what) in enumerate(CASES):
        out = subprocess.run([sys.executable, "-m", "benchmarks.limits_bench", "--case",
                              str(index)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            step, outcome, seconds, peak, added = json.loads(line)
            print(f"{page.split('/')[-1]:20} {step[:26]:26} {seconds:8.2f} {peak:9.0f} "
                  f"{added:10.0f}  {what}: {outcome}", flush=True)
    print("every case in turn in one process, caches kept: " + subprocess.run(
        [sys.executable, "-m", "benchmarks.limits_bench", "--all"], capture_output=True,
        text=True, check=True).stdout.strip())


if __name__ == "__main__":
    main()
