"""The app through Streamlit's AppTest: every page at the defaults, at extreme settings and from a
link; no exceptions, and the right numbers on screen."""

import re
from pathlib import Path

import pandas as pd
import pytest

from sim.cost.calibration import A100, factor_rules
from sim.studies.reproduce import load_shipped
from tests.support.apptest import (
    ALL_PAGES,
    APP,
    FIDELITY,
    PAGES,
    assert_clean,
    charts,
    metrics,
    open_app,
    page_links,
    seconds,
    shown,
    tables,
)
from ui.shell import scenario
from ui.shell.literal import literal


# --- every page at the defaults ------------------------------------------------------------
@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_page_runs_clean_at_the_defaults(page):
    at = open_app(page)
    assert_clean(at)
    assert not at.error


def test_home_shows_the_source_articles_headline_numbers():
    at = open_app()
    assert metrics(at) == [("Largest gap (unchunked)", "333 ms"),
                           ("Largest gap (chunked)", "23.04 ms"),
                           ("TTFT (unchunked)", "327.7 ms"),
                           ("TTFT (chunked)", "368.6 ms")]
    assert "576 − 64 = **512 prompt tokens**" in shown(at)
    assert len(at.get("iframe")) == 1          # the player


@pytest.mark.parametrize("query, says, never", [
    (dict(chunked="sglang"), ["run alone while the streams wait",
                              "longest wait rises from 333 ms to 333.2 ms"],
     ["512 prompt tokens", "It buys:"]),
    (dict(unchunked="orca"), ["(8,192 prompt tokens and 64 stream tokens)",
                              "waits for all of it: their longest wait is **330.2 ms**"],
     ["no token in it"]),
    (dict(budget=32), ["take the whole budget of 32 tokens", "256 iterations"],
     ["nothing is split"]),
    (dict(decodes=0), ["No streams are running"], ["**—**", "0 streams"]),
])
def test_home_tells_each_policys_story_from_its_run(query, says, never):
    """The Home text follows the chosen policies: SGLang runs chunks alone (the gap rises, so no
    gain is claimed), Orca fuses the stream tokens into the prompt's pass, a starved budget, no
    streams at all."""
    text = shown(open_app(**query))
    for phrase in says:
        assert phrase in text
    for phrase in never:
        assert phrase not in text


def test_side_by_side_cards_at_the_defaults():
    at = open_app("pages/learn/side_by_side.py")
    assert metrics(at) == [
        ("Largest gap", "333 ms"), ("Streams frozen", "64 of 64"), ("Frozen per stream", "333 ms"),
        ("New request TTFT", "327.7 ms"), ("Steady gap (p99)", "5.333 ms"),
        ("Largest gap", "23.04 ms"), ("Streams frozen", "0 of 64"), ("Frozen per stream", "0 ms"),
        ("New request TTFT", "368.6 ms"), ("Steady gap (p99)", "23.04 ms")]
    assert not at.warning                       # no starvation, no link notes
    deltas = [m.delta for m in at.metric[5:]]
    assert deltas == ["-310 ms", "-64 streams", "-333 ms", "+40.96 ms", "+17.71 ms"]


def test_every_number_chunking_makes_worse_has_its_reason_beside_it():
    """A red arrow never stands alone: the TTFT and the steady gap rise, each with why."""
    at = open_app("pages/learn/side_by_side.py")
    captions = [c.value for c in at.caption]
    assert ("The price of chunking: its first token comes later, because its 16 iterations take "
            "368.6 ms together, against 327.7 ms unchunked (all 16 also carry the stream tokens)."
            in captions)
    assert any("take up to 23.04 ms instead of a 5.333 ms decode step" in c
               for c in captions)
    at = open_app("pages/learn/side_by_side.py", chunked="sglang")   # chunks alone: gaps rise
    rising = [m for m in at.metric[5:] if m.delta and m.delta.startswith("+")]
    reasons = [c.value for c in at.caption if c.value.startswith(("The price", "Also a price",
                                                                 "Worse here"))]
    assert rising and len(reasons) == len(rising)
    # the cause the run shows: its chunks back to back without the streams' tokens
    assert any("runs 15 of the prompt's iterations back to back without the streams' tokens"
               in reason for reason in reasons)


