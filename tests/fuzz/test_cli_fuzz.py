"""A slice of the CLI fuzz suite inside `make test` (the full run is `make fuzz`, which explores): a
fixed draw of command lines, so CI is repeatable, every one a clean run or a clean refusal within the
command budget; and the classifier itself, which must not call a bad case clean."""

import shutil

import pytest

from harness.bounded import Outcome
from tests.fuzz import cli, echo, files, headers, outputs
from tests.fuzz.report import Result, summary

SLICE = 20
SEED = 2026   # fixed: a new finding belongs to `make fuzz --seed S`, then to a regression test


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    cli.make_scratch(str(folder))
    return str(folder)


def test_a_slice_of_fuzzed_command_lines_ends_cleanly(scratch):
    results = [cli.run(argv, scratch) for argv in cli.generate(SLICE, SEED)]
    assert len(results) == SLICE
    failures = [r for r in results if not r.clean]
    assert not failures, f"seed {SEED}:\n" + summary(failures)


@pytest.mark.parametrize("code, stdout, stderr, verdict", [
    (0, "TTFT 1.2 ms\n", "", "clean run"),
    (2, "", "error: --prompt must be ≥ 1, got −1000\n", "clean refusal"),
    (None, "", "", "hang"),
    (1, "", "Traceback (most recent call last):\n  ...\nZeroDivisionError: float division\n",
     "traceback"),
    (2, "", "error: one\nerror: two\n", "unclear refusal"),
    (2, "partial table", "error: late\n", "unclear refusal"),
    (0, "budget 576: TTFT increase  nan%\n", "", "nonsense"),
    (0, "stall reduction  infx\n", "", "nonsense"),
    (0, "time " + "1," * 40 + "000 s\n", "", "nonsense"),
    (0, "fine\n", "RuntimeWarning: divide by zero\n", "stderr noise"),
    (0, "x" * 121 + "\n", "", "too wide"),
    (-9, "", "", "exit -9"),
])
def test_the_classifier_names_what_went_wrong(code, stdout, stderr, verdict):
    assert cli.classify(code, stdout, stderr, json_out=False, wide=False)[0] == verdict


@pytest.mark.parametrize("code, stdout, stderr, verdict", [
    (2, "", "error: unrecognized arguments: --x\x1b[31m\n", "raw control character"),
    (2, "", "error: unrecognized arguments: '--x\\x1b[31m'\n", "clean refusal"),
    (2, "", "error: --policy: 'sarathi\u202e'\n", "raw control character"),
    (2, "", "error: --policy: 'sarathi\\u202e'\n", "clean refusal"),
    (0, "wrote 'x\x07.svg'\n", "", "raw control character"),
    (0, "wrote 'x\\x07.svg'\n", "", "clean run"),
    (2, "", "error: line one\u2028line two\n", "raw control character"),
])
def test_a_raw_control_character_in_what_is_printed_is_a_failure(code, stdout, stderr, verdict):
    assert cli.classify(code, stdout, stderr, json_out=False, wide=False)[0] == verdict


def test_json_with_nan_or_null_is_not_a_clean_run():
    assert cli.classify(0, '{"ttft_s": NaN}', "", json_out=True, wide=False)[0] == "bad json"
    assert cli.classify(0, '{"ttft_s": {"p50": null}}', "", json_out=True,
                        wide=False)[0] == "null in json"
    assert cli.classify(0, '[{"ttft_s": 1.5}]', "", json_out=True, wide=False)[0] == "clean run"


def test_a_clean_case_over_the_budget_is_a_failure():
    slow = Result("cli", "python -m sim simulate", "over budget", 95.0, 75.0, 10)
    assert not slow.clean and "1 failures" in summary([slow])


def test_the_draw_is_reproducible_and_covers_every_command():
    first, again = cli.generate(60, 7), cli.generate(60, 7)
    assert first == again and len(first) == 60
    assert {argv[0] for argv in cli.generate(200, 1)} == set(cli.COMMANDS)


# --- the hostile-output families: output errors, special files, wide headers ------------------
def outcome(code, stdout="", stderr="", cpu=0.2):
    return Outcome(("x",), code, stdout, stderr, 1.0, cpu, 10)


