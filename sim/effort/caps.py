"""What a command may spend on its runs, and each run's iteration cap within it.

An `Allowance` is CPU seconds and bytes of memory on this machine (never the token budget, which
is a scheduler's tokens per iteration). `CommandEffort.caps` turns an allowance into caps: a
command is refused when its runs do not fit even at their likely iterations (everything else at
its bound, sim/effort/estimate.py), and otherwise each run gets the largest cap, at least its
likely iterations, at which all of them fit (at least its bound, and more up to its own cap,
where all the bounds fit); a run that needs more stops there and says so. So the likely estimate
decides, and the caps keep the guarantee: a command never takes more than its allowance. Pages
do the same with the likely estimate and a wall-clock deadline (ui/shell/work.py).

A search that does not know how many runs it needs (capacity) is handed a `RunAccount`'s
`may_start` and `finished` as callbacks: it asks before each run, and reports each finished one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from sim.effort.estimate import Counts, RunEstimate
from sim.errors import InputError
from sim.serving.policies import PolicySpec


@dataclass(frozen=True)
class Allowance:
    """What one command (or one page's run) may take of this machine: CPU seconds and bytes."""
    seconds: float
    bytes: float


CLI_ALLOWANCE = Allowance(seconds=60.0, bytes=1.5e9)


class EffortTooLarge(InputError):
    """A run refused before it starts: its estimated effort is over the allowance."""


@dataclass(frozen=True)
class CommandEffort:
    """A command's runs, one after another, and the work it does beside them (drawing, its own
    start). Memory is the largest run's, or all of them with `held_together` (export keeps both
    lanes' traces for its figure)."""
    runs: tuple[RunEstimate, ...]
    seconds_beside: float = 0.0
    bytes_beside: float = 0.0
    held_together: bool = False

    def plus(self, seconds: float, nbytes: float) -> CommandEffort:
        return replace(self, seconds_beside=self.seconds_beside + seconds,
                       bytes_beside=self.bytes_beside + nbytes)

    def cost(self, caps) -> tuple[float, float]:
        """(seconds, bytes) at most, with each run capped at its entry of `caps`."""
        most = [run.most(cap) for run, cap in zip(self.runs, caps)]
        nbytes = sum(c.bytes() for c in most) if self.held_together else \
            max(c.bytes() for c in most)
        return (sum(c.seconds() for c in most) + self.seconds_beside,
                nbytes + self.bytes_beside)

    def caps_at(self, scale: float) -> tuple[int, ...]:
        return tuple(run.iterations_at(scale) for run in self.runs)

    def most_caps(self) -> tuple[int, ...]:
        return tuple(run.most_iterations for run in self.runs)

    def caps_beyond(self, scale: float) -> tuple[int, ...]:
        """`scale` (>= 1) times each run's bound, within its own cap."""
        return tuple(min(run.cap, math.ceil(scale * run.bound.iterations)) for run in self.runs)

    def fits(self, caps, allowance: Allowance) -> bool:
        seconds, nbytes = self.cost(caps)
        return seconds <= allowance.seconds and nbytes <= allowance.bytes

    def caps(self, allowance: Allowance) -> tuple[int, ...] | None:
        """Each run's iteration cap within `allowance`; None when the runs do not fit even at
        their likely iterations. Where their bounds fit, each gets its bound and, up to its own
        cap, the largest common multiple of it that fits (room for preemption, which the bound
        leaves out); else the largest common multiple (at least 1) of their likely iterations
        that fits, each within its bound."""
        if not self.fits(self.caps_at(1.0), allowance):
            return None
        if self.fits(self.most_caps(), allowance):
            return self._largest(self.caps_beyond, allowance, max(
                run.cap / max(1, run.bound.iterations) for run in self.runs))
        return self._largest(self.caps_at, allowance, max(
            run.most_iterations / max(1, run.likely.iterations) for run in self.runs))

    def _largest(self, caps_at, allowance: Allowance, high: float) -> tuple[int, ...]:
        """caps_at(scale) at the largest scale in [1, high] that fits `allowance` (caps_at(1)
        fits; the cost grows with the scale)."""
        if self.fits(caps_at(high), allowance):
            return caps_at(high)
        low = 1.0
        for _ in range(40):
            mid = (low + high) / 2
            low, high = (mid, high) if self.fits(caps_at(mid), allowance) else (low, mid)
        return caps_at(low)

    def check(self, allowance: Allowance, what: str, remedy: str) -> tuple[int, ...]:
        """The runs' iteration caps within `allowance`, or EffortTooLarge with the estimate (the
        runs at their likely iterations) and `remedy` (what to change)."""
        caps = self.caps(allowance)
        if caps is None:
            self._refuse(self.caps_at(1.0), "about", allowance, what, remedy)
        return caps

    def check_most(self, allowance: Allowance, what: str, remedy: str) -> None:
        """EffortTooLarge, with the most the runs can take and `remedy`, unless that fits
        `allowance` (for runs that get no lower caps: a search that must not stop half-way
        through a run)."""
        if not self.fits(self.most_caps(), allowance):
            self._refuse(self.most_caps(), "up to", allowance, what, remedy)

    def _refuse(self, caps, words: str, allowance: Allowance, what: str, remedy: str) -> None:
        seconds, nbytes = self.cost(caps)
        over = []
        if seconds > allowance.seconds:
            over.append(f"over the {fmt_effort_seconds(allowance.seconds)} time budget")
        if nbytes > allowance.bytes:
            over.append(f"over the {fmt_effort_bytes(allowance.bytes)} memory budget")
        largest = max(range(len(self.runs)),
                      key=lambda i: self.runs[i].most(caps[i]).seconds())
        runs, each = (f"{len(self.runs):,} runs of ", " for the largest") \
            if len(self.runs) > 1 else ("", "")
        raise EffortTooLarge(
            f"{what} would take {runs}{words} {caps[largest]:,} iterations and "
            f"{self.runs[largest].likely.tokens:,} output tokens{each}: "
            f"≈ {fmt_effort_seconds(seconds)} and {fmt_effort_bytes(nbytes)}, "
            f"{' and '.join(over)}; {remedy}")


def combined(efforts: list[CommandEffort], held_together: bool = False) -> CommandEffort:
    """Several commands' runs as one command's (a sweep, an export's two lanes)."""
    return CommandEffort(tuple(run for effort in efforts for run in effort.runs),
                         sum(e.seconds_beside for e in efforts),
                         sum(e.bytes_beside for e in efforts), held_together)


@dataclass
class RunAccount:
    """The CPU time a sequence of runs has spent against an allowance, counted with the same
    prices from each finished run's own counts (deterministic, unlike the wall clock). `estimates`
    holds one run's estimate for each (policy name, token budget) the search will run;
    `windowed`: the model has a sliding window (its decoders are priced one by one)."""
    allowance: Allowance
    estimates: Mapping[tuple[str, int], RunEstimate]
    windowed: bool
    spent_s: float = 0.0

    def may_start(self, policy: PolicySpec, budget: int) -> str | None:
        """None when the most one more run of `policy` at token budget `budget` can do fits in
        what is left; else why not."""
        most = self.estimates[policy.name, budget].most()
        if self.spent_s + most.seconds() <= self.allowance.seconds \
                and most.bytes() <= self.allowance.bytes:
            return None
        return (f"one more could take up to {fmt_effort_seconds(most.seconds())}, past what is "
                f"left of the {fmt_effort_seconds(self.allowance.seconds)} budget")

    def finished(self, trace) -> None:
        """Add a finished run (its Trace), priced from its own counts."""
        self.spent_s += Counts.of_trace(trace, self.windowed).seconds()


def fmt_effort_seconds(s: float) -> str:
    return f"{s:,.0f} s" if s >= 10 else f"{s:.2g} s"


def fmt_effort_bytes(b: float) -> str:
    return f"{b / 1e9:.3g} GB" if b >= 1e9 else f"{b / 1e6:,.0f} MB"
