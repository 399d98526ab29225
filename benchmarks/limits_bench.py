"""The limits measured. The app's: each page at the worst link its limits let through, run once on
empty caches (time, and server memory added at the peak and after). The command line's: the
largest input each refused dimension accepts (a run's estimated work, a trace file's bytes,
columns and rows, the argument count, a sweep's budgets, capacity's requests), each run once in a
bounded child process, its CPU time and peak memory against the command budget (60 s, 1.5 GB).
What each counted item of a run costs, which the estimates price, is measured by
benchmarks/work_bench.py.

    .venv/bin/python -m benchmarks.limits_bench          # both
    .venv/bin/python -m benchmarks.limits_bench --cli    # the command line's only (a few minutes)
    .venv/bin/python -m benchmarks.limits_bench --smoke  # every case at a small size: still runs?

Each case runs through AppTest in a fresh process, so that process's resident set stands for a
server's that served only it (its peak reset before the case: /proc/self/clear_refs); a last
process runs them all in turn and says what stays (`--smoke`: that process alone, at sizes far
from the limits). Printed, never asserted; the exit status is 1 when a command exits with an
error or a page shows a traceback.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable

from streamlit.runtime.caching.cache_data_api import _data_caches
from streamlit.runtime.caching.cache_resource_api import _resource_caches
from streamlit.testing.v1 import AppTest

from cli.common import check_work, planned_run, remedy, work_of
from cli.main import MAX_ARGUMENTS, build_parser
from cli.sweeps import MAX_CAPACITY_REQUESTS
from harness.bounded import run_sim
from harness.memory import reset_peak, resident_mib
from sim.effort.caps import CLI_ALLOWANCE
from sim.errors import InputError
from sim.serving.policies import POLICIES
from sim.serving.trace_files import COLUMNS, MAX_BYTES, MAX_COLUMNS, MAX_ROWS
from sim.studies.sweep import MAX_BUDGETS
from ui.shell import work
from ui.shell.store import RESULTS, TRACES, deep_nbytes

from .app_bench import APP, sized
from .smoke import announce

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
    ("pages/learn/exactness.py", dict(exprompt=4096, exchunk=1), "Search",
     "a 4,096-token prompt in 4,096 chunks of 1, then the near-tie search"),
    ("pages/advanced/fidelity.py", dict(gpu="a100-80gb", mode="calibrated"), None, "defaults"),
    ("pages/under_load/traffic.py", dict(**MI300, workload="poisson", requests=1000, qps=1000,
                                   lengths="fixed", plen=128, olen=2400, budget=4096,
                                   policies=FIVE), None,
     "5 policies x 2,400,000 token times: the 12,000,000 a page keeps, at once"),
    ("pages/under_load/traffic.py", dict(**MI300, workload="poisson", requests=1000, qps=1,
                                   lengths="fixed", plen=4096, olen=2000, budget=4096,
                                   policies=FIVE), "Run (",
     "5 policies, 1,000 requests at 1/s: ~1.8 million iterations, on the button"),
    ("pages/advanced/memory.py", dict(**MI300, workload="poisson", requests=1000, qps=1000,
                                  lengths="fixed", plen=128, olen=2400, budget=4096,
                                  kvpolicies=FIVE), None,
     "5 policies x 2,400,000 token times, at once"),
    ("pages/under_load/budget_tradeoff.py", dict(**MI300, workload="poisson", requests=1000, qps=1000,
                                           lengths="fixed", olen=1000, bmin=1,
                                           bmax=10_000_000), "Run (",
     "budgets 1 to 10,000,000 on 1,000,000 token times a run, on the button"),
    ("pages/advanced/capacity.py", dict(**MI300, requests=1000, lengths="fixed", plen=1024,
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


def page_case(index: int, small: bool):
    """One case, opened (and its button clicked) in this process: (step, outcome, seconds, MiB
    resident at the peak, MiB added at the peak) per step."""
    page, query, click, _ = CASES[index]
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({k: v if isinstance(v, list) else str(v)
                            for k, v in sized(query, small).items()})
    at.switch_page(page)
    measured = _measured(at.run)
    yield "open", _outcome(at), *measured
    button = next((b for b in at.button if click and b.label.startswith(click)), None)
    if button is not None:
        label = button.label
        measured = _measured(button.click().run)
        yield f"click {label}", _outcome(at), *measured


def run_cases(indices: Iterable[int], small: bool) -> None:
    """Cases `indices` opened and clicked in turn in this process after a warm-up run of Home,
    caches kept, like one server that served them: a JSON line per step, [case index, *step],
    then one with what stays."""
    AppTest.from_file(APP, default_timeout=120).run()   # imports and first-run costs
    for index in indices:
        for step in page_case(index, small):
            print(json.dumps([index, *step]), flush=True)
    print(json.dumps({"stays": what_stays()}))


def what_stays() -> str:
    """What this process keeps: the stores, Streamlit's caches, its resident memory."""
    entries, nbytes = streamlit_caches()
    return (f"traces {TRACES.nbytes / 2**20:,.0f} of {TRACES.max_bytes / 2**20:,.0f} MiB, "
            f"results {RESULTS.nbytes / 2**20:,.1f} of {RESULTS.max_bytes / 2**20:,.0f} MiB, "
            f"Streamlit's caches {entries} resources and the data, {nbytes / 2**20:,.1f} MiB; "
            f"process {resident_mib():,.0f} MiB resident, {resident_mib('VmHWM'):,.0f} MiB at its "
            "peak")


