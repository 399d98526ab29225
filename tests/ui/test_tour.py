"""The guided tour (ui/teach/tour.py, tour/en/*.md): its steps read and checked from their files, every
number in their words from the runs, the moments a step opens at, the guesses answerable and the
budget exercise judged by its runs; and the Tour page through AppTest: a link opens its step with
its controls, a guess reveals (nothing of the run ahead is drawn before it), the exercise counts
any budget within a tile and hints, the learner's scenario comes back after the tour; and the
printed handout: distinct figures, a recap, an answer key at the end."""

import re
import shutil
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from charts.views import timeline
from sim.presets.hardware import GPUS
from sim.presets.models import MODELS
from sim.studies.budget import largest_budget_within
from tests.support.apptest import APP, TIMEOUT, assert_clean, charts, page_links, shown
from ui.learn import words
from ui.shell import controls, story
from ui.shell.controls import TOUR_FOLDER, read_link
from ui.teach import tour

TOUR_PAGE = "pages/teach/tour.py"


@pytest.fixture(scope="module")
def steps():
    return tour.load()


def runs(step):
    s = step.scenario()
    return s, s.run(s.unchunked, 50_000), s.run(s.chunked, 50_000)


def numbers_of(step):
    s, unchunked, chunked = runs(step)
    return tour.lane_numbers(s, unchunked, chunked)


# --- the steps, as data -----------------------------------------------------------------------
def test_eight_to_twelve_steps_from_two_kinds_of_work_to_under_load(steps):
    assert 8 <= len(steps.steps) <= 12
    assert [s.number for s in steps.steps] == list(range(1, len(steps.steps) + 1))
    chapters = [s.chapter for s in steps.steps]
    assert chapters[0] == "two-kinds" and chapters[-1] == "traffic" and "dial" in chapters
    # the story's chapters on one GPU, each at least once, in the story's order
    # (ui/shell/story.py); the chapters after traffic, across GPUs, are the pages' own
    ids = [c.id for c in story.CHAPTERS]
    assert list(dict.fromkeys(chapters)) == ids[:ids.index("traffic") + 1]
    assert controls.TOUR.high == len(steps.steps)            # ?tour=N is checked against them
    # one numbering, the steps': Home's chapter a step tells is named, not numbered
    assert steps.step(4).chapter_title() == "Split it: a budget B, a chunk C = B − D"


def test_a_step_says_its_controls_moment_highlight_and_guess(steps):
    dial = next(s for s in steps.steps if s.slug == "the-budget-is-a-dial")
    assert dict(dial.controls) == {"budget": 2048}
    assert dial.scenario_values()["budget"] == 2048 and dial.scenario_values()["gpu"] == "illustrative"
    assert dial.scenario().budget == 2048
    stall = steps.step(2)
    assert (stall.moment, stall.play, stall.highlight) == ("start", "stall-end", ("unchunked.rows",))
    assert stall.player_views() == ("unchunked_rows_view",)
    assert stall.guess and stall.section("question") and stall.section("reveal")


def test_no_number_is_typed_into_a_steps_words(steps):
    """Every number a step (or the handout's recap) says comes from its runs ({fields}); none
    is written in the text."""
    recap = ("recap", (TOUR_FOLDER / "recap.md").read_text("utf-8"))
    for name, text in [*((step.slug, text) for step in steps.steps
                         for text in (step.text, *(body for _, body in step.sections))), recap]:
        bare = re.sub(r"\{[^}]*\}", "", text)
        assert not re.search(r"\d", bare), (name, bare)


def test_every_steps_words_are_filled_from_its_runs(steps):
    for step in steps.steps:
        if step.view == "burst":
            continue   # test_the_under_load_step_quotes_the_burst
        fields = tour.step_fields(step, numbers_of(step))
        for text in (step.text, step.section("question"), step.section("reveal")):
            rendered = tour.render(text, fields)
            assert "{" not in rendered and "}" not in rendered
    text = tour.render(steps.step(4).text, tour.step_fields(steps.step(4), numbers_of(steps.step(4))))
    assert "C = B − D = 576 − 64 = 512" in text and "**23.04 ms**" in text
    reveal = tour.render(steps.step(2).section("reveal"), numbers_of(steps.step(2)).text)
    assert reveal.startswith("**333 ms**: the whole prompt's pass (327.7 ms)")


