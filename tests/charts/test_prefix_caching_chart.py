"""The Prefix caching page's figure builders on a small run by hand: three requests share a
2,000-token prefix; each bar splits its prompt into computed and cached tokens, the KV pool's rows
follow the trace's two columns, and the figure names its two tables."""

import numpy as np

from charts import prefix_caching as charts
from charts.theme import Look
from sim.cost.iteration import CostModel
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.policies import Limits, get_policy
from sim.serving.workloads import make_workload

H100 = CostModel(get_gpu("h100-sxm"), get_model("llama-3.1-8b"))
SHARED = np.array([2000, 2000, 2000])


def run(caching="on"):
    w = make_workload([0.0, 1.0, 2.0], [2500, 2500, 2500], [4, 4, 4], prefix_group=[0, 0, 0],
                      prefix_tokens=[2000, 2000, 2000])
    return simulate(w, get_policy("vllm-v1"), H100, budget=8192,
                    limits=Limits(prefix_caching=caching))


def test_each_requests_bar_is_its_computed_and_cached_tokens():
    frame = charts.request_frame(run(), SHARED, 16)
    cached = frame[frame.part == charts.CACHED].set_index("request").tokens
    computed = frame[frame.part == charts.COMPUTED].set_index("request").tokens
    assert cached.tolist() == [0, 2000, 2000]          # 125 blocks of 16
    assert computed.tolist() == [2500, 500, 500]
    assert (frame.prompt_tokens == 2500).all()
    worked = frame.set_index(["request", "part"]).formula
    assert worked[(1, charts.CACHED)] == "hit ≤ ⌊min(shared 2,000, prompt − 1 = 2,499) / 16⌋ × 16 = 2,000; found 2,000"
    assert worked[(1, charts.COMPUTED)] == "computed = prompt − hit = 2,500 − 2,000 = 500"
    assert worked[(0, charts.COMPUTED)] == "computed = prompt − hit = 2,500 − 0 = 2,500"
    off = charts.request_frame(run("off"), SHARED, 16)
    assert off[off.part == charts.CACHED].tokens.tolist() == [0, 0, 0]


def test_the_pools_rows_are_the_traces_kv_in_use_and_cached():
    trace = run()
    frame = charts.kv_frame(trace)
    held = frame[frame.holder == charts.HELD].tokens.to_numpy()
    idle = frame[frame.holder == charts.IDLE].tokens.to_numpy()
    assert np.array_equal(held, trace.kv_used_tokens)
    assert np.array_equal(idle, trace.kv_cached_tokens)
    assert idle[-1] > 0 and held[-1] == 0             # at the end: all cached, nobody reads it


def test_a_long_pool_is_thinned_to_each_stretchs_largest_iteration():
    trace = run()
    total = trace.kv_used_tokens + trace.kv_cached_tokens
    frame = charts.kv_frame(trace, points=2)
    held = frame[frame.holder == charts.HELD]
    idle = frame[frame.holder == charts.IDLE]
    assert len(held) == 2 and trace.iterations > 2
    firsts = np.arange(trace.iterations) * 2 // trace.iterations
    for bucket, kept in enumerate(held.tokens.to_numpy() + idle.tokens.to_numpy()):
        assert kept == total[firsts == bucket].max()


def test_the_figure_draws_both_tables_with_the_cache_in_faint_prefill_orange():
    trace, look = run(), Look()
    figure = charts.prefix_figure(charts.request_frame(trace, SHARED, 16), charts.kv_frame(trace),
                                  trace.kv_capacity_tokens, look, width=400)
    spec = figure.spec()
    assert set(spec["datasets"]) == {"requests", "kv"}
    assert charts.cached_ink(look) == look.prefill + "59"
    assert charts.cached_ink(look) in str(spec) and look.prefill in str(spec)
