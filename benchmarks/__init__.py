"""Benchmarks: `python -m benchmarks` (or `make bench`) prints medians measured in one run.

Targets are checked here, by a person reading the figures, never by timed assertions in tests:
the machines are shared and noisy. Each module in SUITES exposes `cases()`, a list of
(name, target seconds or None, zero-argument callable).
"""
