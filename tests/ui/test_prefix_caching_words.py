"""The Prefix caching page's words: every sentence true of the two runs it speaks of, in each
regime (nothing to share, no hits, every hit, hits lost to eviction or to early arrivals) and over
random workloads, engines and GPUs (tests/ui/claims_prefix.py recomputes each number from the
traces)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from ui.shell.scenario import Scenario, scenario_from
from ui.under_load import prefix_caching_words as words

from .claims_prefix import check_said, check_verdict, served


def scenario(gpu="h100-sxm", chunked="vllm-v1", budget=2048) -> Scenario:
    return Scenario(prompt=1, decodes=1, context=1, budget=budget, gpu=get_gpu(gpu),
                    model=get_model("llama-3.1-8b"), mode="roofline", unchunked="vllm-v0",
                    chunked=chunked)


def regime_of(run) -> str:
    workload, traces, block = run
    return words.regime(words.outcome(traces["on"], block), words.ideal_hits(workload, block))


# one workload per regime, found by a search over small ones
REGIMES = {
    words.NOTHING: (scenario("a100-40gb", "sglang", 256),
                    dict(requests=8, qps=1, prefix=512, share=0.1, prompt=8192, output=16, seed=3)),
    words.HITS: (scenario(), dict(requests=40, qps=4, prefix=2048, share=1.0, prompt=512,
                                  output=32)),
    words.EARLY: (scenario("l4", "sglang"),
                  dict(requests=16, qps=100, prefix=16, share=0.3, prompt=1, output=1, seed=4)),
    words.EVICTED: (scenario("l4"), dict(requests=30, qps=10, prefix=4096, share=0.1,
                                         prompt=8192, output=16, seed=4)),
    words.NO_HITS: (scenario("l4", budget=16384), dict(requests=16, qps=1000, prefix=64,
                                                       share=0.1, prompt=1024, output=16, seed=5)),
}


@pytest.mark.parametrize("regime", sorted(REGIMES))
def test_each_regime_is_said_with_the_runs_numbers(regime):
    s, workload = REGIMES[regime]
    run = served(s, **workload)
    assert regime_of(run) == regime
    assert check_said(*run) == []


# the page's defaults (Sarathi-Serve at budget 576, 200 requests of 1,024 + prefix tokens) at two
# settings whose old closing sentences gave a wrong cause: a prefix shorter than a block ("nothing
# cached to read" with 228,752 tokens cached) and a 16-token hit ("fewer chunks": 2 either way)
OLD = {(8, 40.0, 0.5): "Here caching saves nothing: there is nothing cached to read when a prompt "
                       "needs it.",
       (20, 20.0, 1.0): "Caching cuts the time to first token: a request that finds the prefix "
                        "prefills only the rest of its prompt, in fewer chunks."}


@pytest.mark.parametrize("setting", sorted(OLD))
def test_the_closing_sentence_gives_the_runs_cause_where_the_old_one_did_not(setting):
    prefix, qps, share = setting
    run = served(scenario_from({}), requests=200, qps=qps, prefix=prefix, share=share,
                 prompt=1024, output=128)
    assert check_said(*run) == []
    assert check_verdict(OLD[setting], *run) != []


def test_the_hit_is_whole_blocks_at_most_prompt_minus_one():
    assert words.hit_tokens(2048, 3072, 16) == 2048
    assert words.hit_tokens(1000, 1000, 16) == 992      # 999 rounded down to 62 blocks
    assert words.hit_tokens(1000, 1000, 1) == 999
    assert words.hit_tokens(15, 100, 16) == 0
    assert words.hit_formula(1000, 1000, 16) == ("hit = ⌊min(shared prefix, prompt − 1) / block⌋ "
                                                 "× block = ⌊min(1,000, 999) / 16⌋ × 16 = 992 "
                                                 "tokens")


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.fixed_dictionaries(dict(
    gpu=st.sampled_from(["h100-sxm", "l4", "a100-40gb"]),
    chunked=st.sampled_from(["vllm-v1", "sglang", "sarathi"]),
    budget=st.sampled_from([64, 512, 2048, 16384]))),
    st.fixed_dictionaries(dict(
        requests=st.integers(2, 30), qps=st.sampled_from([0.5, 5.0, 50.0, 1000.0]),
        prefix=st.sampled_from([0, 8, 16, 100, 1024, 4096]),
        share=st.sampled_from([0.0, 0.2, 0.5, 1.0]),
        prompt=st.sampled_from([1, 15, 64, 1024, 6000]), output=st.sampled_from([1, 16, 200]),
        order=st.sampled_from(["fcfs", "lpm"]), seed=st.integers(0, 50),
        arrivals=st.sampled_from(["poisson", "burst"]))))
def test_the_words_hold_over_random_workloads(engine, workload):
    run = served(scenario(**engine), **workload)
    if run is not None:
        assert check_said(*run) == []
