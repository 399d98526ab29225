"""What every fuzz suite reports: each case's verdict, time and peak memory; the slowest and the
largest cases; the failures in full."""

from __future__ import annotations

import collections
from dataclasses import dataclass

CLEAN = ("clean run", "clean refusal", "clean output error")
BUDGET_SECONDS = 60.0      # what any command may take (the bounded-runs target)
BUDGET_BYTES = 1.5e9


@dataclass(frozen=True)
class Result:
    suite: str
    case: str            # how to reproduce it (a command line)
    verdict: str         # "clean run", "clean refusal", or what went wrong
    seconds: float       # wall clock (a shared machine stretches it)
    cpu_seconds: float   # the case's own CPU time: what the time budget is checked against
    peak_bytes: int
    detail: str = ""     # for a failure: the evidence (the last lines of stderr, the bad output)

    @property
    def clean(self) -> bool:
        return self.verdict in CLEAN


def over_budget(cpu_seconds: float, peak_bytes: int) -> str:
    """'' when a case kept to the command budget, else which part it broke. Time is the case's
    CPU time: on a shared machine the wall clock also counts everyone else's work."""
    parts = []
    if cpu_seconds > BUDGET_SECONDS:
        parts.append(f"took {cpu_seconds:.0f} s of CPU > {BUDGET_SECONDS:.0f} s")
    if peak_bytes > BUDGET_BYTES:
        parts.append(f"peak {peak_bytes / 1e9:.2f} GB > {BUDGET_BYTES / 1e9:.1f} GB")
    return "; ".join(parts)


def summary(results: list[Result], top: int = 5) -> str:
    """The counts by verdict, the slowest and largest cases, and every failure."""
    lines = []
    by_suite = collections.defaultdict(list)
    for r in results:
        by_suite[r.suite].append(r)
    for suite, rs in by_suite.items():
        verdicts = collections.Counter(r.verdict for r in rs)
        lines.append(f"{suite}: {len(rs):,} cases: " + ", ".join(
            f"{n:,} {v}" for v, n in verdicts.most_common()))
        lines.append("  worst (CPU time):" + _row(max(rs, key=lambda r: r.cpu_seconds))[1:])
        lines.append("  worst (memory):  " + _row(max(rs, key=lambda r: r.peak_bytes))[1:])
    lines.append(f"\nslowest {top} (CPU time; wall clock beside it):")
    lines += [_row(r) for r in sorted(results, key=lambda r: -r.cpu_seconds)[:top]]
    lines.append(f"\nlargest {top} (peak resident memory):")
    lines += [_row(r) for r in sorted(results, key=lambda r: -r.peak_bytes)[:top]]
    failures = [r for r in results if not r.clean]
    lines.append(f"\n{len(failures):,} failures" + (":" if failures else ""))
    for r in failures:
        lines.append(f"  {r.verdict}: {r.case}\n    {r.detail}")
    return "\n".join(lines)


def _row(r: Result) -> str:
    return (f"  {r.cpu_seconds:6.2f} s CPU {r.seconds:7.2f} s wall {r.peak_bytes / 1e6:7,.0f} MB  "
            f"{r.verdict:<14} {r.case}")