def worked_results(at) -> dict[str, str]:
    return {step: row["result"] for table in tables(at) for step, row in table.iterrows()}


def test_worked_example_at_the_defaults_shows_the_source_and_its_slips():
    at = open_app("pages/learn/worked_example.py")
    at.toggle(key="worked_all").set_value(True).run()
    results = worked_results(at)
    assert results["Whole prompt in one iteration"] == "327.7 ms"
    assert results["budget 576: TTFT"] == "368.6 ms"
    assert results["budget 576: TTFT increase"] == "12.5%"
    assert results["budget 2,048: one iteration"] == "81.92 ms"
    text = shown(at)
    assert "Where the source article rounds or slips" in text
    assert "2,112" in text and "2.68 ms" in text and "12.5%" in text
    assert "the source article rounds it to 2.6 ms" in text


def test_worked_example_reveals_the_core_chain_one_step_at_a_time():
    at = open_app("pages/learn/worked_example.py")
    story = [h.value for h in at.subheader if h.value[0].isdigit()]
    assert story == ["1. The weights, read once per iteration"]
    assert "Step 1 of 7." in shown(at) and at.button(key="worked_back").disabled
    at.button(key="worked_next").click().run()
    at.button(key="worked_next").click().run()
    story = [h.value for h in at.subheader if h.value[0].isdigit()]
    assert story[-1] == "3. The whole prompt in one pass is compute-bound" and len(story) == 3
    assert "327.7 ms" in at.markdown[len(at.markdown) - 1].value or "327.7 ms" in shown(at)
    at.button(key="worked_back").click().run()
    assert len([h for h in at.subheader if h.value[0].isdigit()]) == 2
    at.toggle(key="worked_all").set_value(True).run()
    titles = [h.value for h in at.subheader if h.value[0].isdigit()]
    assert [t.split(".")[0] for t in titles] == [str(i) for i in range(1, 8)]
    assert len(charts(at)) == 8                  # a picture per step, and the last chunk's


def test_worked_example_shows_every_step_once_the_core_chain_first():
    from sim.studies.worked_example import last_chunk, worked_example
    at = open_app("pages/learn/worked_example.py")
    at.toggle(key="worked_all").set_value(True).run()
    shown_steps = [step for table in tables(at) for step in table.index]
    s = scenario.scenario_from({})
    last = last_chunk(s.cost_model(), s.decodes, s.context, s.prompt, s.budget)
    assert sorted(shown_steps) == sorted(x.title for x in [*worked_example().steps, *last.steps])
    assert shown_steps[:2] == ["Weight bytes", "FLOPs per token"]
    sections = [h.value for h in at.subheader if not h.value[0].isdigit()]
    assert sections[:4] == ["A second budget", "The KV cache, and what later chunks re-read",
                            "A 128,000-token prompt", "A burst of 10 prompts"]


def test_worked_example_with_a_starving_budget_says_so():
    at = open_app("pages/learn/worked_example.py", budget=32)
    at.toggle(key="worked_all").set_value(True).run()
    assert_clean(at)
    titles = [h.value for h in at.subheader if h.value[0].isdigit()]
    assert titles[-1] == "4. No room for a chunk" and "Budget 32 ≤ 64 streams" in shown(at)