@pytest.mark.parametrize("budget, says", [
    (576, "**C = B − D = 576 − 64 = 512** prompt tokens"),
    (64, "leaves **no room** for a chunk"),
    (9000, "room for the whole 8,192-token prompt: **C = 8,192** prompt tokens, in one iteration"),
])
def test_the_chunk_arithmetic_follows_the_regime(steps, budget, says):
    """C = B − D only where that is the chunk: not past the prompt, not below nothing."""
    step = steps.step(4)
    s = replace(step.scenario(), budget=budget)
    text = tour.render(step.text, tour.lane_numbers(s, s.run(s.unchunked, 50_000),
                                                    s.run(s.chunked, 50_000)).text)
    assert says in text


def test_the_steps_words_follow_a_short_prompt(steps):
    """A 100-token prompt's pass is as long as a decode step: memory-bound, and no freeze."""
    text = {}
    for number in (1, 3):
        step = steps.step(number)
        s = replace(step.scenario(), prompt=100)
        fields = tour.lane_numbers(s, s.run(s.unchunked, 50_000), s.run(s.chunked, 50_000)).text
        text[number] = " ".join(tour.render(step.text + step.section("reveal"), fields,
                                            hover=False).split())
    assert "compute-bound" not in text[1] and "this pass is" in text[1]
    assert "no stream freezes" in text[3] and "64 of the 64" not in text[3]


def test_the_under_load_step_quotes_the_burst(steps):
    """Ten 8,192-token prompts: the source article's 3.7 s drain, chunked."""
    from ui.teach.handout import _burst
    step = next(s for s in steps.steps if s.view == "burst")
    s = step.scenario()
    numbers = tour.burst_numbers(s, _burst(s))
    assert numbers.text["drain_c"] == "3.7 s" and numbers.text["burst"] == "10"
    assert numbers.values["burst_gap_c"] < 0.1 < numbers.values["burst_gap_u"]
    assert "{" not in tour.render(step.section("reveal"), numbers.text)


@pytest.mark.parametrize("number, right", [(1, "60×"), (2, "300 ms"), (5, "16"), (9, "4 s")])
def test_each_guess_has_one_answer_the_runs_pick(steps, number, right):
    step = steps.step(number)
    if step.view == "burst":
        from ui.teach.handout import _burst
        values = tour.burst_numbers(step.scenario(), _burst(step.scenario())).values
    else:
        values = numbers_of(step).values
    assert step.guess[tour.nearest_choice(step, values[step.truth])] == right


def test_glossary_markup_in_a_steps_words():
    fields = {"n": "5"}
    hover = tour.render("{term:prefill:Prefill} of {n} and {first:ttft}", fields)
    assert hover.startswith('<span class="glossary-term" title="Processing') and "<abbr" in hover
    assert tour.render("{term:prefill:Prefill} of {n} and {first:ttft}", fields, hover=False) == \
        "Prefill of 5 and time to first token (TTFT)"
    assert tour.render("{term:budget}", {}, hover=False) == "token budget"
    with pytest.raises(tour.TourError, match="'nope' is not in ui/shell/glossary.py"):
        tour.render("{term:nope}", {})
    with pytest.raises(tour.TourError, match="field 'missing'"):
        tour.render("{missing}", {})


def test_moments_at_the_defaults(steps):
    s, unchunked, chunked = runs(steps.step(1))
    found = tour.moments(unchunked, chunked, 0.55296)
    assert found["first-chunk"] == pytest.approx(0.02304)              # 576 tokens, 23.04 ms
    assert found["first-token-unchunked"] == pytest.approx(0.32768)    # the whole prompt
    assert found["stall-end"] == pytest.approx(0.32768 + 16e9 / 3e12)   # + a decode step
    assert found["stall"] == pytest.approx(found["stall-end"] / 2)
    assert found["first-token-chunked"] == pytest.approx(16 * 0.02304)
    assert found["end"] == 0.55296 and found["start"] == 0
    assert set(found) == set(tour.MOMENTS)
    assert tour.moments(unchunked, chunked, 0.1)["end"] == 0.1          # clipped to the axis
    assert max(tour.moments(unchunked, chunked, 0.1).values()) == 0.1


