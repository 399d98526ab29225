"""Run every benchmark case a few times and print its median, the target and peak memory; with
`--smoke`, every case once at a small size, to show that each still runs. A case that raises is
reported by name, the others still run, and the exit status is 1."""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import traceback

from . import app_bench, engine_bench, exactness_bench, export_bench, pipeline_bench, traffic_bench
from .engine_runs import seconds_of
from .smoke import announce

SUITES = [engine_bench, traffic_bench, app_bench, export_bench, exactness_bench, pipeline_bench]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", help="run cases whose name contains this text")
    parser.add_argument("--smoke", action="store_true",
                        help="every case once at a small size: does each still run? (its timings "
                             "are not results)")
    args = parser.parse_args(argv)
    repeats = 1 if args.smoke else args.repeats
    if args.smoke:
        announce("every case once at a small size")
    print(f"{'case':<58} {'median':>10} {'min':>10} {'target':>9}  verdict")
    failed = []
    for suite in SUITES:
        try:
            suite_cases = suite.cases(small=args.smoke)
        except Exception:
            traceback.print_exc()
            failed.append(f"{suite.__name__}'s cases")
            continue
        for name, target, fn in suite_cases:
            if args.only and args.only not in name:
                continue
            try:
                times = [seconds_of(fn) for _ in range(repeats)]
            except Exception:
                traceback.print_exc()
                print(f"{name:<58} FAILED (its traceback above)", flush=True)
                failed.append(name)
                continue
            med = statistics.median(times)
            judged = target is not None and not args.smoke     # a smoke size has no target
            verdict = ("ok" if med < target else "SLOWER THAN TARGET") if judged else ""
            tgt = f"< {target:g} s" if judged else ""
            print(f"{name:<58} {med:>9.4f}s {min(times):>9.4f}s {tgt:>9}  {verdict}", flush=True)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mib:,.0f} MiB")
    if failed:
        print("FAILED: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


sys.exit(main())