def test_roofline_at_the_defaults_finds_the_budget_and_the_engines_defaults():
    at = open_app("pages/learn/roofline.py")
    text = shown(at)
    assert "**625 tokens**" in text                     # 625 x 16 GFLOP / 400 TFLOP/s = 25 ms
    assert "**8,192**" in text                          # vLLM serve and SGLang on an 80 GB GPU
    assert "133.3 FLOP/B" in text
    table = tables(at)[0]
    assert list(table["bound"]) == ["memory", "compute", "compute", "compute"]
    assert "time = max" in table.columns                # no all-reduce, no overhead: nothing added
    assert not {"all-reduce", "overhead"} & set(table.columns)
    # simple mode, no comparison: no link to the waterfall, only the path's next page
    assert [link for link in page_links(at) if not link.startswith("Next:")] == []


def test_changing_a_control_updates_the_numbers():
    at = open_app("pages/learn/side_by_side.py")
    at.number_input(key="budget").set_value(2048).run()
    assert_clean(at)
    assert ("Largest gap", "81.92 ms") in metrics(at)   # the source's 2,048 budget, exact


# --- extreme settings ----------------------------------------------------------------------
def test_prompt_that_does_not_fit_in_kv_is_a_message_not_a_traceback():
    at = open_app("pages/learn/side_by_side.py", prompt=1_000_000, decodes=1024)
    assert_clean(at)
    assert at.error and "KV" in at.error[0].value and "fit" in at.error[0].value


@pytest.mark.parametrize("page", PAGES)
def test_extreme_prompt_and_decoders_on_a_gpu_where_they_fit(page):
    at = open_app(page, gpu="mi300x", model="qwen2.5-7b", prompt=1_000_000, decodes=1024,
                  context=100)
    assert_clean(at)
    assert not at.error
    if page.endswith("side_by_side.py"):
        text = shown(at)
        assert "The new request starves" in text      # budget 576 <= 1,024 decodes
        assert "starvation:" in text                  # the engine's note
        assert "iterations drawn as" in text          # the thinned timeline says so


def test_impossible_custom_model_is_a_message():
    at = open_app(None, model="custom", heads=30, kvheads=8)
    assert_clean(at)
    assert "multiple of KV heads" in at.error[0].value


# --- from a link ---------------------------------------------------------------------------
def test_link_restores_the_controls_on_every_page():
    query = dict(prompt=4096, budget=1024, decodes=32, gpu="h100-sxm", mode="roofline",
                 chunked="vllm-v1", unchunked="orca", presenter="true")
    for page in PAGES:
        at = open_app(page, **query)
        assert_clean(at)
        assert at.number_input(key="prompt").value == 4096
        assert at.number_input(key="budget").value == 1024
        assert at.number_input(key="decodes").value == 32
        assert at.selectbox(key="gpu").value == "h100-sxm"
        assert at.selectbox(key="mode").value == "roofline"
        assert at.selectbox(key="chunked").value == "vllm-v1"
        assert at.selectbox(key="unchunked").value == "orca"
        assert at.toggle(key="presenter").value is True


def test_page_controls_come_from_the_link_too():
    at = open_app("pages/learn/roofline.py", tpot=50)
    assert at.number_input(key="tpot").value == 50.0
    assert "**1,250 tokens**" in shown(at)              # 1,250 x 16 GFLOP / 400 TFLOP/s = 50 ms
    at = open_app("pages/learn/worked_example.py", budget2=1088)
    assert at.number_input(key="budget2").value == 1088


def test_custom_gpu_from_a_link():
    at = open_app("pages/learn/side_by_side.py", gpu="custom", peak=800, bw=3, mem=80)
    assert_clean(at)
    assert at.number_input(key="peak").value == 800.0
    assert ("New request TTFT", "163.8 ms") in metrics(at)   # 8,192 x 16 GFLOP / 800 TFLOP/s