# --- the exercise ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exercise(steps):
    step = next(s for s in steps.steps if s.exercise)
    s = step.scenario()

    def gap_of(budget):
        return tour.largest_gap(s, budget, lambda x, policy: words.lane_cards(
            x.run(policy, 50_000), x.mode, x.tp))
    return step, s, gap_of


@pytest.mark.parametrize("pick, verdict", [(576, "under"), (3008, "under"), (3016, "within"),
                                           (3072, "within"), (3079, "within"), (3080, "over"),
                                           (8256, "over")])
def test_the_budget_exercise_counts_any_budget_within_a_tile_of_the_largest(exercise, pick, verdict):
    """On an H100 with Llama-3.1-8B (simple cost mode) a full iteration of B tokens takes
    2 × 8.03e9 × B / 989 TFLOP/s: 3,079 tokens is the last within 50 ms; 3,016 to 3,079 are
    within one tile (64 tokens) of it, 3,072 among them (49.9 ms)."""
    step, s, gap_of = exercise
    assert (s.gpu.id, s.model.id, step.target_s) == ("h100-sxm", "llama-3.1-8b", 0.05)
    check = tour.check_budget(s, pick, step.target_s, gap_of)
    assert check.verdict == verdict and check.answer == 3079 and tour.TILE == 64
    assert (check.gap_s > 0.05) == (verdict == "over")
    assert check.fields["pick_gap"] == tour.ms3(gap_of(pick))
    said = tour.render(step.section(verdict), tour.step_fields(step, numbers_of(step)) | check.fields)
    assert f"{pick:,}" in said and "{" not in said
    if verdict == "within":
        assert "**3,079**" in said and "from 3,016 to 3,079" in said


def test_the_exercise_says_its_tolerance_and_why(exercise):
    step, s, gap_of = exercise
    fields = tour.step_fields(step, numbers_of(step)) | tour.check_budget(s, 576, 0.05, gap_of).fields
    question = " ".join(tour.render(step.section("question"), fields, hover=False).split())
    assert "up to a tile (64 tokens) below it counts: GPUs multiply in whole tiles" in question


def test_the_exercise_answer_is_where_the_runs_cross_the_target(exercise):
    step, s, gap_of = exercise
    check = tour.check_budget(s, 3079, step.target_s, gap_of)
    assert gap_of(check.answer) <= 0.05 < gap_of(check.answer + 1)
    answer = tour.render(step.section("answer"), tour.step_fields(step, numbers_of(step)) | check.fields)
    assert "**3,079**" in answer and "3,015 tokens" in answer


def test_the_hint_gives_the_numbers_to_reason_with(exercise):
    """The decode step and the arithmetic a token adds, with the formula; their division is
    the answer in the simple cost mode, where an iteration takes the longer of the two."""
    step, s, gap_of = exercise
    fields = tour.step_fields(step, numbers_of(step)) | tour.check_budget(s, 576, 0.05, gap_of).fields
    hint = tour.render(step.section("hint"), fields, hover=False)
    assert "the decode step of the 64 streams alone: **4.794 ms**" in hint
    assert "2 × 8.03 billion parameters / 989 TFLOP/s =\n  **16.24 µs**" in hint
    assert "the largest B is about 50 ms / 16.24 µs." in hint   # the division is the learner's
    answer = tour.render(step.section("answer"), fields, hover=False)
    assert "The largest budget is **3,079**" in answer and "50 ms / 16.24 µs ≈ 3,079" in answer


@pytest.mark.parametrize("gpu, model, decodes, target_ms", [
    ("h100-sxm", "llama-3.1-8b", 64, 50), ("a100-80gb", "llama-3.1-8b", 32, 120),
    ("h200", "llama-3.1-70b", 16, 400), ("l4", "llama-3.1-8b", 8, 300)])
