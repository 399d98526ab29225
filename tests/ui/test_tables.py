"""ui.shell.widgets.table: a table of text as one Markdown element, read back by the tests' `tables`."""

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.support.apptest import is_table
from ui.shell.widgets import markdown_table

FRAME = pd.DataFrame({"formula": ["a | b", "2 × 3"], "result": ["1\nline", "6"]},
                     index=pd.Index(["first", "second"], name="step"))


def test_the_head_is_the_index_name_and_the_columns_and_each_row_one_line():
    lines = markdown_table(FRAME).split("\n")
    assert lines[0] == "| step | formula | result |"
    assert lines[1] == "| --- | --- | --- |"
    assert lines[2:] == [r"| first | a \| b | 1 line |", "| second | 2 × 3 | 6 |"]
    assert is_table(markdown_table(FRAME))


def test_a_frame_without_an_index_name_has_an_empty_first_head_cell():
    assert markdown_table(FRAME.rename_axis(None)).startswith("|  | formula | result |")


def test_what_the_page_draws_reads_back_as_the_frame_shown():
    """Drawn by Streamlit and read back through AppTest's Markdown: a pipe in a cell stays in its
    cell, a line break becomes a space."""
    def page():
        import pandas as pd

        from ui.shell.widgets import table
        table(pd.DataFrame({"formula": ["a | b", "2 × 3"], "result": ["1\nline", "6"]},
                           index=pd.Index(["first", "second"], name="step")))
    from tests.support.apptest import tables
    at = AppTest.from_function(page).run()
    (shown,) = tables(at)
    expected = FRAME.assign(result=["1 line", "6"])
    pd.testing.assert_frame_equal(shown, expected)
