"""The Worked example's last chunk (AppTest): priced in the sidebar's cost mode, with its tokens,
the rows its GEMMs compute, the empty ones and their time in the calibrated mode; none in the
simple mode, where the textbook prompt's last chunk is as full as the others. Its picture joins
the page's downloads."""

from tests.support.apptest import assert_clean, open_app, shown, tables

WORKED = "pages/learn/worked_example.py"


def test_a_ragged_last_chunk_in_the_calibrated_mode_shows_its_empty_rows():
    """Budget 1,010 beside 64 decodes: chunks of 946, eight leave 624; 688 tokens compute 704."""
    at = open_app(WORKED, gpu="h100-sxm", mode="calibrated", budget=1010)
    assert_clean(at)
    text = shown(at)
    assert "The last chunk, and its empty tile rows" in text
    assert "After 8 full chunks of 946 tokens, the last holds the **624 tokens left**" in text
    assert "its iteration carries 688 tokens (the 64 decodes and the chunk)" in text
    assert "⌈688 / 64⌉ × 64 = **704 rows**, 16 of them empty, which take" in text
    (rows,) = [t for t in tables(at) if "Last chunk: rows its matrix products compute" in t.index]
    assert rows.loc["Last chunk: rows its matrix products compute", "result"] == "704 rows"
    assert rows.loc["Last chunk: empty rows", "result"] == "16 rows"
    downloads = {b.proto.label for b in at.get("download_button")
                 if "download_worked_last-chunk_" in b.proto.id}
    assert downloads == {"PNG", "SVG", "CSV", "JSON"}


def test_the_simple_mode_has_no_tiles_and_the_textbook_last_chunk_is_full():
    at = open_app(WORKED)
    assert_clean(at)
    text = shown(at)
    assert "The last chunk: a full one" in text
    assert "16 × 512 is the whole prompt, so the last chunk is as full as the others" in text
    assert "takes **23.04 ms** in the simple mode" in text
    assert "The simple mode has no tiles" in text and "tiles of 64 would hold them exactly" in text


def test_no_room_for_a_chunk_no_last_chunk():
    at = open_app(WORKED, budget=32)
    assert_clean(at)
    assert "The last chunk" not in shown(at)