def test_the_hints_estimate_is_the_answer_in_the_simple_cost_mode(gpu, model, decodes, target_ms):
    s = replace(next(x for x in tour.load().steps if x.exercise).scenario(), decodes=decodes)
    s = replace(s, gpu=GPUS[gpu], model=MODELS[model])
    answer = largest_budget_within(s.cost_model(), s.decodes, s.context, target_ms / 1e3, s.prompt)
    assert answer is not None and answer < s.decodes + s.prompt      # the arithmetic sets it
    assert tour.budget_hint(s, target_ms / 1e3)["estimate"] == f"{answer:,}"


# --- broken files say what is wrong -------------------------------------------------------------
GOOD = '+++\ntitle = "A"\nchapter = "freeze"\n+++\nSome words.\n'


@pytest.mark.parametrize("text, message", [
    ("no front matter", "must open with TOML front matter"),
    (GOOD.replace('chapter = "freeze"', 'chapter = "nope"'), "chapter 'nope' is not one of"),
    (GOOD.replace('title = "A"', 'title = "A"\ncolour = "red"'), "unknown front-matter keys ['colour']"),
    (GOOD.replace('title = "A"', 'title = "A"\ncontrols = "budget=0"'), "`budget`=“`0`” in the link is below"),
    (GOOD.replace('title = "A"', 'title = "A"\ncontrols = "window=run"'), "keys among prompt"),
    (GOOD.replace('title = "A"', 'title = "A"\nmoment = "noon"'), "moment 'noon' is not one of"),
    (GOOD.replace('title = "A"', 'title = "A"\nhighlight = ["top.rows"]'), "highlight 'top.rows'"),
    (GOOD.replace('title = "A"', 'title = "A"\nguess = ["1", "2"]\ntruth = "gap_u"'),
     "a guess needs a <!-- question -->"),
    (GOOD.replace('title = "A"', 'title = "A"\nguess = ["soon", "2"]\ntruth = "gap_u"'), "guess ['soon', '2']"),
    (GOOD.replace('title = "A"', 'title = "A"\nexercise = "largest-budget"'), "target_ms"),
    (GOOD + "<!-- aside -->\nmore\n", "unknown sections ['aside']"),
    (GOOD.replace("title", "title = = "), "front matter:"),
])
def test_a_broken_step_file_names_itself_and_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "03-broken.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(tour.TourError, match=re.escape(message)) as raised:
        tour.read_step(path, 3)
    assert str(raised.value).startswith("03-broken.md: ")


def test_a_translation_is_a_folder_of_files(tmp_path):
    """Copy the folder, translate its words: the tour reads the copy (the same steps)."""
    folder = tmp_path / "xx"
    shutil.copytree(TOUR_FOLDER, folder)
    first = sorted(folder.glob(controls.STEP_FILES))[0]
    first.write_text(first.read_text("utf-8").replace('title = "Two kinds of work"',
                                                      'title = "Deux sortes de travail"'), "utf-8")
    (folder / "words.toml").write_text((folder / "words.toml").read_text("utf-8")
                                       .replace('next = "Next"', 'next = "Suivant"'), "utf-8")
    translated = tour.load(folder)
    assert translated.step(1).title == "Deux sortes de travail"
    assert translated.words["next"] == "Suivant"
    assert len(translated.steps) == len(tour.load().steps)
    with pytest.raises(tour.TourError, match="holds no step files"):
        tour.load(tmp_path / "empty")


def test_a_link_past_the_last_step_is_corrected_with_a_note(steps):
    link = read_link({"tour": "99"})
    assert link.values["tour"] == len(steps.steps) and "above the maximum" in link.notes["tour"]
    assert read_link({"tour": "3"}).values == {"tour": 3} and not read_link({"tour": "3"}).notes


