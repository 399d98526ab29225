"""A trace file's optional class column: read into the workload's classes, checked row by row."""

import pytest

from sim.errors import InputError
from sim.serving.trace_files import MAX_CLASSES, load_trace
from sim.serving.workloads import CLASS_NAME_RULE, Lengths, RequestClass, parse_mix

HEADER = "arrival_s,prompt_tokens,output_tokens,class\n"


def test_the_class_column_gives_each_request_its_class_in_arrival_order():
    w = load_trace((HEADER + "0.5,100,4,documents\n0.1,20,8,chat\n0.3,30,8, chat \n").encode())
    assert w.classes == ("chat", "documents")
    assert w.class_labels().tolist() == ["chat", "chat", "documents"]
    assert w.prompt.tolist() == [20, 30, 100]


def test_a_trace_without_the_column_has_no_classes_and_a_class_changes_its_digest():
    plain = load_trace(b"arrival_s,prompt_tokens,output_tokens\n0,10,2\n")
    assert plain.classes == () and plain.request_class is None
    assert load_trace((HEADER + "0,10,2,a\n").encode()).digest != plain.digest


@pytest.mark.parametrize("row, named", [
    ("0,10,2,", "row 3, column class: empty"),
    ("0,10,2,<b>x</b>", "row 3, column class: '?b?x??b?' is not a class name"),
    ("0,10,2," + "x" * 33, "is not a class name"),
])
def test_a_bad_class_is_refused_naming_its_row(row, named):
    with pytest.raises(InputError, match=named.replace("?", r"\?")):
        load_trace((HEADER + "0,10,2,fine\n" + row + "\n").encode())


def test_a_trace_holds_at_most_sixteen_classes():
    rows = [f"0,10,2,c{i}\n" for i in range(MAX_CLASSES + 1)]
    with pytest.raises(InputError, match=f"row {MAX_CLASSES + 2}, column class: 'c16' would be "
                                         f"class {MAX_CLASSES + 1}"):
        load_trace((HEADER + "".join(rows)).encode())
    most = load_trace((HEADER + "".join(rows[:-1]) + "1,10,2,c0\n").encode())
    assert len(most.classes) == MAX_CLASSES


def test_a_class_name_is_one_check_for_a_trace_a_mix_spec_and_a_class():
    """The same bad name is refused in the same words wherever it comes from, after where."""
    said = f"'a b' is not a class name; a class name is {CLASS_NAME_RULE}"
    with pytest.raises(InputError) as traced:
        load_trace((HEADER + "0,10,2,a b\n").encode())
    with pytest.raises(InputError) as spec:
        parse_mix("a b:1:100:10")
    with pytest.raises(InputError) as built:
        RequestClass("a b", 1.0, Lengths(100, 100), Lengths(10, 10))
    assert str(traced.value) == f"row 2, column class: {said}"
    assert str(spec.value) == f"mix class: {said}"
    assert str(built.value) == f"request class: {said}"
