"""Run every benchmark case a few times and print its median, the target and peak memory."""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time

from . import app_bench, engine_bench, export_bench, traffic_bench

SUITES = [engine_bench, traffic_bench, app_bench, export_bench]


def measure(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", help="run cases whose name contains this text")
    args = parser.parse_args(argv)
    print(f"{'case':<58} {'median':>10} {'min':>10} {'target':>9}  verdict")
    for suite in SUITES:
        for name, target, fn in suite.cases():
            if args.only and args.only not in name:
                continue
            times = measure(fn, args.repeats)
            med = statistics.median(times)
            verdict = "" if target is None else ("ok" if med < target else "SLOWER THAN TARGET")
            tgt = "" if target is None else f"< {target:g} s"
            print(f"{name:<58} {med:>9.4f}s {min(times):>9.4f}s {tgt:>9}  {verdict}", flush=True)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mib:,.0f} MiB")
    return 0


sys.exit(main())