# --- the Tour page ----------------------------------------------------------------------------
def open_tour(**query) -> AppTest:
    """The Tour page as a fresh link opens it: its first run on this page."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({k: str(v) for k, v in query.items()})
    at.switch_page(TOUR_PAGE)
    at.run()
    return at


def test_a_link_opens_its_step_with_the_steps_controls():
    at = open_tour(tour=7)
    assert_clean(at)
    assert at.header[0].value == "7. The budget is a dial"
    assert at.number_input(key="budget").value == 2048
    assert "chunks of 1,984 tokens" in shown(at) and "**340.5 ms**" in shown(at)
    at = open_tour(tour=8)
    assert at.selectbox(key="gpu").value == "h100-sxm"
    assert at.selectbox(key="model").value == "llama-3.1-8b"
    assert at.number_input(key="budget").value == 576        # the step leaves it at its default


def test_the_links_own_values_win_on_a_fresh_link():
    """A link with a changed control reproduces the view it was copied from."""
    at = open_tour(tour=7, budget=1024)
    assert at.number_input(key="budget").value == 1024
    assert "chunks of 960 tokens" in shown(at)


def test_moving_to_a_step_sets_its_controls_and_the_link():
    at = open_tour(tour=6, budget=1024)
    at.button(key="tour_next").click().run()
    assert at.header[0].value == "7. The budget is a dial"
    assert at.number_input(key="budget").value == 2048           # the step's, over the link's
    assert at.query_params["tour"] == "7"
    at.button(key="tour_back").click().run()
    assert at.number_input(key="budget").value == 576
    assert at.header[0].value == "6. What it costs, what it buys"


def test_the_tour_has_one_next_its_own():
    """The tour's own Next moves on; the path's "Next: Home" link under the page would compete
    with it, on a screen and on a projector alike (other pages keep theirs)."""
    for query in (dict(tour=3), dict(tour=3, presenter=1), dict(tour=9)):
        assert not any(label.startswith("Next: ") for label in page_links(open_tour(**query)))
    home = AppTest.from_file(APP, default_timeout=TIMEOUT)
    home.run()
    assert page_links(home)[-1].startswith("Next: ")


def test_the_keys_are_on_screen_not_in_a_tooltip(steps):
    at = open_tour(tour=4)
    keys = steps.words["keys"].format(last=min(len(steps.steps), tour.DIGIT_STEPS))
    assert keys in [c.value for c in at.caption]
    assert keys.startswith("Keys: space/→ next, ← back, 1–")
    assert not at.button(key="tour_next").help


def test_the_under_load_step_opens_with_its_question(steps):
    """The lanes' notes (vLLM V0 at its own budget) come after the step's words and question, in
    the figure's column below where the chart will be, not above the step's title."""
    at = open_tour(tour=9)
    words_column, figure_column = at.main.columns[:2]
    said = [c.value for c in figure_column.caption]
    note = next(i for i, text in enumerate(said) if "its own budget" in text)
    assert said.index(steps.words["chart_after_guess"]) < note
    assert not any("its own budget" in c.value for c in words_column.caption)
    assert at.header[0].value == "9. Under load"


def main_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.main.markdown)


def test_a_guess_hides_the_answer_until_it_is_made():
    at = open_tour(tour=2)
    assert "333 ms" not in main_text(at)                         # not before the guess
    assert at.radio(key="guess-2").label == "Your guess, then the run plays"
    at.radio(key="guess-2").set_value("50 ms").run()
    assert "**333 ms**: the whole prompt's pass" in shown(at)
    assert "Not quite." in shown(at)
    at.radio(key="guess-2").set_value("300 ms").run()
    assert "Right." in shown(at)


def player_html(at: AppTest) -> str:
    return at.get("iframe")[0].proto.srcdoc


@pytest.mark.parametrize("number, choice, ahead", [
    (2, "300 ms", "stall-end"),              # the streams' next token: the gap to guess
    (5, "16", "first-token-chunked"),        # the last chunk's end: the ticks to count
])
def test_before_a_guess_nothing_of_the_run_ahead_is_drawn(steps, number, choice, ahead):
    """No faded preview of the run's future before the guess (its tables end at the moment the
    step opens at); the whole run once it is made."""
    s, unchunked, chunked = runs(steps.step(number))
    window_end = timeline(unchunked, chunked).t_max
    moment_ms = f"{tour.moments(unchunked, chunked, window_end)[ahead] * 1e3:.2f}"
    at = open_tour(tour=number)
    assert moment_ms not in player_html(at)
    assert re.search(r'"time_ms":0[,}]', player_html(at))      # the moment it opens at is drawn
    assert clock_end(at) <= 1e-6                                # and the clock cannot pass it
    assert f'"locked":"{steps.words["play_after_guess"]}"' in player_html(at)   # nor Play start
    at.radio(key=f"guess-{number}").set_value(choice).run()
    assert moment_ms in player_html(at) and clock_end(at) == pytest.approx(window_end)
    assert '"locked":""' in player_html(at)


def clock_end(at: AppTest) -> float:
    """The player's clock range (its config's tMax, seconds)."""
    return float(re.search(r'"tMax":([0-9.e+-]+)', player_html(at)).group(1))


def test_the_under_load_chart_comes_after_the_guess():
    at = open_tour(tour=9)
    assert not charts(at)
    at.radio(key="guess-9").set_value("4 s").run()
    assert len(charts(at)) == 1


def test_the_exercise_answers_at_once_and_moves_the_budget():
    """Each budget's largest gap is its full iteration: B × 2 × 8.03e9 FLOPs / 989 TFLOP/s."""
    per_token = MODELS["llama-3.1-8b"].flops_per_token / GPUS["h100-sxm"].peak_flops
    at = open_tour(tour=8)
    at.number_input(key="tour_pick").set_value(3100).run()
    assert at.number_input(key="budget").value == 3100           # the lanes follow the pick
    assert "a gap of **50.340 ms**, over 50 ms" in shown(at)
    at.number_input(key="tour_pick").set_value(2944).run()
    assert f"a gap of **{tour.ms3(2944 * per_token)}**" in shown(at)
    assert "a budget a tile larger still fits" in shown(at)
    at.number_input(key="tour_pick").set_value(3072).run()       # within a tile of 3,079
    assert f"**3,072** counts: a gap of **{tour.ms3(3072 * per_token)}**" in shown(at)
    assert "the largest B is about 50 ms / 16.24 µs." in shown(at)   # the hint
    at.toggle(key="answer-8").set_value(True).run()
    assert "The largest budget is **3,079**" in shown(at)


