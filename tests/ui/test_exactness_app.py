"""The Chunking is exact page (pages/learn/exactness.py) in AppTest: its picture, its words and
table from the study's own numbers, its controls in the link, and the near-tie search on request."""

import json

from sim.studies.exactness import exactness
from tests.support.apptest import as_read, assert_clean, charts, open_app, shown
from ui.learn import exactness_words

PAGE = "pages/learn/exactness.py"


def test_the_page_draws_both_computations_and_says_what_the_study_found():
    at = open_app(PAGE, exprompt=300, exchunk=100, exseed=2)
    assert_clean(at)
    assert at.header[0].value == "Chunking is exact"
    [spec] = charts(at)   # compiled to Vega on the server
    assert "one pass: 1 pass" in json.dumps(spec) and "in chunks: 3 passes" in json.dumps(spec)
    bands = next(d["values"] for d in spec["data"] if d["name"] == "bands")
    assert len(bands) == 1 + 3 + 2   # the one pass; each chunk's own keys, two against a cache
    result = exactness(300, 100, 2)
    text = shown(at)
    assert exactness_words.finding(result) in text
    assert exactness_words.differs_words(result) in text
    table = next(m.value for m in at.markdown if m.value.startswith("| precision"))
    for row in exactness_words.table_rows(result):
        assert f"| {row['precision']} | {row['max |one pass − chunked|, hidden state']} |" in table


def test_a_chunk_as_long_as_the_prompt_is_bit_identical_on_the_page():
    at = open_app(PAGE, exprompt=50, exchunk=4096)
    assert_clean(at)
    assert "**Bit-identical.**" in shown(at)
    assert "1 chunk: a chunk of 4,096 tokens holds the whole prompt" in shown(at)


def test_out_of_range_values_in_the_link_are_corrected_with_a_note():
    at = open_app(PAGE, exprompt=5000, exchunk=0)
    assert_clean(at)
    assert at.number_input(key="exprompt").value == 4096
    assert at.number_input(key="exchunk").value == 1
    notes = as_read(shown(at))
    assert "exprompt=“5000” in the link is above the maximum 4,096" in notes
    assert "exchunk=“0” in the link is below the minimum 1" in notes


def test_the_near_tie_search_runs_on_its_button_and_says_found_or_not():
    at = open_app(PAGE, exprompt=32, exchunk=8)
    assert "No near tie found" not in shown(at) and "Near tie found" not in shown(at)
    at.button(key="exactness_search").click().run(timeout=60)
    assert_clean(at)
    text = shown(at)
    assert ("**No near tie found.**" in text) != ("**Near tie found.**" in text)
    # another prompt is another question: its answer waits for the button again
    at.number_input(key="exprompt").set_value(40).run()
    assert "near tie found" not in shown(at).lower().replace("looking for a near tie", "")
