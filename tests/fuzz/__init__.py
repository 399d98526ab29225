"""Fuzz suites: `make fuzz` runs `python -m tests.fuzz`, every suite in `tests.fuzz.__main__.SUITES`
with at least 500 cases each; `make test` runs a small slice of each (tests/fuzz/test_*.py).

A suite is a module with `generate(cases, seed) -> list` (hypothesis draws the cases) and
`run(case, scratch) -> Result` (one case, bounded in time and memory); `report.py` classifies and
prints. Every case must end as a clean run or a clean refusal; anything else (a traceback, a hang,
a crash, nonsense in the output, a case over the time or memory budget) is a failure.
"""
