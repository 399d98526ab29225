"""The Pipeline page's stage-by-time figure: its bars hold every micro-batch's busy time on
every stage (merged ones too), its shaded gaps are the stage's idle time, and its colours are
the lab's meanings."""

from dataclasses import replace

import numpy as np
import pytest

from charts.figure import NOT_YET
from charts.pipeline import BUBBLE, idle_intervals, stage_chart, stage_frames
from charts.theme import Look
from charts.traffic import KINDS
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.pipeline import make_pipeline
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import TEXTBOOK, textbook_scenario


@pytest.fixture(scope="module")
def schedules():
    gpu, model = get_gpu("h100-sxm"), get_model("llama-3.1-8b")
    workload = textbook_scenario(16, 1000, 4096, 32, 4)
    run = Run(workload=workload, policy=get_policy("vllm-v0"), cost=CostModel(gpu, model),
              budget=8192, limits=Limits(max_seqs=17),
              pipeline=make_pipeline(model, gpu, 2))
    chunked = replace(run, policy=get_policy("sarathi"), budget=256)
    return {"unchunked": run.staged().schedule, "fixed chunks": chunked.staged().schedule}


def test_bars_hold_every_micro_batch_and_gaps_the_idle_time(schedules):
    frames = stage_frames(schedules, {name: ("idle", "fraction") for name in schedules})
    assert frames.rows == ("unchunked · stage 1", "unchunked · stage 2", "fixed chunks · stage 1",
                           "fixed chunks · stage 2")
    for name, schedule in schedules.items():
        bars = frames.bars[frames.bars.schedule == name]
        busy = bars.groupby("stage").busy_ms.sum().to_numpy() / 1e3
        assert np.allclose(busy, schedule.busy_s)
        assert bars.groupby("stage").micro_batches.sum().tolist() == \
            [schedule.micro_batches] * schedule.stages
        idle = sum(b - a for s in range(schedule.stages) for a, b in idle_intervals(schedule, s))
        assert idle == pytest.approx(schedule.bubble_s)
        drawn = frames.bubbles[frames.bubbles.schedule == name]
        assert drawn.idle_ms.sum() / 1e3 <= idle + 1e-12
    unchunked = frames.bars[frames.bars.schedule == "unchunked"]
    assert unchunked.kind.iloc[0] == KINDS[2]                 # the whole prompt, alone


def drawn_idle_s(frames, row: str) -> float:
    """The idle time a row shows: its shaded gaps, and the share of each bar it draws
    transparent (1 - its opacity, the busy share, over its span)."""
    bars, gaps = frames.bars[frames.bars.row == row], frames.bubbles[frames.bubbles.row == row]
    return float(((bars.end_s - bars.start_s) * (1 - bars.busy_share)).sum() +
                 gaps.idle_ms.sum() / 1e3)


def test_at_scale_each_row_draws_the_idle_share_its_stage_idles():
    """Llama-3.1-70B over four stages of TP4 H100s, calibrated: the later stages idle about half
    their working time in gaps of a few ms, far under a pixel; each row still draws that share
    (merged bars as opaque as they are busy), within a few percent of the schedule's."""
    gpu, model = get_gpu("h100-sxm"), get_model("llama-3.1-70b")
    workload = textbook_scenario()
    run = Run(workload=workload, policy=get_policy("sarathi"),
              cost=CostModel(gpu, model, "calibrated", tp=4), budget=TEXTBOOK.budget,
              limits=Limits(max_seqs=len(workload.arrival_s)),
              pipeline=make_pipeline(model, gpu, 4))
    schedule = run.staged().schedule
    frames = stage_frames({"fixed chunks": schedule}, {"fixed chunks": ("idle", "fraction")})
    assert frames.bars.micro_batches.max() > 1                  # micro-batches merged
    for stage in range(schedule.stages):
        idle_s = schedule.working_s - float(schedule.busy_s[stage])
        assert idle_s == pytest.approx(sum(b - a for a, b in idle_intervals(schedule, stage)))
        drawn = drawn_idle_s(frames, f"fixed chunks · stage {stage + 1}")
        assert abs(drawn - idle_s) / schedule.working_s < 0.03, (stage, drawn, idle_s)
    assert schedule.working_s - schedule.busy_s.min() > 0.3 * schedule.working_s


def test_a_merged_bar_is_as_opaque_as_it_is_busy(schedules):
    look = Look()
    spec = stage_chart(stage_frames(schedules, {n: ("a", "b") for n in schedules}), look).spec()
    bars = next(layer for layer in spec["layer"] if layer["data"] == {"name": "bars"})
    opacity = bars["encoding"]["opacity"]
    assert opacity["condition"]["field"] == "busy_share" and opacity["value"] == NOT_YET


def test_its_colours_are_the_labs_meanings(schedules):
    look = Look()
    spec = stage_chart(stage_frames(schedules, {n: ("a", "b") for n in schedules}), look).spec()
    scale = next(layer["encoding"]["color"]["scale"] for layer in spec["layer"])
    colours = dict(zip(scale["domain"], scale["range"]))
    assert colours[KINDS[0]] == look.decode and colours[KINDS[2]] == look.prefill
    assert colours[KINDS[1]] == look.muted and colours[BUBBLE] == look.grid


def test_the_clock_line_is_hidden_where_the_figure_opens_and_downloads(schedules):
    """The figure opens (and exports) at the run's end: its teal clock line is transparent
    there, drawn only while the player's clock is before it (and kept as a row: an empty layer
    makes Vega warn of an infinite extent)."""
    look = Look()
    figure = stage_chart(stage_frames(schedules, {n: ("a", "b") for n in schedules}), look)
    end = figure.params["t"]
    rule = next(layer for layer in figure.spec()["layer"]
                if layer["mark"].get("type", layer["mark"]) == "rule")
    assert rule["encoding"]["opacity"] == {"condition": {"test": f"t < {end!r}", "value": 1.0},
                                           "value": 0.0}
    assert not any("filter" in step for step in rule["transform"])
    assert rule["mark"]["color"] == look.new_request
