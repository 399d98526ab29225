"""app_state: control ranges, link corrections, the scenario built from widget values, the cards."""

import math

import pytest

from sim.errors import InputError
from sim.serving.engine import simulate
from sim.serving.policies import Limits, get_policy
from sim.studies.worked_example import DEFAULTS, worked_example
from ui.learn import words
from ui.learn.words import lane_cards
from ui.shell import controls
from ui.shell.controls import CONTROLS, read_link
from ui.shell.scenario import MEMORY_KEYS, fit_in_memory, scenario_from


def test_defaults_are_the_source_articles_worked_example():
    s = scenario_from({})
    assert (s.prompt, s.decodes, s.context, s.budget) == (8192, 64, 4000, 576)
    assert (s.gpu.id, s.model.id, s.mode) == ("illustrative", "dense-8b", "simple")
    assert (s.unchunked, s.chunked) == ("vllm-v0", "sarathi")
    assert s.chunk == 512 and not s.starves


def test_url_keys_are_short_and_stable():
    for key in ("prompt", "decodes", "context", "budget", "gpu", "model", "mode", "unchunked",
                "chunked", "peak", "bw", "mem", "link", "presenter", "tpot", "budget2",
                "tp", "compare", "why"):
        assert key in CONTROLS


def test_valid_link_values_need_no_correction():
    link = read_link({"prompt": "4096", "budget": "1024", "gpu": "h100-sxm", "mode": "roofline",
                      "presenter": "true", "bw": "3.35"})
    assert (link.corrections, link.notes, link.above_max, link.dropped) == ({}, {}, (), ())
    assert link.values == {"prompt": 4096, "budget": 1024, "gpu": "h100-sxm", "mode": "roofline",
                           "presenter": True, "bw": 3.35}


@pytest.mark.parametrize("raw", [{"Budget": "1000"}, {"BUDGET": "1000"}, {"bUdGeT": "1000"}])
def test_a_key_in_another_case_is_the_key_rewritten_as_the_app_spells_it(raw):
    link = read_link(raw)
    assert (link.values, link.corrections, link.notes) == ({"budget": 1000}, {}, {})
    assert (link.renamed, link.dropped) == ({next(iter(raw)): "budget"}, ())


def test_the_key_as_the_app_spells_it_wins_over_its_other_spellings():
    link = read_link({"BUDGET": "1000", "budget": "900", "Partials": "3"})
    assert link.values == {"budget": 900, "prefills": 3} and not link.notes
    assert link.renamed == {"Partials": "prefills"}   # the old key in another case
    assert link.dropped == ("BUDGET",)
    last = read_link({"BUDGET": "1000", "Budget": "2000"})
    assert (last.values, last.renamed, last.dropped) == ({"budget": 2000}, {"Budget": "budget"},
                                                         ("BUDGET",))


@pytest.mark.parametrize("key, nearest", [("policy", "policies"), ("Policy", "policies"),
                                          ("budegt", "budget"), ("gpus", "gpu"),
                                          ("utm_source", None)])
def test_a_key_no_control_reads_is_named_in_a_note_with_the_nearest_one(key, nearest):
    link = read_link({key: "vllm-v1", "prompt": "4096"})
    assert link.values == {"prompt": 4096} and (link.renamed, link.dropped) == ({}, (key,))
    note = link.notes[key]
    assert note.startswith(f"“`{key}`” in the link is not a setting of this lab")
    if nearest:
        assert note.endswith(f"did you mean `{nearest}` ({CONTROLS[nearest].label})?")
    else:
        assert "did you mean" not in note


@pytest.mark.parametrize("raw, value, words", [
    ({"prompt": "99999999"}, 2_000_000, "above the maximum 2,000,000"),
    ({"prompt": "0"}, 1, "below the minimum 1"),
    ({"budget": "abc"}, 576, "not a number"),
    ({"budget": "nan"}, 576, "not a number"),
    ({"decodes": "12.4"}, 12, "not a whole number"),
    ({"gpu": "h100"}, "illustrative", "not one of"),
    ({"presenter": "maybe"}, False, "not one of true/1/yes/on or false/0/no/off"),
    ({"bw": "-1"}, 0.01, "below the minimum 0.01"),
])
def test_bad_link_values_get_the_nearest_valid_value_and_a_note(raw, value, words):
    link = read_link(raw)
    (key,) = raw
    assert link.corrections == {key: value} and link.values == {key: value}
    assert list(link.notes) == [key] and words in link.notes[key] and f"`{key}`=“" in link.notes[key]
    assert link.above_max == (("prompt",) if raw == {"prompt": "99999999"} else ())


