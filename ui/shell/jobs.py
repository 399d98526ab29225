"""A page's simulations within the page's limits (ui/shell/work.py): each result kept in a store shared
by every session (ui/shell/store.py), the rest estimated first, then run at once when small, behind a
button with a progress bar and a cancel when large, or refused with the estimate and what to
change. Whatever the estimate said, a tier's deadline bounds the time: each run gets the
iteration cap that fits in what is left of it.

Cancel works the way any click during a run does in Streamlit: the click asks for a rerun, which
stops the script at its next call into Streamlit (here, the progress bar after each run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import streamlit as st

from sim.serving.engine import SimulationLimitError, Trace
from sim.serving.run import Run
from sim.units import fmt_seconds

from .store import RESULTS, ByteStore
from .work import (
    BUTTON_DEADLINE_S,
    BUTTON_SECONDS,
    NOW_DEADLINE_S,
    NOW_SECONDS,
    RUN_ITERATIONS,
    Work,
    tier,
    total,
)

Report = Callable[[float, str], None]   # (share of this run done, what it is doing)


_MISSING = object()


class OutOfTime(Exception):
    """The tier's deadline passed during a run that reports its progress."""


@dataclass(frozen=True)
class Job:
    """One simulation of a page: `run(iteration cap, report)` -> its result."""
    key: Hashable
    label: str
    work: Work                                  # estimated
    run: Callable[[int, Report], object]
    keep_capped: bool = False   # a run past RUN_ITERATIONS is kept as None (else its error)

    @property
    def estimate(self) -> Work:
        """The estimate, raised to what an earlier run of it saw before a cap stopped it."""
        return self.work.more_than(RESULTS.get(("capped", self.key), 0))


def capped_run(run: Run, cap: int, report: Report) -> Trace:
    """A simulation as a Job runs it: at most `cap` iterations (the pages' one call into the
    engine)."""
    return run.capped(cap).simulate()


def _note_key(key: str) -> str:
    return f"_{key}_note"


def _leave_note(key: str, note: str) -> None:
    """A note for the next run of the page, beside the button with widget key `key`."""
    st.session_state[_note_key(key)] = note


def show_note(key: str) -> None:
    """The note left for this run beside the button `key` (a cancel, a deadline), if any."""
    note = st.session_state.pop(_note_key(key), None)
    if note:
        st.caption(note)


def refuse_over_limit(work: Work, what: str, change: str) -> None:
    """Work over what a page runs even on a button: a message with the estimate and what to
    change, and the end of the page's run."""
    if tier(work) == "refuse":
        st.error(f"**Can't {what}:** {work.words()}, more than the {BUTTON_SECONDS:g} s a page "
                 f"runs even on a button. Make it smaller: {change}", icon=":material/timer_off:")
        st.stop()


def run_jobs(jobs: Sequence[Job], store: ByteStore, *, what: str, change: str,
             key: str) -> dict[Hashable, object]:
    """{job key: result} for every job, or a message and the end of the page's run. `what`:
    the page's work in words ("simulate this workload"); `change`: what makes it smaller;
    `key`: the button's widget key."""
    kept = {job.key: store.get(job.key, _MISSING) for job in jobs}
    done = {k: v for k, v in kept.items() if v is not _MISSING}
    todo = [job for job in jobs if job.key not in done]
    if not todo:
        return done
    if tier(total(j.estimate for j in todo)) == "now":
        done |= _run(todo, store, NOW_DEADLINE_S)
        todo = [job for job in todo if job.key not in done]
        if not todo:
            return done
        _leave_note(key, f"The runs took longer than estimated, more than the {NOW_SECONDS:g} s "
                         "a page runs without asking; the finished ones are kept.")
    work = total(j.estimate for j in todo)
    refuse_over_limit(work, what, change)
    ask = st.empty()   # the question goes once the answer is drawn below it
    with ask.container():
        st.info(f"**To {what}:** {work.words()}, more than the {NOW_SECONDS:g} s a page runs "
                f"without asking. Run it, or make it smaller: {change}",
                icon=":material/hourglass_top:")
        show_note(key)
        if not st.button(f"Run ({fmt_seconds(work.seconds)} estimated)", key=key,
                         type="primary", icon=":material/play_arrow:"):
            st.stop()
    finished = _run(todo, store, BUTTON_DEADLINE_S, cancel=key)
    ask.empty()
    if len(finished) < len(todo):
        _leave_note(key, f"Stopped after {BUTTON_DEADLINE_S:g} s, the most one click runs; the "
                         f"{len(finished):,} runs that finished are kept. Run again for the rest.")
        st.rerun()
    return done | finished


def kept_or_on_click(kept, estimate: Callable[[], Work], runs: str, label: str, key: str,
                     find: Callable[[], object]):
    """A search kept from before, or its estimate under `runs` (what it runs, in words) and a
    button labelled `label` (widget key `key`) that runs `find`: its result once clicked, else
    None."""
    if kept is not None:
        return kept
    work = estimate()
    st.caption(f"{runs}: {work.words()}. The result is kept, so coming back to the same "
               "settings shows it at once.")
    if st.button(label, type="primary", icon=":material/play_arrow:", key=key):
        return find()
    return None


def run_alone(job: Job, store: ByteStore, key: str):
    """One job behind a button the page drew (widget key `key`), with a progress bar and a
    cancel: its result, or None when it ran out of time."""
    return _run([job], store, BUTTON_DEADLINE_S, cancel=key).get(job.key)


def _run(todo: Sequence[Job], store: ByteStore, seconds: float,
         cancel: str | None = None) -> dict[Hashable, object]:
    """Run jobs in turn until `seconds` have passed, with a progress bar (and a Cancel button
    under the widget key `cancel` + "_cancel"); {key: result} of those that finished."""
    deadline = time.monotonic() + seconds
    bar = st.progress(0.0, text=f"{todo[0].label} (1 of {len(todo)})")
    stop = st.empty()
    if cancel:
        stop.button("Cancel", key=f"{cancel}_cancel", icon=":material/cancel:",
                    on_click=_leave_note,
                    args=(cancel, "Cancelled; the runs that finished are kept."))
    finished = {}
    try:   # the progress line and Cancel go however the runs end, a refusal's message included
        for i, job in enumerate(todo):
            left = deadline - time.monotonic()
            if left <= 0:
                break

            def report(share: float, text: str, i=i) -> None:
                bar.progress(min(1.0, (i + share) / len(todo)), text=text)
                if time.monotonic() > deadline:
                    raise OutOfTime

            cap = max(1, min(RUN_ITERATIONS, job.estimate.iterations_in(left)))
            try:
                result = job.run(cap, report)
            except OutOfTime:
                break
            except SimulationLimitError:
                RESULTS.put(("capped", job.key), max(cap, RESULTS.get(("capped", job.key), 0)))
                if cap < RUN_ITERATIONS:
                    break
                if not job.keep_capped:
                    raise
                result = None
            finished[job.key] = store.put(job.key, result)
            if i + 1 < len(todo):
                bar.progress((i + 1) / len(todo),
                             text=f"{todo[i + 1].label} ({i + 2} of {len(todo)})")
    finally:
        bar.empty()
        stop.empty()
    return finished