def test_out_of_range_link_values_get_a_note_and_the_nearest_value():
    at = open_app("pages/learn/side_by_side.py", budget=0, decodes=99999, gpu="h100", mode="fast")
    assert_clean(at)
    assert at.number_input(key="budget").value == 1
    # 4,096 decoders' KV does not fit the illustrative GPU: the clamp goes on to what fits
    # (Sarathi-Serve and vLLM V0 as the Sarathi-Serve artifact runs them keep 15% of memory back)
    assert at.number_input(key="decodes").value == 93
    assert at.selectbox(key="gpu").value == "illustrative"
    assert at.selectbox(key="mode").value == "simple"
    note = at.warning[0].value
    for phrase in ("`budget`=“`0`”", "minimum 1", "`decodes`=“`99999`”", "maximum 4,096", "using 93, the "
                   "most that fits", "`gpu`=“`h100`”", "`mode`=“`fast`”"):
        assert phrase in note
    assert not at.error                                          # the clamp left a page that runs
    # the link now says what the page shows (a default is left out, as the widgets do)
    assert dict(at.query_params) == {"budget": "1", "decodes": "93"}


@pytest.mark.parametrize("query, text", [({"decodes": "99999"}, {"decodes": "93"}),
                                         ({"budget": "12.7"}, {"budget": "13"}),
                                         ({"prompt": "99999999"}, {"prompt": "392736"}),
                                         ({"presenter": "1"}, {"presenter": "true"}),
                                         ({"presenter": "on", "budget": "1e3"},
                                          {"presenter": "true", "budget": "1000"}),
                                         ({"gpu": "h100"}, {}),
                                         ({"policies": "nope"}, {"policies": ""}),
                                         ({"Budget": "1000"}, {"budget": "1000"}),
                                         ({"BUDGET": "1000", "Presenter": "1"},
                                          {"budget": "1000", "presenter": "true"}),
                                         ({"Budget": "576"}, {}),      # the default: no key
                                         ({"policy": "vllm-v1", "decodes": "32"},
                                          {"decodes": "32"})])
def test_a_corrected_link_is_written_back_and_reopens_the_same_view(query, text):
    """The address bar after a correction is a link that reproduces the view, with no note."""
    at = open_app("pages/learn/side_by_side.py", **query)
    assert_clean(at)
    assert not at.error
    assert dict(at.query_params) == text
    again = open_app("pages/learn/side_by_side.py", **dict(at.query_params))
    assert not again.warning or "link" not in again.warning[0].value
    for key in ("prompt", "decodes", "budget"):
        assert again.number_input(key=key).value == at.number_input(key=key).value
    assert again.toggle(key="presenter").value == at.toggle(key="presenter").value


@pytest.mark.parametrize("key, value", [("Budget", "1000"), ("BUDGET", "1000"), ("Budget", "576")])
def test_a_link_key_in_another_case_sets_its_control_without_a_note(key, value):
    at = open_app(None, **{key: value})          # one run, the session's first, on Home
    assert_clean(at)
    assert at.number_input(key="budget").value == int(value) and not at.warning
    assert dict(at.query_params) == ({} if value == "576" else {"budget": value})   # 576: the default


def test_a_link_key_no_control_reads_is_named_with_the_nearest_one():
    at = open_app("pages/learn/side_by_side.py", policy="vllm-v1")
    assert_clean(at)
    assert ("- “`policy`” in the link is not a setting of this lab, so it is left out: did you "
            "mean `policies` (Policies)?") in at.warning[0].value


def test_a_boolean_spelled_1_turns_presenter_mode_on_without_a_note():
    at = open_app("pages/learn/side_by_side.py", presenter="1")
    assert at.toggle(key="presenter").value is True
    assert not at.warning


@pytest.mark.parametrize("raw, used", [("inf", 8192), ("-Infinity", 8192), ("1e400", 8192),
                                       ("12.7", 13), ("4096.6", 4097)])
def test_link_values_streamlit_cannot_parse_are_corrected_not_crashed(raw, used):
    """Streamlit's own integer parser raises on `inf` and truncates 12.7 to 12: the app's
    correction, which the note names, must be the value the widget holds."""
    at = open_app("pages/learn/side_by_side.py", prompt=raw)
    assert_clean(at)
    assert at.number_input(key="prompt").value == used
    assert f"`prompt`=“{literal(raw)}”" in at.warning[0].value and f"{used:,}" in at.warning[0].value


