"""The guided tour in Chromium, presented from a projector (1280x720, presenter mode): walked with
the keyboard (next, back, a step's number, keys pressed inside the player), a step's own link
opened fresh, a guess revealed and played (after which → moves on), the exercise answered at
once."""

import re

import pytest
from playwright import sync_api

from harness.visit import settle
from ui.teach import tour

STEPS = tour.load()


@pytest.fixture
def page(new_tab):
    return new_tab(1280, 720)


def step_shown(page, number: int) -> None:
    """The page shows step `number`, its link says so, and its player is ready."""
    title = f"{number}. {STEPS.step(number).title}"
    sync_api.expect(page.get_by_role("heading", name=title)).to_be_visible(timeout=30_000)
    said = re.compile(rf"[?&]tour={number}(&|$)")
    page.wait_for_url(lambda url: bool(said.search(url)) if number > 1 else "tour=" not in url,
                      timeout=15_000)
    settle(page)


def player(page):
    frame = page.locator(".st-key-stage iframe").element_handle().content_frame()
    frame.wait_for_function("window.playerReady === true", timeout=30_000)
    return frame


def press(page, key: str) -> None:
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)


def test_walk_the_tour_with_the_keyboard(page, app_url):
    page.goto(f"{app_url}/tour?tour=1&presenter=1")
    step_shown(page, 1)
    press(page, "ArrowRight")
    step_shown(page, 2)
    press(page, " ")
    step_shown(page, 3)
    press(page, "ArrowLeft")
    step_shown(page, 2)
    dial = next(s.number for s in STEPS.steps if s.slug == "the-budget-is-a-dial")
    press(page, str(dial))                                  # a digit opens that step
    step_shown(page, dial)
    page.wait_for_url("**budget=2048**", timeout=15_000)    # ... and set the step's controls
    press(page, "ArrowLeft")
    step_shown(page, dial - 1)
    assert "budget=" not in page.url                        # back to the default budget
    # a key pressed inside the player moves the tour too (the player passes it on)
    frame = player(page)
    frame.locator("#chart").click()
    frame.locator("#chart").press("ArrowRight")
    step_shown(page, dial)


def test_a_steps_link_opened_fresh_sets_its_controls_and_points_at_its_moment(page, app_url):
    page.goto(f"{app_url}/tour?tour=4&presenter=1")
    step_shown(page, 4)
    frame = player(page)
    step = STEPS.step(4)
    assert frame.evaluate("window.playerState.t") == pytest.approx(0.02304)   # its first chunk
    boxes = frame.get_by_test_id("player-highlight")
    sync_api.expect(boxes).to_have_count(len(step.highlight))
    assert boxes.first.get_attribute("data-view") == "chunked_bars_view"
    outlined = boxes.first.evaluate("e => { const b = e.getBoundingClientRect(); "
                                    "return {y: b.top, height: b.height}; }")
    bars = frame.evaluate("""() => { const b = window.playerViewBox('chunked_bars_view'),
                                      c = document.querySelector('#chart').getBoundingClientRect();
                                      return {y: c.top + b.top, height: b.height}; }""")
    assert outlined["y"] <= bars["y"] and outlined["y"] + outlined["height"] >= bars["y"] + bars["height"]
    unchunked = frame.evaluate("window.playerViewBox('unchunked_rows_view').top")
    assert outlined["y"] > unchunked                        # the lower lane's, not the upper one's


@pytest.mark.parametrize("number", [1, 6, 8, 9],
                         ids=["longest-words", "numbers-and-lanes", "exercise", "burst"])
def test_a_step_on_a_projector_needs_no_scrolling(page, app_url, number):
    """The longest words, the four numbers over the lanes (scaled to fit), the exercise with its
    verdict, hint and answer buttons, the burst's panels (its caption before the guess)."""
    page.goto(f"{app_url}/tour?tour={number}&presenter=1")
    step_shown(page, number)
    main = page.get_by_test_id("stMain")
    assert main.evaluate("e => e.scrollHeight - e.clientHeight") <= 0
    if number != 9:
        frame = player(page)
        assert frame.evaluate("document.querySelector('#chart').scrollHeight "
                              "- document.querySelector('#chart').clientHeight") <= 0


def test_a_guess_then_its_reveal_plays_the_moment(page, app_url):
    page.goto(f"{app_url}/tour?tour=2&presenter=1")
    step_shown(page, 2)
    frame = player(page)
    assert frame.evaluate("({...window.playerState})") == {"t": 0, "playing": False}
    play = frame.locator("[data-testid=player-play]")
    assert play.is_disabled() and play.get_attribute("title") == STEPS.words["play_after_guess"]
    play.click(force=True)                                  # a click on it does nothing
    assert frame.evaluate("window.playerState.playing") is False
    page.get_by_text("300 ms", exact=True).click()
    feedback = page.locator(".st-key-tour-feedback")
    sync_api.expect(feedback).to_contain_text("Right.", timeout=15_000)
    sync_api.expect(feedback).to_contain_text("333 ms")
    settle(page)
    frame = player(page)
    stall_end = 0.32768 + 16e9 / 3e12                       # the streams' next token
    frame.wait_for_function(f"!window.playerState.playing && window.playerState.t > {stall_end - 1e-6}",
                            timeout=30_000)
    assert frame.evaluate("window.playerState.t") == pytest.approx(stall_end)
    assert frame.locator("[data-testid=player-play]").is_enabled()   # Play once guessed
    # on a projector the answer takes the place of the words before the question: no scrolling
    assert page.get_by_test_id("stMain").evaluate("e => e.scrollHeight - e.clientHeight") <= 0


