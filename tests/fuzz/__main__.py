"""`python -m tests.fuzz [--cases N] [--seed S] [--jobs J]`: every fuzz suite, N cases each; prints
the verdicts, the slowest and largest cases and every failure; exit code 1 if any case failed.

Add a suite by listing its module in SUITES (see tests/fuzz/__init__.py for what it provides)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from . import cli, echo, files, headers, outputs
from .report import summary

SUITES = [cli, outputs, files, headers, echo]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--cases", type=int, default=500, help="cases per suite (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="cases run at once, each in its own process (default 2)")
    parser.add_argument("--suites", help="comma-separated suites to run (default all: "
                        + ", ".join(s.__name__.rsplit(".", 1)[1] for s in SUITES) + ")")
    args = parser.parse_args(argv)
    chosen = [s for s in SUITES if args.suites is None or
              s.__name__.rsplit(".", 1)[1] in args.suites.split(",")]
    results = []
    start = time.perf_counter()
    for suite in chosen:
        cases = suite.generate(args.cases, args.seed)
        with tempfile.TemporaryDirectory(prefix=f"fuzz-{suite.SUITE}-") as scratch:
            suite.make_scratch(scratch)
            with ThreadPoolExecutor(args.jobs) as pool:
                for result in pool.map(lambda case, s=suite, d=scratch: s.run(case, d), cases):
                    results.append(result)
                    if not result.clean:
                        print(f"FAIL {result.verdict}: {result.case}", flush=True)
    print(summary(results))
    print(f"\n{len(results):,} cases in {time.perf_counter() - start:,.0f} s "
          f"({args.jobs} at a time)")
    return 0 if all(r.clean for r in results) else 1


sys.exit(main())