def test_link_notes_can_be_dismissed():
    at = open_app(None, prompt="abc")
    assert "`prompt`=“`abc`”" in at.warning[0].value
    at.button(key="dismiss_link_notes").click().run()
    assert_clean(at)
    assert not at.warning
    assert at.number_input(key="prompt").value == 8192


def test_a_run_past_the_iteration_cap_is_a_message():
    # 2,000,000 prompt tokens at 1 token per iteration once the decoders are done
    at = open_app("pages/learn/side_by_side.py", gpu="mi300x", model="qwen2.5-7b", prompt=2_000_000,
                  decodes=8, context=1, budget=1)
    assert_clean(at)
    assert "more than 50,000 iterations" in at.error[0].value


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_in_every_cost_mode(page):
    for mode in ("roofline", "calibrated"):
        at = open_app(page, mode=mode, gpu="h100-sxm", model="llama-3.1-8b")
        assert_clean(at)
        assert not at.error


# --- how close to a real GPU, ideal vs calibrated, tensor parallelism ------------------------
def test_fidelity_page_shows_the_validate_numbers():
    from sim.cost.validation import validate
    report = validate()
    at = open_app(FIDELITY)
    assert_clean(at)
    held = report["summary"]["calibrated"]["held_out"]
    ideal = report["summary"]["roofline"]["held_out"]
    assert metrics(at) == [("Calibrated, median", f"{held['median_abs_error']:.1%}"),
                           ("Calibrated, max", f"{held['max_abs_error']:.1%}"),
                           ("Roofline (ideal), median", f"{ideal['median_abs_error']:.1%}"),
                           ("Roofline (ideal), max", f"{ideal['max_abs_error']:.1%}")]
    summary, published, reproduced = tables(at)[:3]
    assert not at.dataframe                             # the 1,044 points wait for their toggle
    row = summary[summary["points of"] == "held out"].loc["Calibrated to kernels"]
    assert row["max |error|"] == f"{held['max_abs_error']:.1%}"
    at.toggle(key="fidelity_points").set_value(True).run()
    points = at.dataframe[0].value
    assert len(points) == len(report["points"]) == 1044
    # in percent, formatted "+12.3%" in the browser (test_fidelity_error_table_is_formatted_...)
    assert list(points["calibrated error"]) == pytest.approx(
        [100 * p["calibrated_error"] for p in report["points"]], rel=1e-12)
    assert len(published) == len(report["published"])
    text = shown(at)
    assert "No GPU was measured in this project" in text and "microsoft/vidur" in text
    for gpu in ("H100 SXM", "H200 SXM", "B200", "L4", "MI300X", "A100 40GB SXM"):  # predicted only
        assert f"**{gpu}" in text
    for factor in ("kernels in sequence", "tile quantization", "achievable throughput",
                   "soft ridge", "kernel floors", "all-reduce", "per-iteration overhead"):
        assert f"**{factor}.**" in text and "Source:" in text
    assert len(charts(at)) == 3
    assert len(reproduced) == len(load_shipped().rows)


def test_fidelity_page_shows_the_reproduce_table_with_its_command_and_commit():
    """The rows `python -m sim reproduce` prints, the not-expressible ones without a number."""
    shipped = load_shipped()
    at = open_app(FIDELITY)
    table = tables(at)[2]
    assert list(table["paper"]) == [r.shown(r.paper) for r in shipped.rows]
    assert list(table["simulated"]) == [r.shown(r.simulated) for r in shipped.rows]
    chunk_only = table[table["metric"].str.startswith("chunked prefills only")]
    assert set(chunk_only["simulated"]) == {"not expressible"} and set(chunk_only["simulated / paper"]) == {""}
    said = next(c.value for c in at.caption if c.value.startswith("Made by"))
    assert f"`{shipped.command}` at commit {shipped.commit}" in said
    assert "table-2/results.csv" in said and "Table 4" in said