def test_the_tour_gives_the_learners_scenario_back_when_they_leave():
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"budget": "1024", "decodes": "32"})
    at.run()                                                     # Home, the learner's scenario
    assert at.number_input(key="budget").value == 1024
    at.switch_page(TOUR_PAGE).run()
    assert at.number_input(key="budget").value == 576            # the step's scenario
    assert at.number_input(key="decodes").value == 64
    note = next(c.value for c in at.caption if "comes back when you leave the tour" in c.value)
    assert "Token budget per iteration: 1,024" in note and ": 32" in note
    at.button(key="tour_next").click().run()
    at.switch_page("pages/learn/home.py").run()
    assert at.number_input(key="budget").value == 1024           # given back
    assert at.number_input(key="decodes").value == 32


def test_a_link_to_a_step_that_does_not_exist_shows_the_last_with_a_note():
    at = open_tour(tour=42)
    assert_clean(at)
    assert at.header[0].value.startswith(f"{len(tour.load().steps)}. ")
    assert "`tour`=“`42`” in the link is above the maximum" in at.warning[0].value


@pytest.mark.parametrize("query, says", [
    (dict(prompt=2_000_000), "tokens of KV"),
    (dict(model="custom", heads=30, kvheads=8), "must be a multiple of KV heads"),
])
def test_a_scenario_that_cannot_run_on_a_step_is_a_message_and_the_tour_moves_on(query, says):
    at = open_tour(tour=3, **query)
    assert_clean(at)
    assert says in at.error[0].value
    at.button(key="tour_next").click().run()
    assert at.query_params["tour"] == "4"



# --- the printed handout -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    from ui.teach.handout import write
    out = tmp_path_factory.mktemp("handout")
    return out, write(out, width=600, pdf=False).read_text("utf-8")


