"""A stand-in page for ui/shell/jobs.py's tests: jobs whose cost is known, run through run_jobs in
AppTest. Its state lives here, where the page script (run anew on every rerun) finds it."""

import time

from sim.effort.estimate import ITEM_COSTS, Counts
from sim.errors import InputError
from sim.serving.engine import SimulationLimitError
from ui.shell.jobs import Job
from ui.shell.store import ByteStore
from ui.shell.work import Work

# A stand-in iteration is priced as a sliding-window model's (the dearest), so that the "now"
# tier's deadline allows fewer iterations than a run's cap (RUN_ITERATIONS).
ITERATION_S = ITEM_COSTS["iterations"].seconds + ITEM_COSTS["window_iterations"].seconds
STORE = ByteStore(1 << 20)
CALLS: list[tuple[str, int]] = []   # (job, the iteration cap it was given)
JOBS: list[Job] = []


def stand_in(name: str, estimated_s: float, needs: int = 1, seconds: float = 0.0,
             keep_capped: bool = False, refuses: str = "") -> Job:
    """A job estimated at `estimated_s`, that needs `needs` iterations (more than its cap: the
    engine's SimulationLimitError), takes `seconds`, and, given `refuses`, is refused on its way
    (sim's InputError, as a KV cache too small for a request refuses a run)."""
    def run(cap, report):
        CALLS.append((name, cap))
        time.sleep(seconds)
        if refuses:
            raise InputError(refuses)
        if needs > cap:
            raise SimulationLimitError(f"{name} needed more than {cap:,} iterations")
        return f"{name} done"
    iterations = round(estimated_s / ITERATION_S)   # and nothing else
    return Job((name, time.time_ns()), name,
               Work(Counts(iterations=iterations, window_iterations=iterations)), run, keep_capped)


def page():
    """The stand-in page: JOBS through run_jobs, then what came back."""
    import streamlit as st

    from sim.errors import InputError
    from sim.serving.engine import SimulationLimitError
    from tests.support.stand_in_jobs import JOBS, STORE
    from ui.shell.jobs import run_jobs

    try:
        results = run_jobs(JOBS, STORE, what="do the test work", change="less work.", key="go")
    except SimulationLimitError as e:
        st.error(f"capped: {e}")
    except InputError as e:
        st.error(f"refused: {e}")
    else:
        st.markdown("results: " + ", ".join(str(results[job.key]) for job in JOBS))