def test_fidelity_error_table_is_formatted_in_the_browser():
    """The 1,044-row error table goes out as numbers with column formats: a pandas Styler would
    format every cell in each fresh session's run and send its text beside the number (190 kB
    against 78 kB, and 0.1-0.3 s of the page's run)."""
    at = open_app(FIDELITY)
    at.toggle(key="fidelity_points").set_value(True).run()
    points = at.dataframe[0]
    assert len(points.value) == 1044
    assert points.proto.ByteSize() < 100 * len(points.value)   # bytes per row; a Styler's: 182


def test_a_scenario_too_big_for_memory_says_the_most_that_fits_with_links():
    """decodes=1,000 at 4,000 tokens of context needs 4.3 million KV tokens: the page says the
    most that fit with the other values kept (93 streams, or a context of 140, in 16-token blocks
    beside the 15% of memory the Sarathi-Serve artifact keeps back), each a link to that view,
    and those links run."""
    at = open_app(decodes=1000)
    message = at.error[0].value
    assert "The most that fit, changing one value: [decodes=93](?decodes=93)" in message
    assert "[context=140](?decodes=1000&context=140)" in message
    assert scenario.scenario_from({"decodes": 93}).fits_in_memory()
    assert not scenario.scenario_from({"decodes": 94}).fits_in_memory()
    at = open_app(decodes=93)
    assert_clean(at) and not at.error


def waterfall(at) -> pd.DataFrame:
    """The fidelity page's table of the factors that moved one iteration's time."""
    return next(table for table in tables(at) if "why" in table.columns)


def test_fidelity_waterfall_at_the_defaults_says_which_gpu_it_uses():
    """The sidebar's default GPU is not refused: the page opens on the GPU it can explain and
    says why, in a caption, not an alert."""
    at = open_app(FIDELITY)
    said = next(c.value for c in at.caption if c.value.startswith("Shown on the A100 80GB SXM"))
    assert "the sidebar's Textbook GPU" in said and "no calibration" in said
    assert not any("refuses" in i.value for i in at.info) and not at.warning
    factors = waterfall(at)
    assert list(factors.index)[:2] == ["roofline (ideal)", "kernels in sequence"]
    assert "all-reduce" not in factors.index                   # one GPU
    total = sum(float(x.replace(",", "")) for x in factors["adds (ms)"])
    assert total == pytest.approx(float(factors["running total (ms)"].iloc[-1].replace(",", "")),
                                  rel=1e-3)


def test_fidelity_waterfall_from_a_link():
    at = open_app(FIDELITY, gpu="h100-sxm", model="llama-3.1-8b", tp=2, why="decode",
                  mode="roofline")
    assert_clean(at)
    assert at.selectbox(key="why").value == "decode"
    assert "decode step (64 streams)" in shown(at) and "H100 SXM × 2" in shown(at)
    assert "all-reduce" in waterfall(at).index
    assert not at.info[1:]                                       # no GPU note: the H100 is real


def test_fidelity_page_at_extremes():
    at = open_app(FIDELITY, gpu="mi300x", model="qwen2.5-7b", prompt=1_000_000, decodes=1024,
                  context=100, why="fused")
    assert_clean(at)
    assert "no chunk" in at.warning[0].value                     # budget 576 <= 1,024 decodes
    assert "whole prompt (1,000,000 tokens)" in shown(at)


def test_side_by_side_compare_shows_both_modes_and_the_difference():
    at = open_app("pages/learn/side_by_side.py", gpu="h100-sxm", mode="roofline", compare="true")
    assert_clean(at)
    cards = at.metric
    assert len(cards) == 20                                      # two rows under each lane
    ideal, real = cards[3], cards[8]                             # the unchunked lane's TTFT
    assert ideal.label == real.label == "New request TTFT"
    assert (ideal.value, real.value) == ("133.4 ms", "204.9 ms")
    assert real.delta == "+71.48 ms (+54%)"                      # 204.9 − 133.4, unrounded inside
    assert cards[10].delta.startswith("-")                      # chunked lane vs unchunked still
    text = shown(at)
    assert "**roofline** mode, as drawn above" in text and "**calibrated** mode" in text


