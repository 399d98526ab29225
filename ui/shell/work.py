"""The app's own limits on a page's runs: under PAGE_SECONDS and PAGE_BYTES of server memory for
one run of a page on this 2-core machine, the tiers (at once, behind a button, refused), their
deadlines and the words on screen. Pure Python + numpy (no Streamlit).

How much work a run is comes from the run-effort estimate (sim/effort/estimate.py), the one the
command line uses: a page goes by its likely estimate (iterations from Little's law, what fits in KV and
the budget; token times exact; every counted item priced as measured). The estimate decides
whether a page runs at once, behind a button or not at all; the tier's deadline, turned into each
run's iteration cap, is what bounds a run whatever the estimate says.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.effort.estimate import ITEM_COSTS, Counts, estimate_run
from sim.serving.run import Run
from sim.units import fmt_seconds

# The limits (README "Limits"; the fuzz suite records each page's worst case against them).
PAGE_SECONDS = 10               # one run of any page, whatever its link
PAGE_BYTES = 1 << 30            # server memory one run of a page may add
NOW_SECONDS = 3.0               # estimated work a page does without asking
BUTTON_SECONDS = 60.0           # estimated work a page does behind a button; more is refused
RUN_ITERATIONS = 500_000        # the engine's cap on one run (~3-9 s here)
RUN_TOKENS = 6_000_000          # token times one run may keep (~300 MB while its trace is built)
PAGE_TOKENS = 12_000_000        # token times the traces a page shows together may keep
# what a page may spend, by tier, whatever the estimate said: twice the estimate it allows (a run
# gets the iteration cap that fits in what is left; past it the page stops and says so)
NOW_DEADLINE_S = 2 * NOW_SECONDS
BUTTON_DEADLINE_S = 2 * BUTTON_SECONDS


@dataclass(frozen=True)
class Work:
    """The likely work of some runs, their counts summed (or, `seen`, more iterations than
    that: an earlier run stopped at that cap)."""
    counts: Counts
    seen: bool = False

    @property
    def runs(self) -> int:
        return self.counts.runs

    @property
    def iterations(self) -> int:
        return self.counts.iterations

    @property
    def tokens(self) -> int:
        return self.counts.tokens

    @property
    def seconds(self) -> float:
        return self.counts.seconds()

    def __add__(self, other: Work) -> Work:
        """Both together (a page's runs, one after another)."""
        return Work(self.counts + other.counts, self.seen or other.seen)

    def more_than(self, iterations: int) -> Work:
        """This work, knowing that it takes more than `iterations` (a cap an earlier run hit)."""
        if iterations < self.iterations:
            return self
        return Work(self.counts.with_iterations(iterations), seen=True)

    def iterations_in(self, seconds: float) -> int:
        """The iterations of these runs that fit in `seconds`, beside the rest of their work."""
        return self.counts.iterations_within(seconds)

    def words(self) -> str:
        """The estimate with its formula (Markdown): the iterations, the token times, the rest."""
        c = self.counts
        iterations_s = c.iterations * ITEM_COSTS["iterations"].seconds \
            + c.window_iterations * ITEM_COSTS["window_iterations"].seconds
        tokens_s = c.tokens * ITEM_COSTS["tokens"].seconds
        runs = f"{c.runs:,} run{'s' if c.runs != 1 else ''}"
        return (f"{runs}, about {c.iterations:,} iterations × "
                f"{fmt_seconds(iterations_s / max(1, c.iterations))} + {c.tokens:,} token times × "
                f"{ITEM_COSTS['tokens'].seconds * 1e9:g} ns + "
                f"{fmt_seconds(self.seconds - iterations_s - tokens_s)} for the requests, prompt "
                f"chunks and running set = **{fmt_seconds(self.seconds)}**")


NO_WORK = Work(Counts())


def total(works) -> Work:
    return sum(works, NO_WORK)


def tier(work: Work) -> str:
    """"now", "button" (progress and a cancel) or "refuse", by the estimated seconds."""
    if work.seconds <= NOW_SECONDS:
        return "now"
    return "button" if work.seconds <= BUTTON_SECONDS else "refuse"


def too_big(work: Work) -> str | None:
    """Why one run is over the limits of a run, or None."""
    if work.tokens > RUN_TOKENS:
        return (f"its trace would keep {work.tokens:,} token times (one per output token), more "
                f"than the {RUN_TOKENS:,} a run here may keep")
    if work.iterations > RUN_ITERATIONS or work.seen and work.iterations == RUN_ITERATIONS:
        return (f"it needs {'more than' if work.seen else 'about'} {work.iterations:,} "
                f"iterations{'' if work.seen else ' (estimated)'}, and a run here may take at most "
                f"{RUN_ITERATIONS:,}")
    return None


def run_work(run: Run) -> Work:
    """One run's likely work."""
    return Work(estimate_run(run).likely)
