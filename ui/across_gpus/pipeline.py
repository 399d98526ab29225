"""The Pipeline page's runs and figure: the sidebar's scenario through `pp` pipeline stages
unchunked, with fixed chunks and with dynamic chunks, each a staged run (sim/serving/pipeline.py)
kept once per run for every session; and the same GPUs as one tensor-parallel group beside
tensor × pipeline parallelism."""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from charts import pipeline as charts
from charts.figure import Figure
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.serving.chunking import fit_dynamic_chunks
from sim.serving.engine import SimulationLimitError
from sim.serving.pipeline import Pipeline, StagedRun, make_pipeline, stage_costs
from sim.serving.run import Run

from ..learn.player import draw_whole_run
from ..shell import presenter
from ..shell.cached_figure import cached_figure
from ..shell.controls import GPU_LINK
from ..shell.scenario import Scenario
from . import pipeline_words as words

# A textbook run's micro-batches are its streams' output tokens, a few hundred; this bounds a
# budget too small for the prompt (each engine's cap).
MAX_ITERATIONS = 50_000


@dataclass(frozen=True)
class Setup:
    """What the page runs: the sidebar's scenario over `pp` stages joined by `link` (the
    GPU's own: GPU_LINK), and the chunk sizing of the side-by-side comparison."""
    scenario: Scenario
    pp: int
    link: str
    chunking: str

    def pipeline(self) -> Pipeline:
        s = self.scenario
        link = None if self.pp == 1 or self.link == GPU_LINK else self.link
        return make_pipeline(s.model, s.gpu, self.pp, link=link)

    def run(self, schedule: str) -> Run:
        """One of the three schedules through the stages: the sidebar's unchunked policy, or
        its chunked one with fixed or dynamic chunks. The textbook lanes' limits (a seat for
        every stream and the prompt), so no engine default is read."""
        s = self.scenario
        lane = s.lane(s.unchunked if schedule == words.UNCHUNKED else s.chunked)
        chunking = "dynamic" if schedule == words.DYNAMIC else "fixed"
        limits = replace(lane.limits, chunking=chunking) if schedule != words.UNCHUNKED \
            else lane.limits
        return replace(lane, pipeline=self.pipeline(), limits=limits)

    def tensor_run(self) -> Run:
        """The same GPUs as one tensor-parallel group (tp × pp), the sidebar's chunked policy at
        the page's chunk sizing."""
        s = replace(self.scenario, tp=self.scenario.tp * self.pp)
        lane = s.lane(s.chunked)
        return replace(lane, limits=replace(lane.limits, chunking=self.chunking))

    def split_run(self) -> Run:
        return self.run(words.DYNAMIC if self.chunking == "dynamic" else words.FIXED)

    def first_stage(self) -> CostModel:
        """The chunked policy's first stage as its runs price it (its engine's CPU time on it)."""
        run = self.run(words.DYNAMIC)
        return stage_costs(run.cost.for_engine(run.policy.overhead), run.pipeline)[0]

    def dynamic_fitted(self) -> bool:
        """Whether SGLang's fit finds a quadratic term on the first stage (else chunks stay
        fixed)."""
        return fit_dynamic_chunks(self.first_stage(), self.scenario.budget) is not None


@st.cache_resource(max_entries=24, show_spinner=False)
def _staged(digest: str, _run: Run) -> StagedRun:
    """A staged run, once per run (`digest`) for every session."""
    return _run.capped(MAX_ITERATIONS).staged()


def staged(run: Run) -> StagedRun:
    return _staged(run.digest, run)


def stop_on(e: Exception) -> None:
    why = (f"a schedule needs more than {MAX_ITERATIONS:,} micro-batches, the most this page "
           "runs: raise the budget or shorten the prompt" if isinstance(e, SimulationLimitError)
           else str(e))
    st.error(f"**Can't run this pipeline:** {why}.", icon=":material/error:")
    st.stop()


def schedules(setup: Setup) -> dict[str, StagedRun]:
    """The three schedules' staged runs, or an error and the end of the page's run."""
    try:
        return {name: staged(setup.run(name)) for name in words.SCHEDULES}
    except (InputError, SimulationLimitError) as e:
        stop_on(e)


def side_by_side(setup: Setup) -> tuple[words.Setup, words.Setup] | str:
    """The same GPUs as TP(tp × pp) and as TP(tp) × PP(pp), or why the first cannot run."""
    s, gpus = setup.scenario, setup.scenario.tp * setup.pp
    try:
        tensor = staged(setup.tensor_run())
        split = staged(setup.split_run())
    except (InputError, SimulationLimitError) as e:
        return str(e)
    return (words.setup_of(f"TP{gpus}", gpus, tensor.trace, tensor.schedule),
            words.setup_of(f"TP{s.tp} × PP{setup.pp}", gpus, split.trace, split.schedule))


@cached_figure(max_entries=16)
def stages_figure(key: tuple[str, ...], look: Look, width: int,
                  _runs: dict[str, StagedRun]) -> Figure:
    """Every schedule's stages (`key`: the runs' digests)."""
    figures = {name: r.schedule.figures for name, r in _runs.items()}
    sums = {name: (words.idle_sum(f), words.fraction_sum(f)) for name, f in figures.items()}
    frames = charts.stage_frames({n: r.schedule for n, r in _runs.items()}, sums)
    return charts.stage_chart(frames, look, width=width)


STAGES = "pipeline-stages"   # the player's key (its kept position) and the downloads' name


def draw_stages(setup: Setup, runs: dict[str, StagedRun], look: Look) -> None:
    """Every schedule's stages in the player, with their downloads (the whole run)."""
    key = tuple(setup.run(name).digest for name in runs)
    draw_whole_run(stages_figure.figure(key, look, presenter.chart_width(look), runs), key,
                   STAGES, "Play replays the run: each micro-batch as it reaches each stage.")