def test_compare_toggle_click_and_back_to_calibrated():
    at = open_app("pages/learn/side_by_side.py", gpu="a100-80gb", mode="calibrated")
    assert len(at.metric) == 10
    at.toggle(key="compare").set_value(True).run()
    assert_clean(at)
    assert len(at.metric) == 20 and "**roofline** mode, the same iterations" in shown(at)
    roofline_gaps = [at.metric[5], at.metric[15]]                # the largest gap, roofline rows
    assert all(m.label == "Largest gap" and m.delta.startswith("-") for m in roofline_gaps)


@pytest.mark.parametrize("page", ["pages/learn/side_by_side.py", "pages/learn/roofline.py"])
def test_compare_on_the_illustrative_gpu_is_a_message(page):
    at = open_app(page, compare="true")                          # simple mode, illustrative GPU
    assert_clean(at)
    assert not at.error
    note = at.warning[0].value
    assert "No calibrated numbers" in note and "a100-80gb" in note
    assert ("New request TTFT", "327.7 ms") in metrics(at) if "side" in page else tables(at)


def test_calibrated_mode_on_the_illustrative_gpu_is_a_message_on_every_page():
    for page in PAGES:
        at = open_app(page, mode="calibrated")
        assert_clean(at)
        assert "illustrative GPU" in at.error[0].value and "a100-80gb" in at.error[0].value


def test_roofline_compare_adds_the_calibrated_times_and_budget():
    at = open_app("pages/learn/roofline.py", gpu="a100-80gb", mode="roofline", compare="true")
    assert_clean(at)
    table = tables(at)[0]
    assert {"time = max", "time (calibrated)", "calibrated − roofline"} <= set(table.columns)
    assert all(d.startswith("+") for d in table["calibrated − roofline"])   # a lower bound
    assert "The calibrated mode, same target of 25 ms" in at.info[0].value


def test_roofline_calibrated_with_tp_shows_every_term_of_the_time():
    at = open_app("pages/learn/roofline.py", gpu="h100-sxm", mode="calibrated", tp=2)
    assert_clean(at)
    table = tables(at)[0]
    time = "time = kernels + all-reduce + overhead"
    terms = ["kernels (in sequence, soft ridge, floors)", "all-reduce", "overhead"]
    assert set(terms + [time]) <= set(table.columns)
    decode = table.loc["decode step (64 streams)"]
    assert (decode["memory (achievable)"], decode["all-reduce"], decode["overhead"],
            decode[time]) == ("8.723 ms", "496 µs", "4 ms", "14.21 ms")
    for _, row in table.iterrows():                     # each row adds up on screen
        assert sum(seconds(row[term]) for term in terms) == pytest.approx(seconds(row[time]),
                                                                         rel=2e-3)
    assert any(scenario.cost_rule("calibrated", 2) in c.value for c in at.caption)
    assert any("factor by factor" in label for label in page_links(at))   # without the toggle


def test_roofline_compare_deltas_are_written_like_the_cards():
    at = open_app("pages/learn/roofline.py", gpu="h100-sxm", mode="calibrated", compare="true")
    assert_clean(at)
    deltas = tables(at)[0]["roofline − calibrated"]
    assert all(re.fullmatch(r"-[\d.,]+ (s|ms|µs) \(-\d+%\)", d) for d in deltas), list(deltas)


def test_roofline_with_weights_that_do_not_fit_says_so():
    # 6e14 parameters (1.2 PB), under the 1e15 a custom model may have
    at = open_app("pages/learn/roofline.py", model="custom", layers=1000, hidden=100_000,
                  ffn=2_000_000)
    assert_clean(at)
    assert "weights (1.2 PB) do not fit" in at.error[0].value
    assert "No budget meets" not in shown(at) and not tables(at)


