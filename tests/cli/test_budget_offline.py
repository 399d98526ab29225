"""What the recommended budget gives up against an offline job's budget (the largest swept): the
README's sweep example checked by hand, each point's new numbers recomputed from its trace, and
each regime of the sentence checked against the points by the claims test's predicate."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest

from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.policies import POLICIES, Limits
from sim.serving.run import Run
from sim.serving.workloads import burst, poisson
from sim.studies.sweep import offline_tradeoff, run_point, sweep
from tests.support.cli import cli
from tests.ui.claims_traffic import check_offline

README_SWEEP = ("sweep", "--budgets", "256,512,1024,2048,4096", "--gpu", "a100-80gb", "--model",
                "llama-2-7b", "--requests", "500", "--qps", "2", "--lengths", "sharegpt",
                "--tbt-slo", "0.05")


def test_the_readme_sweep_example_as_checked_by_hand(capsys):
    """The README's command: 512 is the pick, 4,096 the offline job's budget; throughput is 769
    tokens/s at 512 and 757 at 4,096 (the table's column), so it does not rise with the budget
    and the pick gives up none: fewer iterations at 4,096 (13,649 against 17,548) keep the GPU
    busy longer (292 s against 287 s)."""
    assert "sweep --budgets 256,512,1024,2048,4096 --gpu a100-80gb --model llama-2-7b \\\n    " \
           "--requests 500 --qps 2 --lengths sharegpt --tbt-slo 0.05" in open("README.md").read()
    code, out, _ = cli(*README_SWEEP, "--wide", capsys=capsys)
    assert code == 0
    rows = {cells[0]: cells for cells in (re.split(r" {2,}", line) for line in out.splitlines()
                                          if re.match(r"[\d,]+ ", line))}
    assert rows["512"][6] == "769" and rows["4,096"][6] == "757"
    assert "recommended budget: 512 is the largest budget" in out
    assert ("would take the largest budget swept, 4,096: 220,757 tokens / 292 s = 757 tokens/s, "
            "against 220,757 tokens / 287 s = 769 tokens/s at the pick, 512") in out
    assert "Throughput does not rise with the budget in this sweep, so the pick gives up none" in out
    assert "4,096's 13,649 iterations keep the GPU busy 292 s, 512's 17,548 287 s" in out
    code, out, _ = cli(*README_SWEEP, "--json", capsys=capsys)
    points = {p["budget"]: p for p in json.loads(out)}
    assert [b for b, p in points.items() if p["offline_budget"]] == [4096]
    assert [b for b, p in points.items() if p["recommended"]] == [512]
    for b, tokens_per_s in ((512, 769), (4096, 757)):
        p = points[b]
        assert p["output_tokens"] == 220_757
        assert round(p["output_tokens"] / p["makespan_s"]) == tokens_per_s
        assert p["throughput_tokens_per_s"] == pytest.approx(p["output_tokens"] / p["makespan_s"])


def _cost(model="llama-2-7b", gpu="a100-80gb"):
    return CostModel(get_gpu(gpu), get_model(model), "roofline")


@pytest.mark.parametrize("model", ["llama-2-7b", "mistral-7b"])   # mistral: a sliding window
def test_each_points_new_numbers_recomputed_from_its_trace(model):
    run = Run(workload=poisson(40, 4, lengths="sharegpt", seed=3), policy=POLICIES["sarathi"],
              cost=_cost(model), budget=256, limits=Limits())
    trace = run.simulate()
    point = run_point(run)
    window = run.cost.model.sliding_window or np.inf
    reread = sum(min(start, window) for start in trace.chunk_start.tolist())
    emitted = sum(len(trace.tokens_of(r)) - bool(trace.prefilled[r])
                  for r in range(len(trace.arrival_s)))
    assert point.reread_tokens == reread > 0
    assert point.output_tokens == point.metrics.output_tokens == emitted
    recounted = replace(point, metrics=replace(point.metrics, output_tokens=emitted + 1))
    assert recounted.output_tokens == emitted + 1      # read from the summary, not kept beside it
    assert point.scheduled_tokens == int(np.sum(trace.prefill_tokens) + np.sum(trace.decode_tokens))
    assert point.busy_s == pytest.approx(float(np.sum(trace.end_s - trace.start_s)))
    assert point.metrics.throughput_tokens_per_s == pytest.approx(emitted / point.metrics.makespan_s)


def _swept(workload, budgets, slo, cost=None):
    run = Run(workload=workload, policy=POLICIES["sarathi"], cost=cost or _cost(), budget=budgets[0],
              limits=Limits())
    return sweep(run, budgets, tbt_slo_s=slo)


# (workload, budgets, p99 TBT SLO, what the sentence must say)
REGIMES = {
    "rises": (burst(4, decodes=16), (8, 16, 32, 64), 0.026,
              ["the pick gives up", "fewer, fuller iterations", "less KV re-read"]),
    "busy": (burst(10), (256, 512, 1024, 2048, 4096), 0.05,
             ["does not rise", "keep the GPU busy"]),
    "idle": (poisson(30, 1, prompt=512, output=64, seed=1), (16, 64, 256), 0.0069,
             ["does not rise", "runs no iteration for"]),
    # the Budget trade-off page's default burst, on an H100: the streams' decodes set the iterations
    "no fewer iterations": (burst(10, 8192, 32, 64, 4000, 256), (576, 16384), 0.025,
                            ["does not rise", "16,384 takes no fewer iterations than 576"]),
    "pick is the largest": (burst(4, decodes=16), (8, 16, 32, 64), 1.0,
                            ["64 is the largest swept, so the pick gives up no throughput"]),
}


@pytest.mark.parametrize("regime", REGIMES)
def test_each_regime_is_said_as_the_points_have_it(regime):
    workload, budgets, slo, said = REGIMES[regime]
    cost = _cost("llama-3.1-8b", "h100-sxm") if regime == "no fewer iterations" else _cost()
    result = _swept(workload, budgets, slo, cost)
    assert result.recommended is not None and result.offline
    for words in said:
        assert words in result.offline, result.offline
    assert check_offline(list(result.points), result.recommended, cost.weight_bytes,
                         result.offline) == []


def test_no_pick_no_offline_words():
    result = _swept(burst(4, decodes=16), (8, 16, 32, 64), 1e-4)
    assert result.recommended is None and result.offline == ""


def test_the_predicate_catches_a_wrong_number_or_regime():
    """The claims test's predicate is not vacuous: a changed throughput, share or regime fails."""
    workload, budgets, slo, _ = REGIMES["rises"]
    result = _swept(workload, budgets, slo)
    points, weights = list(result.points), _cost().weight_bytes
    text = offline_tradeoff(points, result.recommended, weights)
    share = re.search(r"gives up ([\d.]+%)", text).group(1)
    for wrong in (text.replace(share, "1.00%"),
                  text.replace("the pick gives up", "Throughput does not rise; the pick gives up"),
                  re.sub(r"= ([\d,]+) tokens/s", "= 1 tokens/s", text, count=1),
                  text.replace("fewer, fuller", "fewer")):
        assert check_offline(points, result.recommended, weights, wrong), wrong
    workload, budgets, slo, _ = REGIMES["no fewer iterations"]
    flat = _swept(workload, budgets, slo, _cost("llama-3.1-8b", "h100-sxm"))
    same = re.search(r"\(([\d,]+) against ([\d,]+)\)", flat.offline)
    more = int(same.group(1).replace(",", "")) + 1
    wrong = flat.offline.replace(same.group(0), f"({more:,} against {same.group(2)})")
    assert check_offline(list(flat.points), flat.recommended, weights, wrong), wrong
    slower = replace(points[-1], metrics=replace(points[-1].metrics, throughput_tokens_per_s=1.0))
    assert check_offline([*points[:-1], slower], result.recommended, weights, text)
