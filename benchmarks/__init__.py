"""Benchmarks: `python -m benchmarks` (or `make bench`) prints medians measured in one run.

Targets are checked here, by a person reading the figures, never by timed assertions in tests:
the machines are shared and noisy. Each module in SUITES exposes `cases(small=False)`, a list
of (name, target seconds or None, zero-argument callable); `small` gives the same cases at a
smoke test's size (`python -m benchmarks --smoke`, which `make test` runs).
"""
