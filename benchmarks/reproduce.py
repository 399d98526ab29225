"""Regenerate the shipped paper reproduction: `python -m benchmarks.reproduce`.

Runs every scenario of sim/studies/reproduce.py at full effort (the paper's 2,048 requests per
capacity run, bisection to 2%) and writes sim/studies/data/reproduce.json, with this command and
the commit it ran on, which `python -m sim reproduce` prints. Run it again after any change to
the policies, the engine or the cost model (the test of `--rerun` fails while the shipped figures
are stale). It prints each scenario's wall time as measured on the machine that ran it.
`--smoke --out FILE`: every scenario at SMOKE effort, a check that it runs (never over the
shipped file).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from sim.studies.reproduce import FULL, SCENARIOS, SHIPPED_RESULTS, Effort, reproduce, shipped_json

from .smoke import announce

COMMAND = "python -m benchmarks.reproduce"
ROOT = Path(__file__).resolve().parents[1]
SMOKE = Effort(requests=64, rel_tol=0.25, overhead_span=True)


def commit() -> str:
    """The commit the results come from, marked when the work tree had changes beside it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "sim")
    return head + (" with uncommitted changes to sim/" if dirty else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=SHIPPED_RESULTS,
                        help="where to write the results (default: the shipped file)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"{SMOKE.describe()}: does every scenario still run? (needs --out)"
                        .replace("%", "%%"))   # argparse formats a help with %
    args = parser.parse_args(argv)
    if args.smoke and args.out.resolve() == SHIPPED_RESULTS.resolve():
        parser.error("--smoke: give --out another file; the shipped results are full effort")
    effort = SMOKE if args.smoke else FULL
    if args.smoke:
        announce(f"every scenario at {effort.describe()}")
    rows, start = [], time.perf_counter()
    for name in SCENARIOS:
        began = time.perf_counter()
        found = reproduce(name, effort)
        rows += found
        print(f"{name:<22} {time.perf_counter() - began:7.1f} s  " + "; ".join(
            f"{r.metric}: {'-' if r.simulated is None else f'{r.simulated:.4g}'} vs {r.paper:g}"
            for r in found), flush=True)
    results = shipped_json(rows, COMMAND, commit())
    if args.smoke:      # the file says how it was made
        results = json.dumps({**json.loads(results), "command": f"{COMMAND} --smoke",
                              "effort": effort.describe()}, indent=1) + "\n"
    args.out.write_text(results, encoding="utf-8")
    print(f"wrote {args.out}; measured on this machine: {time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