# --- the command line ------------------------------------------------------------------------
def widest_trace(path: str, columns: int, rows: int, size: int) -> None:
    """A trace of `columns` columns, `rows` rows and `size` bytes (each row padded in a note
    column); one-token requests, so the run after the parse is small."""
    header = ",".join([*COLUMNS, *(f"note{i}" for i in range(columns - len(COLUMNS)))]) + "\n"
    width, extra = divmod(size - len(header), rows)
    lines = []
    for i in range(rows):
        line = f"{i * 1e-3:.3f},1,1,"
        lines.append(line + "x" * (width + (i < extra) - len(line) - 1) + "\n")
    with open(path, "w") as f:
        f.write(header + "".join(lines))


def most_requests_accepted(argv: list[str]) -> int:
    """The most --requests the work estimate accepts for `argv` (bisection on the check alone,
    which runs nothing)."""
    def accepted(requests: int) -> bool:
        args = build_parser().parse_args([*argv, "--requests", str(requests)])
        run = planned_run(args)
        try:
            check_work(work_of(run), "this run", remedy(args))
        except InputError:
            return False
        return True
    low, high = 1, 1_000_000
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if accepted(middle) else (low, middle)
    return low


def cli_cases(scratch: str, small: bool) -> list[tuple[str, list[str]]]:
    """(the dimension at its limit, the command line) for each refused dimension; `small`: the
    same command lines at a smoke test's sizes (the limit on requests still found, not run)."""
    poisson = ["simulate", "--qps", "1000"]
    most = most_requests_accepted(poisson)
    requests = min(most, 100) if small else most
    columns, rows, size = (len(COLUMNS) + 2, 100, 10_000) if small else (MAX_COLUMNS, MAX_ROWS, MAX_BYTES)
    arguments, budgets, capacity = (11, 3, 50) if small else (MAX_ARGUMENTS, MAX_BUDGETS,
                                                             MAX_CAPACITY_REQUESTS)
    trace = os.path.join(scratch, "widest.csv")
    widest_trace(trace, columns, rows, size)
    return [
        (f"a run's estimated work: {requests:,} requests", [*poisson, "--requests", str(requests)]),
        (f"trace: {size:,} bytes, {columns} columns, {rows:,} rows",
         ["simulate", "--trace-in", trace, "--json"]),
        (f"arguments: {arguments}", ["simulate", *["--budget", "600"] * ((arguments - 1) // 2)]),
        (f"sweep: {budgets} budgets",
         ["sweep", "--budgets", ",".join(str(64 * (k + 1)) for k in range(budgets)),
          "--requests", "200", "--qps", "4", "--lengths", "sharegpt"]),
        (f"capacity: {capacity:,} requests",
         ["capacity", "--tbt-slo", "0.1", "--requests", str(capacity), "--output-tokens", "16",
          "--max-runs", "100"]),
        # the export's figure (frames x pixels) is priced and measured by benchmarks/export_bench.py
    ]


def cli_limits(small: bool) -> bool:
    """Each command line of `cli_cases`, run and measured; whether every one exited with 0."""
    print(f"the command line at each limit (allowance {CLI_ALLOWANCE.seconds:g} s of CPU, "
          f"{CLI_ALLOWANCE.bytes / 1e9:g} GB):")
    print(f"{'dimension at its limit':48} {'exit':>4} {'CPU s':>7} {'wall s':>7} {'peak MB':>8}  "
          "within")
    clean = True
    with tempfile.TemporaryDirectory() as scratch:
        for what, argv in cli_cases(scratch, small):
            run = run_sim(*argv, timeout_s=300, peak_file=os.path.join(scratch, "peak"))
            within = run.cpu_seconds <= CLI_ALLOWANCE.seconds and run.peak_bytes <= CLI_ALLOWANCE.bytes
            clean = clean and run.code == 0
            print(f"{what:48} {run.code!s:>4} {run.cpu_seconds:7.2f} {run.seconds:7.2f} "
                  f"{run.peak_bytes / 1e6:8.0f}  {'yes' if within else 'NO'}"
                  + (f"  ({run.stderr.strip()[:100]})" if run.code else ""), flush=True)
    return clean


def cases_in_a_child(indices: Iterable[int], small: bool) -> tuple[list[list], str]:
    """`run_cases` in a fresh process: its steps, [case index, *step], and what stays."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.limits_bench", "--cases",
                           *map(str, indices), *(["--smoke"] if small else [])], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the page cases {list(indices)} stopped:\n{done.stderr[-3000:]}")
    *steps, stays = map(json.loads, done.stdout.splitlines())
    return steps, stays["stays"]


def page_limits(small: bool) -> bool:
    """Each page case, opened and measured; whether none showed a traceback."""
    print(f"limits: a page {work.PAGE_SECONDS} s and {work.PAGE_BYTES / 2**20:,.0f} MiB; at once "
          f"<= {work.NOW_SECONDS:g} s estimated, on a button <= {work.BUTTON_SECONDS:g} s "
          f"(deadlines {work.NOW_DEADLINE_S:g} s / {work.BUTTON_DEADLINE_S:g} s); a run <= "
          f"{work.RUN_ITERATIONS:,} iterations and {work.RUN_TOKENS:,} token times; a page's "
          f"traces <= {work.PAGE_TOKENS:,} token times")
    every_case = range(len(CASES))
    print("smoke: every case at a small size, all in one process, after a warm-up run of Home:"
          if small else "each case in a fresh process, after a warm-up run of Home:")
    print(f"{'page':20} {'step':26} {'seconds':>8} {'peak MiB':>9} {'+peak MiB':>10}  case: "
          "outcome")
    clean = True
    for batch in [every_case] if small else [[index] for index in every_case]:
        steps, stays = cases_in_a_child(batch, small)
        for index, step, outcome, seconds, peak, added in steps:
            page, _, _, what = CASES[index]
            clean = clean and outcome != "TRACEBACK"
            print(f"{page.split('/')[-1]:20} {step[:26]:26} {seconds:8.2f} {peak:9.0f} "
                  f"{added:10.0f}  {what}: {outcome}", flush=True)
    if not small:
        stays = cases_in_a_child(every_case, small)[1]
    print(f"every case in turn in one process, caches kept: {stays}")
    return clean


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.limits_bench")
    parser.add_argument("--cli", action="store_true", help="the command line's limits only")
    parser.add_argument("--smoke", action="store_true",
                        help="every case at a small size: does each still run? (not results)")
    parser.add_argument("--cases", type=int, nargs="+", help=argparse.SUPPRESS)  # run_cases, here
    args = parser.parse_args(argv)
    if args.cases:
        run_cases(args.cases, args.smoke)
        return 0
    if args.smoke:
        announce("every case at a small size, far from the limits")
    clean = cli_limits(args.smoke)
    if not args.cli:
        clean = page_limits(args.smoke) and clean
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
