"""The Memory page's KV-pressure words: each engine's verdict against its own KV capacity (its
profile's reserve), and the claims check (claims_memory) that catches a flat reserve."""

from __future__ import annotations

import pytest

from sim.serving.engine import RESERVE_FRACTION
from sim.studies.memory import kv_pressure
from sim.units import fmt_bytes
from ui.shell.scenario import scenario_from
from ui.under_load import words as traffic_words

from .claims_memory import check_memory

SCENARIOS = [dict(), dict(mode="roofline"), dict(gpu="l4", decodes=4), dict(gpu="l4", budget=8192,
             decodes=4, model="llama-3.1-8b"), dict(gpu="h100-sxm", model="llama-3.1-70b", tp=4),
             dict(decodes=0), dict(gpu="b200")]


@pytest.mark.parametrize("values", SCENARIOS, ids=lambda v: "&".join(f"{k}={x}" for k, x in
                                                                    v.items()) or "defaults")
@pytest.mark.parametrize("together", [0, 1, 20])
def test_the_memory_words_hold(values, together):
    assert check_memory(scenario_from(values), together) == []


def test_defaults_say_the_prompts_fit_under_vllm_v1_and_not_under_the_others():
    """55 GB of KV: 97.5% of vLLM V1's 56.4 GB (8% and its profiled activations and CUDA graphs
    kept back), more than Sarathi-Serve's 52 GB (15%) and SGLang's 53.3 GB: not "they fit, with
    971 MB to spare" of a flat 10% reserve."""
    s = scenario_from({})
    pressure = kv_pressure(s.cost_model(), 20, s.prompt, s.decodes, s.context, s.budget)
    text = traffic_words.kv_pressure_story(pressure, 20, s.prompt, s.decodes, s.context)
    assert "- vLLM V1 keeps back 0.09472 of memory: 97.5% of the KV capacity (56.4 GB = 80 GB × " \
           "(1 − 0.09472) − 16 GB), they fit, with 1.39 GB to spare." in text
    assert "- Sarathi-Serve, vLLM V0 and Orca keep back 0.15 of memory: 106% of the KV capacity " \
           "(52 GB = 80 GB × (1 − 0.15) − 16 GB), more than there is" in text
    assert "971 MB" not in text and "56 GB" not in text


def test_the_check_catches_a_flat_reserve(monkeypatch):
    """Words that size every engine's capacity with one flat 10% reserve (56 GB on the textbook
    GPU, "971 MB to spare") fail the check, as the page's words did before each engine had its
    own."""
    s = scenario_from({})
    weights = s.cost_model().weight_bytes
    flat = s.gpu.memory_bytes * (1 - RESERVE_FRACTION) - weights
    true_story = traffic_words.kv_pressure_story

    def flat_story(pressure, *args):
        text = true_story(pressure, *args)
        for share in pressure.shares:
            text = text.replace(share.capacity.display, fmt_bytes(flat))
            text = text.replace(f"back {share.reserve:.4g} of", f"back {RESERVE_FRACTION:g} of")
        return text
    monkeypatch.setattr(traffic_words, "kv_pressure_story", flat_story)
    problems = check_memory(s, 20)
    assert any("keep back 0.1 of memory" in p for p in problems), problems
    assert any(p.startswith("97.5% of 56 GB under vLLM V1, not 97.5") for p in problems), problems


def test_the_check_catches_one_capacity_for_every_engine(monkeypatch):
    """The paragraph as it was: one "KV capacity", no engine named: every engine's capacity is
    missing from the words."""
    s = scenario_from({})
    monkeypatch.setattr(traffic_words, "kv_pressure_story", lambda *a: (
        "Article.\n\nHere, on the sidebar's model and GPU: 20 simultaneous 8,192-token prompts "
        "need 21.5 GB; 64 streams at 4,000 tokens of context each need 33.6 GB; together 55 GB, "
        "98.3% of the KV capacity (56 GB): they fit, with 971 MB to spare."))
    problems = check_memory(s, 20)
    assert any("vLLM V1's KV capacity is named 0 times" in p for p in problems), problems
