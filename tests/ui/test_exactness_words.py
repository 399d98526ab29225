"""The Chunking is exact page's words (ui/learn/exactness_words.py) against the study over random
prompts, chunks and seeds: each claim holds for the numbers it is built from."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.studies import exactness as ex
from ui.learn import exactness_words as words


def plain(markdown: str) -> str:
    return re.sub(r"<[^>]+>", "", markdown)


@settings(max_examples=25, deadline=None)
@given(prompt=st.integers(1, 400), chunk=st.integers(1, 450), seed=st.integers(0, 1000))
def test_what_the_words_claim_holds_for_the_numbers(prompt, chunk, seed):
    result = ex.exactness(prompt, chunk, seed)
    found = plain(words.finding(result))
    identical = all(a.bit_identical for a in result.by_dtype.values())
    assert found.startswith("**Bit-identical.**") == identical
    assert found.startswith("**The same up to rounding.**") == (not identical)
    if len(result.chunks) == 1:   # one chunk is the one pass itself: nothing to differ
        assert identical
    assert ("are the same in both precisions" in found) == result.same_greedy_tokens
    for a in result.by_dtype.values():
        if not a.bit_identical:
            assert f"{a.max_abs_diff_logits:.3g} in the logits" in found
            # "a few machine epsilons times its size"
            assert words.relative(a) / ex.EPSILON[a.dtype] < 100
    differs = plain(words.differs_words(result))
    assert f"is {result.by_dtype['float32'].smallest_margin:.3g} in float32" in differs
    cut = plain(words.model_words(result))
    if len(result.chunks) > 1:   # the chunks said add up to the prompt, and count every chunk
        said = re.search(r"([\d,]+) chunks? of ([\d,]+) tokens?(?: and a last one of ([\d,]+) "
                         r"tokens?)?", cut)
        full, size, last = (int((g or "0").replace(",", "")) for g in said.groups())
        assert size == chunk and full * size + last == prompt
        assert full + (last > 0) == len(result.chunks)


def test_the_search_says_found_or_not_with_its_seeds_and_deadline():
    none = ex.NearTieSearch(2.0, 1.5, 30, None, None, 0.01, 17)
    text = words.search_words(none, 3)
    assert text.startswith("**No near tie found.** In the 30 random seeds after this one (random "
                           "seed: 3), tried in 1.50 s (deadline 2 s)")
    assert "0.01 (random seed: 17)" in text
    a = ex.Agreement("float32", 1e-7, 2e-6, 9.0, [1, 2], [3, 2], 1e-6)
    found = words.search_words(ex.NearTieSearch(2.0, 0.5, 4, 7, a, 1e-6, 7), 3)
    assert found.startswith("**Near tie found.** Of the 4 random seeds after this one")
    assert ("random seed: 7 picks other greedy tokens in float32: one pass 1 2, chunked 3 2"
            in found)