def test_after_a_click_on_a_guess_the_arrow_moves_on(page, app_url):
    """The guess hands the keys back to the page: → goes to the next step, it does not change
    the guess (the choice the click focused would take the arrow)."""
    page.goto(f"{app_url}/tour?tour=5&presenter=1")
    step_shown(page, 5)
    page.locator(".st-key-guess-5").get_by_text("4", exact=True).click()
    feedback = page.locator(".st-key-tour-feedback")
    sync_api.expect(feedback).to_contain_text("Not quite.", timeout=15_000)
    settle(page)
    page.keyboard.press("ArrowRight")                       # no blur first: as a learner would
    step_shown(page, 6)


def test_the_arrows_on_a_guesss_choices_move_through_the_tour(page, app_url):
    """← and → on a choice move through the tour (↑ ↓ and space choose); no guess is made."""
    page.goto(f"{app_url}/tour?tour=2&presenter=1")
    step_shown(page, 2)
    page.locator(".st-key-guess-2 input").first.focus()
    page.keyboard.press("ArrowRight")
    step_shown(page, 3)
    page.keyboard.press("ArrowLeft")
    step_shown(page, 2)
    sync_api.expect(page.locator(".st-key-tour-feedback")).to_have_count(0)


def test_the_exercise_answers_at_once(page, app_url):
    page.goto(f"{app_url}/tour?tour=8&presenter=1")
    step_shown(page, 8)
    budget = page.get_by_label("Budget (tokens)", exact=True)
    feedback = page.locator(".st-key-tour-feedback")
    for pick, says in (("3100", "over 50 ms"), ("2048", "a tile larger still fits"),
                       ("3072", "counts")):
        budget.fill("")
        budget.press_sequentially(pick)          # digits typed in the field stay in the field:
        budget.press("Enter")                    # they do not jump to a chapter
        sync_api.expect(feedback).to_contain_text(says, timeout=15_000)
        page.wait_for_url(f"**budget={pick}**", timeout=15_000)   # the lanes and the link follow
        step_shown(page, 8)


def test_the_tour_gives_the_learners_scenario_back(page, app_url):
    """Off to the tour from a page with the learner's own values, and back: the values and
    the link are theirs again (the tour had set its own)."""
    page.goto(f"{app_url}/side_by_side?budget=1024&decodes=32")
    page.get_by_role("link", name="Guided tour").click()
    step_shown(page, 1)
    sync_api.expect(page.get_by_text("comes back when you leave the tour")).to_be_visible()
    assert "budget=" not in page.url
    page.get_by_role("link", name="Side by side").first.click()
    page.wait_for_url("**/side_by_side?**budget=1024**", timeout=15_000)
    assert "decodes=32" in page.url
    sync_api.expect(page.get_by_role("spinbutton", name="Token budget per iteration")).to_have_value("1024")


@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)], ids=["1280x720", "1440x900"])
def test_the_under_load_step_opens_with_its_question_and_its_chart_fits(new_tab, app_url, size):
    """On a projector the step's title and question come first (the lanes' notes after the
    figure), and once guessed the burst's two panels, axes included, are wholly on the screen."""
    page = new_tab(*size)
    page.goto(f"{app_url}/tour?tour=9&presenter=1")
    step_shown(page, 9)
    title = page.get_by_role("heading", name=f"9. {STEPS.step(9).title}").bounding_box()
    note = page.get_by_text("its own budget", exact=False).bounding_box()
    assert note["y"] > title["y"] or note["x"] > title["x"] + title["width"]
    page.locator(".st-key-guess-9").get_by_text("4 s", exact=True).click()
    sync_api.expect(page.locator(".st-key-tour-feedback")).to_contain_text("3.7 s", timeout=15_000)
    settle(page)
    chart = page.locator(".st-key-stage")                   # the burst chart, as drawn
    box = chart.bounding_box()
    assert box is not None and box["y"] + box["height"] <= size[1]
    assert page.get_by_test_id("stMain").evaluate("e => e.scrollTop") == 0


def test_the_tour_downloads_its_printable_handout(new_tab, app_url):
    """One click: the handout as one HTML page with every step's figure inside it."""
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/tour?tour=1")
    step_shown(page, 1)
    with page.expect_download(timeout=120_000) as caught:
        page.locator(".st-key-tour_handout button").first.click()
    saved = caught.value
    text = open(saved.path(), encoding="utf-8").read()
    assert saved.suggested_filename == "guided-tour-handout.html"
    assert text.startswith("<!DOCTYPE html>")
    assert text.count('src="data:image/png;base64,') == len(STEPS.steps)