@pytest.mark.parametrize("raw, value", [("1", True), ("0", False), ("yes", True), ("No", False),
                                        ("on", True), ("OFF", False), ("TRUE", True)])
def test_every_spelling_of_a_boolean_is_read_and_written_back_plainly(raw, value):
    """A teacher types `?presenter=1`: it is read, without a note, and the link says `true`."""
    link = read_link({"presenter": raw, "compare": raw})
    assert link.values == {"presenter": value, "compare": value} and not link.notes
    assert link.corrections == {"presenter": value, "compare": value}   # respelled in the link
    assert CONTROLS["presenter"].url_text(value) == str(value).lower()


@pytest.mark.parametrize("raw, text", [("4096.0", "4096"), ("1e3", "1000"), ("+64", "64")])
def test_numbers_spelled_another_way_are_respelled_without_a_note(raw, text):
    link = read_link({"decodes": raw})
    assert not link.notes and CONTROLS["decodes"].url_text(link.corrections["decodes"]) == text


def test_the_plain_spelling_of_every_default_reads_back_as_itself():
    for control in CONTROLS.values():
        link = read_link({control.key: control.url_text(control.default)})
        assert link.values[control.key] == (list(control.default) if control.kind == "multi"
                                            else control.default), control.key
        assert not link.corrections, control.key


def test_a_clamp_past_memory_is_lowered_to_the_most_that_fits():
    """`decodes=99999` is clamped to 4,096, whose KV (4,096 x 4,256 tokens) does not fit the
    illustrative GPU: it goes down to the largest count that does, and one more would not."""
    lowered = fit_in_memory({"decodes": 4096}, ["decodes"])
    decodes = lowered["decodes"]
    assert 1 < decodes < 4096
    assert scenario_from({"decodes": decodes}).fits_in_memory()
    assert not scenario_from({"decodes": decodes + 1}).fits_in_memory()
    prompt = fit_in_memory({"prompt": 2_000_000}, ["prompt"])["prompt"]
    assert scenario_from({"prompt": prompt}).fits_in_memory()
    assert not scenario_from({"prompt": prompt + 1}).fits_in_memory()


def test_every_clamped_count_together_still_fits():
    values = {"prompt": 2_000_000, "decodes": 4096, "context": 1_000_000}
    lowered = fit_in_memory(values, MEMORY_KEYS)
    assert set(lowered) == set(MEMORY_KEYS)
    assert scenario_from(lowered).fits_in_memory()


def test_a_clamp_that_fits_or_cannot_fit_is_kept():
    big_gpu = {"gpu": "mi300x", "model": "qwen2.5-7b", "decodes": 4096, "context": 1}
    assert scenario_from(big_gpu).fits_in_memory()
    assert fit_in_memory(big_gpu, ["decodes"]) == {}                   # it fits: kept
    weights_too_big = {"gpu": "l4", "model": "llama-3.1-70b", "decodes": 4096}
    assert not scenario_from({**weights_too_big, "decodes": 0}).fits_in_memory()
    assert fit_in_memory(weights_too_big, ["decodes"]) == {}           # nothing fits: the page says why
    assert fit_in_memory({"decodes": 4096}, []) == {}                  # only clamped keys move


def test_every_default_is_inside_its_own_range():
    for control in CONTROLS.values():
        if control.kind in ("int", "float"):
            assert control.low <= control.default <= control.high, control.key
        elif control.kind == "choice":
            assert control.default in control.options, control.key


def test_custom_gpu_and_model_come_from_their_fields():
    s = scenario_from({"gpu": "custom", "peak": 800.0, "bw": 4.0, "mem": 96.0,
                       "model": "custom", "layers": 16, "hidden": 2048, "heads": 16,
                       "kvheads": 4, "headdim": 128, "ffn": 8192, "vocab": 32000})
    assert (s.gpu.peak_flops, s.gpu.bandwidth, s.gpu.memory_bytes) == (800e12, 4e12, 96e9)
    assert (s.model.layers, s.model.kv_heads, s.model.intermediate) == (16, 4, 8192)


def test_impossible_custom_model_raises_input_error():
    with pytest.raises(InputError, match="multiple of KV heads"):
        scenario_from({"model": "custom", "heads": 30, "kvheads": 8})


def test_worked_example_inputs_at_defaults_are_the_source_articles():
    inputs = scenario_from({}).worked_example_inputs(2048)
    ex = worked_example(**inputs)
    assert ex.at_seed
    assert {k: inputs[k] for k in inputs} == {k: DEFAULTS[k] for k in inputs}


