"""The Disaggregation page's figures (charts/disaggregation.py), from a small run: each hand-off
drawn from its prefill lane to its decode lane over its own times, the lanes in order with the
colocated ones apart, the player's clock at the run's end, the transfer written out by hand, and
goodput's points per GPU."""

from dataclasses import replace

import numpy as np
import pytest

from charts import disaggregation as charts
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.links import FREE_LINK, get_link
from sim.presets.models import get_model
from sim.serving.disaggregated import Disaggregation, round_robin_shares
from sim.serving.policies import Limits, get_policy
from sim.serving.run import Run
from sim.serving.workloads import poisson
from sim.studies.capacity import CapacityPoint, CapacityResult, GoodputComparison, GoodputResult, GoodputSlo


@pytest.fixture(scope="module")
def served():
    cost = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"), "roofline")
    run = Run(workload=poisson(24, 3.0, prompt=2048, output=16, seed=3), policy=get_policy("sarathi"),
              cost=cost, budget=512, limits=Limits(max_seqs=64),
              disaggregation=Disaggregation(2, 1, link="ib-hdr"))
    trace = run.simulate()
    colocated = [replace(run, workload=w, disaggregation=None).simulate()
                 for w in round_robin_shares(run.workload, 3)]
    return trace, colocated


def test_each_hand_off_runs_from_its_prefill_lane_to_its_decode_lane(served):
    trace, colocated = served
    frames = charts.lane_frames(trace, colocated)
    assert frames.lanes == ("prefill 1", "prefill 2", "decode 1", "colocated 1", "colocated 2",
                            "colocated 3")
    base = frames.bars.groupby("lane").y.first()
    assert list(base[list(frames.lanes)]) == [0, -1, -2, -4, -5, -6]   # a lane's gap between setups
    h = frames.handoffs
    assert len(h) == 24 and list(h.request) == list(range(24))
    assert (h.from_lane == [f"prefill {i % 2 + 1}" for i in range(24)]).all()   # round-robin
    assert (h.from_y == h.from_lane.map(base)).all()
    assert (h.to_y == h.to_lane.map(base) + charts.LANE_FILL).all()
    assert np.allclose(h.prefill_end_s, trace.prefill_end_s) and np.allclose(h.send_end_s,
                                                                             trace.send_end_s)
    assert np.allclose(h.transfer_ms, (trace.send_end_s - trace.send_start_s) * 1e3)
    # bars rise from their lane's base, the longest iteration to LANE_FILL of the lane
    assert np.isclose((frames.bars.top - frames.bars.y).max(), charts.LANE_FILL)
    assert (frames.bars.loc[frames.bars.lane.str.startswith("prefill"), "kind"]
            .isin([charts.PREFILL_GPU])).all()


def test_the_players_clock_opens_at_the_runs_end(served):
    trace, colocated = served
    frames = charts.lane_frames(trace, colocated)
    figure = charts.lanes_chart(frames, Look())
    end = max(float(trace.send_end_s.max()), max(float(t.end_s[-1]) for t in colocated),
              float(trace.end_s[-1]))
    assert figure.params == {charts.CLOCK: pytest.approx(end)}
    assert {"name": charts.CLOCK, "value": pytest.approx(end)} in figure.spec()["params"]


def test_a_transfer_is_written_out_by_hand():
    nbytes = 8192 * 131_072
    assert charts.transfer_sum(nbytes, get_link("nvlink4")) == "1.07 GB / 450 GB/s + 3 µs = 2.389 ms"
    assert charts.transfer_sum(nbytes, get_link("100gbe")) == "1.07 GB / 12.5 GB/s + 10 µs = 85.91 ms"
    assert charts.transfer_sum(nbytes, FREE_LINK).startswith("none")


def test_goodputs_points_are_per_setup_and_per_gpu():
    def found(qps, gpus, points):
        pts = tuple(CapacityPoint(q, 0.01, 0.1, a >= 0.9, a) for q, a in points)
        return GoodputResult(CapacityResult("x", 512, qps, None, 10.0, pts, "r"), gpus)
    comparison = GoodputComparison(found(2.0, 2, [(2.0, 0.95), (4.0, 0.5)]),
                                   found(6.0, 2, [(6.0, 0.92)]), 1 / 3, GoodputSlo(1, 0.025))
    points, marks = charts.goodput_frame(comparison, {"disaggregated": "split",
                                                      "colocated": "together"})
    assert list(points.setup) == ["split", "split", "together"]
    assert list(points.qps_per_gpu) == [1.0, 2.0, 3.0]
    assert list(points.meets) == ["yes", "no", "yes"]
    assert list(marks.per_gpu) == [1.0, 3.0]
    spec = charts.goodput_chart(points, marks, 0.9, Look()).spec()
    assert spec["datasets"]["points"][1]["attainment"] == 0.5