@pytest.mark.parametrize("sink, result, verdict", [
    ("full", outcome(1, stderr="error: cannot write the output: No space left on device\n"),
     "clean output error"),
    ("full", outcome(1, stderr="Traceback (most recent call last):\nOSError: [Errno 28]\n"),
     "traceback"),
    ("full", outcome(0), "exit 0"),
    ("closed", outcome(1, stderr="error: standard output is closed; give ...\n"),
     "clean output error"),
    ("closed", outcome(1, stderr="Exception ignored in: <_io.TextIOWrapper name='<stdout>'>\n"),
     "traceback"),
    ("closed-both", outcome(1), "clean output error"),
    ("closed-both", outcome(0), "exit 0"),
    ("head", outcome(141), "clean run"),
    ("head", outcome(120, stderr="BrokenPipeError\n"), "exit 120"),
    ("pipe", outcome(0, stdout="wrote x\n"), "written"),
    ("pipe", outcome(2, stderr="error: --out is a file git tracks\n", cpu=30.0),
     "refused after the work"),
    ("pipe", outcome(2, stderr="error: --out is a file git tracks\n"), "clean refusal"),
])
def test_the_output_errors_classifier_names_what_went_wrong(sink, result, verdict):
    assert outputs.classify(sink, ("simulate",), result)[0] == verdict


@pytest.mark.parametrize("family, cases", [(outputs, 4), (files, 3), (headers, 3), (echo, 3)])
def test_a_slice_of_each_new_family_ends_cleanly(family, cases, tmp_path):
    if family is outputs and shutil.which("git") is None:
        pytest.skip("git is missing: the output family's tracked file needs a repository")
    family.make_scratch(str(tmp_path))
    results = [family.run(case, str(tmp_path)) for case in family.generate(cases, SEED)]
    assert len(results) == cases
    failures = [r for r in results if not r.clean]
    assert not failures, f"seed {SEED}:\n" + summary(failures)


@pytest.mark.parametrize("case", [
    ("pipe", ("simulate", "--trace-out", "@repo/.git/index", "--force"), "", ""),
    ("pipe", ("export", "--out", "@repo/Makefile"), "other owner", ""),
    ("pipe", ("simulate", "--requests-out", "@repo/Makefile"), "GIT_DIR broken", ""),
    ("pipe", ("simulate", "--trace-out", "@repo/out/hard.csv"), "no git", ""),
    ("pipe", ("simulate", "--trace-out", "@broken/notes.csv"), "", ""),
    ("pipe", ("simulate", *outputs.HEAVY["simulate"], "--trace-out", "@folder/missing/../x.csv"), "",
     ""),
    ("pipe", ("simulate", "--trace-out", "@plain.csv", "--requests-out", "@plain-hard.csv"), "", ""),
    ("pipe", outputs.DEFAULT_EXPORTS[1], "", "fifo"),
    ("pipe", outputs.DEFAULT_EXPORTS[1], "", "out is a file"),
])
def test_the_output_family_covers_the_guard_and_the_paths_the_system_resolves(case, tmp_path):
    """Cases that overwrote a tracked file or .git/index, hung, or were refused after the work."""
    if shutil.which("git") is None:
        pytest.skip("git is missing: the output family's tracked file needs a repository")
    outputs.make_scratch(str(tmp_path))
    result = outputs.run(case, str(tmp_path))
    assert result.verdict == "clean refusal", result


def test_proc_kmsg_and_a_fifo_are_refused_by_the_special_files_family(tmp_path):
    files.make_scratch(str(tmp_path))
    for path in ("/proc/kmsg", "@fifo", "@to-kmsg"):
        result = files.run(("simulate", "--trace-in", path), str(tmp_path))
        assert result.verdict == "clean refusal", result


def test_a_header_over_the_limit_that_runs_is_a_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(headers, "run_sim", lambda *a, **k: outcome(0, stdout='{"requests": 1}'))
    result = headers.run(("arrival_s,prompt_tokens,output_tokens," + "x," * 200 + "\n0,1,1\n",
                          203), str(tmp_path))
    assert result.verdict == "too wide accepted"
