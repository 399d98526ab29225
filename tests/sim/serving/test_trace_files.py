"""Loading a trace file: from bytes or a path, arrivals sorted; an error names its row and column,
never echoes markup, and caps rows and bytes."""

import re

import pytest

from sim.errors import InputError
from sim.serving.trace_files import COLUMNS, MAX_ROWS, load_trace

HEADER = ",".join(COLUMNS) + "\n"


def test_trace_loads_from_bytes_and_path_and_sorts_arrivals(tmp_path):
    data = (HEADER + "2.5,300,7\n0.5,100,5\n1,200,6\n").encode()
    path = tmp_path / "trace.csv"
    path.write_bytes(data)
    for source in (data, str(path)):
        w = load_trace(source)
        assert w.arrival_s.tolist() == [0.5, 1.0, 2.5]
        assert w.prompt.tolist() == [100, 200, 300] and w.output.tolist() == [5, 6, 7]


@pytest.mark.parametrize("body, where", [
    ("arrival_s,prompt_tokens\n0,10\n", "row 1 (header): missing column output_tokens"),
    (HEADER + "0,10,5\n-1,10,5\n", "row 3, column arrival_s"),
    (HEADER + "0,10,5\n1,ten,5\n", "row 3, column prompt_tokens"),
    (HEADER + "0,10,0\n", "row 2, column output_tokens"),
    (HEADER + "0,10.5,3\n", "row 2, column prompt_tokens"),
    (HEADER + "0,10\n", "row 2, column output_tokens"),
])
def test_trace_errors_name_row_and_column(body, where):
    with pytest.raises(InputError, match=re.escape(where)):
        load_trace(body.encode())


def test_trace_caps_rows_and_bytes_and_never_echoes_markup():
    with pytest.raises(InputError, match=f"row {MAX_ROWS + 2}: .*more than 100,000"):
        load_trace((HEADER + "0,1,1\n" * (MAX_ROWS + 1)).encode())
    with pytest.raises(InputError, match="limit is 5,000,000"):
        load_trace(b" " * 5_000_001)
    with pytest.raises(InputError) as error:
        load_trace((HEADER + '0,"<img src=x onerror=alert(1)>",1\n').encode())
    assert "row 2, column prompt_tokens" in str(error.value)
    assert not set("<>\"=()") & set(str(error.value).split(":", 1)[1])