def test_fidelity_page_lists_the_factor_rules_the_waterfall_explains_with():
    at = open_app(FIDELITY, gpu="h100-sxm", model="llama-3.1-8b", tp=2)
    assert_clean(at)
    text = shown(at)
    for name, rule in factor_rules(A100).items():       # the list: the A100's figures
        assert f"**{name}.** {rule[0].upper()}{rule[1:]}." in text, name
    hopper = factor_rules(scenario.scenario_from({"gpu": "h100-sxm", "mode": "calibrated"})
                          .cost_model().calibration)
    why = waterfall(at)["why"]                      # the waterfall: the H100's, same words
    assert all(why[name].startswith(hopper[name]) for name in why.index if name in hopper)
    assert len(set(why.index) & set(hopper)) == len(hopper)


def test_pages_import_no_cli_module():
    """Pages sit on top of ui, charts and sim; the CLI is a sibling they never use (page scripts are
    not a package, so the import-linter contracts in pyproject.toml cannot see them)."""
    pages = list(Path(APP).parent.joinpath("pages").glob("*/*.py"))
    assert len(pages) >= 9
    for page in pages:
        assert not re.search(r"^from cli\b|^import cli\b", page.read_text(), re.M), page


def test_tp_from_a_link_shards_the_model():
    at = open_app("pages/learn/roofline.py", gpu="h100-sxm", model="llama-3.1-8b", tp=2)
    assert_clean(at)
    assert at.number_input(key="tp").value == 2
    table = tables(at)[0]
    assert {"all-reduce", "time = max + all-reduce"} <= set(table.columns)
    assert "every number here is one GPU's" in shown(at)
    one = tables(open_app("pages/learn/roofline.py", gpu="h100-sxm", model="llama-3.1-8b"))[0]
    assert table.FLOPs.iloc[-1] != one.FLOPs.iloc[-1]            # half the FLOPs per GPU


@pytest.mark.parametrize("tp, note, error", [
    ("0", "`tp`=“`0`” in the link is below the minimum 1", None),
    ("3", None, "tensor-parallel degree (tp) 3 must divide Llama-3.1-8B's 32 query heads"),
    ("99999", "`tp`=“`99999`” in the link is above the maximum 64", "(tp) 64 must divide"),
    ("two", "`tp`=“`two`” in the link is not a number", None),
])
def test_bad_tp_in_a_link_is_a_visible_note(tp, note, error):
    at = open_app("pages/learn/side_by_side.py", gpu="h100-sxm", model="llama-3.1-8b", tp=tp)
    assert_clean(at)
    if note:
        assert note in at.warning[0].value
    if error:
        assert error in at.error[0].value
    else:
        assert not at.error and at.number_input(key="tp").value == 1


def test_home_names_the_gpus_under_tensor_parallelism():
    at = open_app(None, gpu="h200", model="llama-3.1-8b", tp=4)
    assert_clean(at)
    assert "Llama-3.1-8B on the H200 SXM × 4 (tensor parallel)" in shown(at)


def test_tp_on_a_gpu_without_a_link_is_a_message():
    at = open_app(None, tp=2)                                    # the illustrative GPU
    assert_clean(at)
    assert "no GPU-to-GPU link preset" in at.error[0].value


def test_tp_makes_a_70b_model_fit_its_kv_per_gpu():
    at = open_app("pages/learn/side_by_side.py", gpu="h100-sxm", model="llama-3.1-70b")
    assert "do not fit" in at.error[0].value                    # 141 GB of weights on 80 GB
    at = open_app("pages/learn/side_by_side.py", gpu="h100-sxm", model="llama-3.1-70b", tp=4)
    assert_clean(at)
    assert not at.error and len(at.metric) == 10
