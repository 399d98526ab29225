"""The knob table (sim/knobs.py) and the ceilings (sim/ceilings.py): the engine refuses exactly
what a knob's range leaves out, the app narrows a range only with a reason and never past the
engine's, and every `Limits` field a user sets is a knob."""

from dataclasses import fields

import pytest

from sim.ceilings import MAX_REQUESTS, MAX_STREAMS, MAX_TOKENS
from sim.errors import InputError
from sim.knobs import KNOBS, LIMIT_KNOBS
from sim.serving import workloads
from sim.serving.policies import CHUNKED, POLICIES, Limits, in_words
from sim.studies.sweep import parse_budgets

# How the engine checks each numeric knob, given one value (the rest at their defaults).
ENGINE = {
    "budget": lambda v: parse_budgets([v]),
    "max_seqs": lambda v: Limits(max_seqs=v),
    "max_concurrent_prefills": lambda v: Limits(max_concurrent_prefills=v),
    "long_prefill_token_threshold": lambda v: Limits(long_prefill_token_threshold=v),
    "decodes": lambda v: workloads.textbook_scenario(decodes=v),
    "context": lambda v: workloads.textbook_scenario(decodes=1, context=v),
    "prompt": lambda v: workloads.textbook_scenario(decodes=0, prompt=v),
    "decode_output": lambda v: workloads.textbook_scenario(decodes=1, decode_output=v),
    "prompt_output": lambda v: workloads.textbook_scenario(decodes=0, prompt_output=v),
    "burst": lambda v: workloads.burst(v),
    "requests": lambda v: workloads.poisson(v, 1.0),
    "prompt_tokens": lambda v: workloads.poisson(1, 1.0, prompt=v),
    "output_tokens": lambda v: workloads.poisson(1, 1.0, output=v),
    "qps": lambda v: workloads.poisson(1, v),
}


@pytest.mark.parametrize("name", sorted(ENGINE))
def test_the_engine_takes_a_knobs_range_and_refuses_past_its_ceiling(name):
    knob = KNOBS[name]
    ENGINE[name](knob.high)
    with pytest.raises(InputError):
        ENGINE[name](knob.high + 1)


def test_the_ceilings_are_the_ranges_of_the_knobs_they_name():
    assert {k.high for k in KNOBS.values() if k.unit == "tokens"} == {MAX_TOKENS}
    assert KNOBS["decodes"].high == KNOBS["burst"].high == MAX_STREAMS
    assert KNOBS["requests"].high == KNOBS["max_seqs"].high == MAX_REQUESTS


@pytest.mark.parametrize("knob", [k for k in KNOBS.values() if k.app], ids=lambda k: k.name)
def test_the_app_differs_only_with_a_reason_and_never_past_the_engine(knob):
    default, low, high = knob.on_app()
    assert len(knob.app.why.split()) >= 5, "say why the app differs"
    assert (default, low, high) != (knob.default, knob.low, knob.high)
    if knob.choices:
        assert default in knob.choices
        return
    assert high <= knob.high
    # a number box cannot be empty: where "none" is the engine's default, 0 stands for it
    assert low >= knob.low or (knob.default is None and low == default == 0)
    assert low <= default <= high


def test_every_limit_a_user_sets_is_a_knob():
    """A new `Limits` field becomes a flag and an app control by its row in the table; the
    iteration cap is the run's bound, set by the command or the page, not a scenario knob."""
    settable = {f.name for f in fields(Limits)} - {"max_iterations"}
    assert {k.name for k in LIMIT_KNOBS} == settable


def test_a_knob_names_only_policies_that_exist_and_partial_prefills_only_chunked_ones():
    for knob in KNOBS.values():
        assert set(knob.policies) <= set(POLICIES), knob.name
    assert KNOBS["max_concurrent_prefills"].policies == CHUNKED
    assert not KNOBS["budget"].applies_to("orca")


def test_policies_in_words_come_from_their_specs():
    words = in_words(CHUNKED)
    for name in CHUNKED:
        assert f"{name}: {POLICIES[name].summary}" in words
    assert POLICIES["vllm-v1"].engine == "vLLM V1"


def test_the_max_seqs_help_quotes_each_engines_default():
    """The words of --max-seqs' default follow the engine profiles (sim/serving/policies.py)."""
    from sim.cost.iteration import CostModel
    from sim.presets.hardware import get_gpu
    from sim.presets.models import get_model
    words = " ".join(KNOBS["max_seqs"].shown_default.split())
    h100, a100 = (CostModel(get_gpu(g), get_model("dense-8b")) for g in ("h100-sxm", "a100-80gb"))
    seqs = {name: p.profile.max_seqs(h100, 8192) for name, p in POLICIES.items()}
    assert f"vLLM V1: {seqs['vllm-v1']:,}, {POLICIES['vllm-v1'].profile.max_seqs(a100, 2048)} on A100s" in words
    # SGLang's is a formula of its KV cache (tests/sim/serving/test_policies.py pins it)
    assert "SGLang max(min(KV tokens / context length × 512, 4,096), 2,048), at most half" in words
    assert f"Sarathi-Serve and vLLM V0 {seqs['sarathi']}" in words and seqs["sarathi"] == seqs["vllm-v0"]
    assert f"Orca {seqs['orca']}" in words
