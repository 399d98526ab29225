"""The Chunking is exact picture (charts/exactness.py): the chunks' bands cover exactly the scores
of the one pass's triangle, each band its own keys and the cache before it, drawn in the prefill
colour alone."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from charts.exactness import CACHED, CHUNKED, ONE_PASS, OWN, bands_frame, score_map
from charts.theme import Look
from sim.studies.exactness import chunk_bounds


@given(prompt=st.integers(1, 4096), chunk=st.integers(1, 4096))
def test_the_chunks_compute_every_score_of_the_one_pass_once(prompt, chunk):
    bands = bands_frame(prompt, chunk_bounds(prompt, chunk))
    triangle = prompt * (prompt + 1) // 2          # query i sees keys 0 .. i
    by_pass = bands.groupby("computation").scores.sum()
    assert by_pass[ONE_PASS] == by_pass[CHUNKED] == triangle
    chunked = bands[bands.computation == CHUNKED]
    own = chunked[chunked.attends_to == OWN]
    assert list(own.first_query) == [s for s, _ in chunk_bounds(prompt, chunk)]
    cached = chunked[chunked.attends_to == CACHED]
    # a chunk after the first reads every key before it from the cache
    assert (cached.end_key == cached.first_query).all() and (cached.first_key == 0).all()
    assert len(cached) == len(own) - 1


@pytest.mark.parametrize("look", [Look(), Look(dark=True), Look(contrast=True),
                                  Look(presenter=True)], ids=["light", "dark", "contrast", "presenter"])
def test_every_mark_wears_the_prefill_colour(look):
    spec = score_map(bands_frame(100, chunk_bounds(100, 30)), look).spec()
    colours = {tuple(s["scale"]["range"]) for s in _colour_encodings(spec)}
    assert colours == {(look.prefill, look.prefill)}


def _colour_encodings(spec):
    text = json.dumps(spec)
    found = []
    for panel in spec["hconcat"]:
        for layer in panel["layer"]:
            colour = layer.get("encoding", {}).get("color")
            if colour and "field" in colour:
                found.append(colour)
    assert found and "in chunks: 4 passes" in text
    return found
