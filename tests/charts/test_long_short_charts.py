"""The Long and short requests figure: its lanes draw each request's head-of-line wait exactly
(the part of its wait that crosses the shading is `head_of_line_waits`), and it compiles."""

import json

import numpy as np
import pytest
import vl_convert

from charts import export
from charts.long_short import class_timeline, class_timeline_frame
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.metrics import head_of_line_waits
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import MIXES, mixed

COST = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "roofline")


def served(threshold: int, seed: int = 0):
    workload = mixed(60, 4.0, MIXES["chat+documents"], seed=seed)
    run = Run(workload=workload, policy=get_policy("vllm-v1"), cost=COST, budget=2048,
              limits=Limits(long_prefill_token_threshold=threshold))
    return workload, run.simulate()


def overlap(start: float, end: float, spans) -> float:
    return float(np.clip(np.minimum(spans.end_s, end) - np.maximum(spans.start_s, start), 0,
                         None).sum())


@pytest.mark.parametrize("threshold,seed", [(0, 0), (256, 0), (0, 3)])
def test_a_wait_crossing_the_shading_is_its_head_of_line_wait(threshold, seed):
    workload, trace = served(threshold, seed)
    frames = class_timeline_frame({"run": trace}, workload.request_class, workload.classes,
                                  band_pixels=np.inf)
    waits = head_of_line_waits(trace, workload.request_class)
    assert np.nanmax(waits) > 0      # the check below sees some wait
    for row in frames.waits.itertuples():
        lane = frames.bands[frames.bands["class"] == row._2]
        assert overlap(row.arrival_s, row.scheduled_s, lane) == pytest.approx(
            waits[row.request], abs=1e-9)


def test_joined_spans_cover_every_iteration_they_join():
    workload, trace = served(0)
    exact, joined = (class_timeline_frame({"run": trace}, workload.request_class,
                                          workload.classes, band_pixels=p).bands
                     for p in (np.inf, 50))
    assert len(joined) < len(exact)
    for row in exact.itertuples():
        lane = joined[joined["class"] == row._2]
        assert overlap(row.start_s, row.end_s, lane) == pytest.approx(row.end_s - row.start_s)


@pytest.mark.parametrize("look", [Look(), Look(presenter=True, dark=True, contrast=True)])
def test_the_figure_compiles_with_one_colour_per_meaning(look):
    workload, a = served(0)
    _, b = served(256)
    figure = class_timeline(class_timeline_frame({"no threshold": a, "threshold 256": b},
                                                 workload.request_class, workload.classes), look)
    spec = json.dumps(figure.spec())
    vl_convert.vegalite_to_vega(spec)
    assert export.png(figure)[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in export.svg(figure)
    assert set(export.csv_tables(figure)) == {"iterations", "waits", "bands"}
    ranges = [scale["range"] for scale in _scales(figure.spec())]
    assert [look.decode, look.muted, look.prefill] in ranges          # the iterations' kinds
    assert [look.prefill, look.muted, look.new_request] in ranges     # the lanes' marks


def _scales(spec):
    if isinstance(spec, dict):
        if "range" in spec and "domain" in spec:
            yield spec
        for value in spec.values():
            yield from _scales(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _scales(value)