def test_the_handouts_figures_are_all_different(handout, steps):
    """Each shows the lanes its step points at, at its own moment."""
    out, _ = handout
    pictures = sorted(out.glob("*.png"))
    assert len(pictures) == len(steps.steps)
    assert len({p.read_bytes() for p in pictures}) == len(pictures)


def test_the_handouts_answers_are_in_a_key_at_the_end(handout, steps):
    """A reader guesses first: each guess's answer and the figure that shows it, and the
    exercise's answer, come after every step, in the last section."""
    _, text = handout
    body, key = text.split("\n## Answer key\n")
    assert not re.search(r"^## ", key, re.M)
    for step in steps.steps:
        picture = f"({step.number:02d}-{step.slug}.png)"
        if step.guess:
            assert f"**{step.number}. {step.title}.**" in key
            assert picture in key and picture not in body
            assert f"({' · '.join(step.guess)})" in body
        elif not step.exercise:
            assert picture in body and picture not in key
    exercise = next(s for s in steps.steps if s.exercise)
    asked = body.split(f"## {exercise.number}. ")[1].split("\n## ")[0]
    assert "**Hint:**" in asked and "50 ms / 16.24 µs" in asked and "3,079" not in asked
    assert "The largest budget is **3,079**" in key and "50 ms / 16.24 µs ≈ 3,079" in key


def test_the_handout_is_plain_markdown(handout):
    """Glossary hovers and the story's hover markup are for the app: print has the words."""
    _, text = handout
    assert "<span" not in text and "<abbr" not in text and "TTFT" in text


def test_the_handout_has_a_recap_with_the_runs_numbers(handout, steps):
    _, text = handout
    recap = text.split("\n## Recap\n")[1].split("\n## ")[0]
    fields = numbers_of(steps.step(1)).text
    for name in ("decode_step", "prompt_pass", "gap_u", "chunk", "ttft_c", "ttft_u"):
        assert fields[name] in recap, name
    assert "{" not in recap


def test_the_handout_page_has_each_steps_question_and_figure_inside_it(handout, steps):
    """handout.html stands alone (printable offline): each step's title and question, each
    figure as a data URL (no file beside it, nothing fetched), a print style sheet."""
    from ui.teach.handout import page_html
    out, _ = handout
    page = (out / "handout.html").read_text("utf-8")
    assert page.count('src="data:image/png;base64,') == len(steps.steps)
    assert not re.search(r'(src|href)="(?!data:)', page)              # nothing to fetch
    assert "@page" in page and "@media print" in page
    for step in steps.steps:
        assert f"<h2>{step.number}. {step.title}</h2>" in page
        question = step.section("question") if (step.guess or step.exercise) else ""
        first_words = re.split(r"[{*]", question)[0].strip()[:30]      # up to its first number
        assert first_words in page, step.number
    assert "<ul><li>" in page and "<strong>" in page and "**" not in page
    assert page_html("- one\n  more\n- two", {}, "t").count("<li>") == 2   # a wrapped item is one


@pytest.mark.skipif(not shutil.which("chromium"), reason="Chromium is not installed: no PDF")
def test_the_handout_pdf_is_printed_by_chromium(tmp_path):
    from ui.teach.handout import main
    assert main(["--out", str(tmp_path), "--width", "600"]) == 0
    pdf = (tmp_path / "handout.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 5


def test_without_chromium_the_handout_says_there_is_no_pdf(tmp_path, monkeypatch, capsys):
    from ui.teach import handout
    monkeypatch.setattr(handout, "CHROMIUM", ("no-such-browser",))
    assert handout.main(["--out", str(tmp_path), "--width", "600"]) == 0
    assert "no PDF: none of no-such-browser is installed" in capsys.readouterr().out
    assert (tmp_path / "handout.html").exists() and not (tmp_path / "handout.pdf").exists()


def test_the_tour_offers_the_handout():
    at = open_tour(tour=1)
    assert at.get("download_button")
    assert not open_tour(tour=1, presenter=1).get("download_button")