@pytest.fixture(scope="module")
def seed_traces():
    s = scenario_from({})
    return {p: s.run(p, 50_000) for p in ("vllm-v0", "sarathi")}   # the lanes, as the app runs them


def test_lane_cards_show_the_source_articles_numbers(seed_traces):
    unchunked = {c.label: c for c in lane_cards(seed_traces["vllm-v0"], "simple")}
    chunked = {c.label: c for c in lane_cards(seed_traces["sarathi"], "simple")}
    assert unchunked["New request TTFT"].value == "327.7 ms"
    assert chunked["New request TTFT"].value == "368.6 ms"
    assert chunked["New request TTFT"].seconds == pytest.approx(16 * 0.02304)
    assert unchunked["Largest gap"].value == "333 ms"
    assert chunked["Largest gap"].value == "23.04 ms"
    assert "16 iterations that carried its prompt" in chunked["New request TTFT"].help
    assert "64 running streams" in chunked["Largest gap"].help
    assert (unchunked["Streams frozen"].value, chunked["Streams frozen"].value) == ("64 of 64",
                                                                                    "0 of 64")
    assert unchunked["Frozen per stream"].seconds == pytest.approx(0.333013, rel=1e-5)
    assert chunked["Frozen per stream"].value == "0 ms"
    assert (unchunked["Steady gap (p99)"].value, chunked["Steady gap (p99)"].value) == (
        "5.333 ms", "23.04 ms")


def test_lane_cards_without_decoders_say_so():
    s = scenario_from({"decodes": 0})
    trace = simulate(s.workload(), get_policy("sarathi"), s.cost_model(), budget=s.budget,
                     limits=Limits(max_seqs=s.max_seqs))
    cards = {c.label: c for c in lane_cards(trace, "simple")}
    assert math.isnan(cards["Largest gap"].seconds)
    assert cards["Largest gap"].value == "—"
    assert cards["Streams frozen"].value == "0 of 0"


def test_starving_budget_is_flagged():
    s = scenario_from({"budget": 64})
    assert s.starves and s.chunk == 0
    assert controls.CONTROLS["budget"].parse("64") == (64, None)


def test_every_cost_mode_has_its_rule_in_words():
    from sim.cost.iteration import MODES
    from ui.shell.scenario import COST_RULES
    assert set(COST_RULES) == set(MODES) == set(CONTROLS["mode"].options)


def test_tp_reaches_the_cost_model_and_is_checked_against_the_model():
    s = scenario_from({"gpu": "h100-sxm", "model": "llama-3.1-8b", "tp": 4})
    assert s.tp == 4 and s.cost_model().tp == 4
    with pytest.raises(InputError, match="must divide Llama-3.1-8B's 32 query heads"):
        scenario_from({"gpu": "h100-sxm", "model": "llama-3.1-8b", "tp": 3})
    with pytest.raises(InputError, match="no GPU-to-GPU link preset"):
        scenario_from({"tp": 2})                                  # the illustrative GPU
    custom = scenario_from({"gpu": "custom", "link": 450.0, "tp": 2})
    assert custom.gpu.interconnect_bandwidth == 450e9
    assert "two all-reduces per layer over the 4 GPUs" in s.cost_rule
    assert "all-reduce" not in scenario_from({}).cost_rule


def test_calibrated_on_the_illustrative_gpu_is_refused_when_the_scenario_is_built():
    with pytest.raises(InputError, match="illustrative GPU"):
        scenario_from({"mode": "calibrated"})


def test_compare_mode_is_the_other_side_of_the_roofline():
    assert scenario_from({}).compare_mode == "calibrated"
    calibrated = scenario_from({"gpu": "a100-80gb", "mode": "calibrated"})
    assert calibrated.compare_mode == "roofline"
    assert calibrated.in_mode("roofline").mode == "roofline"
    assert calibrated.in_mode("roofline").gpu == calibrated.gpu


def test_card_delta_says_the_difference_and_the_ratio():
    card = words.Card("TTFT", "200 ms", "", 0.2)
    ref = words.Card("TTFT", "160 ms", "", 0.16)
    assert words.card_delta(card, ref) == "+40 ms (+25%)"
    assert words.card_delta(ref, card) == "-40 ms (-20%)"
    assert words.card_delta(ref, card, ratio=False) == "-40 ms"
    assert words.card_delta(card, card) is None
    assert words.card_delta(card, words.Card("TTFT", "—", "", math.nan)) is None
    runs = words.Card("Iterations", "12", "", 12.0, "iterations")
    fewer = words.Card("Iterations", "10", "", 10.0, "iterations")
    assert words.card_delta(runs, fewer) == "+2 iterations (+20%)"
