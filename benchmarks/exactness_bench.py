"""Chunking is exact: the tiny decoder's prompt in one pass and in chunks, in float32 and float64,
with its greedy tokens (sim/studies/exactness.py, what `python -m sim exactness --search-s 0`
computes; the near-tie search is bounded by its own deadline)."""

from sim.studies.exactness import DEFAULT_CHUNK, MAX_PROMPT, exactness


def cases(small: bool = False):
    """`small`: a smoke test's 256-token prompt."""
    prompt = 256 if small else MAX_PROMPT
    return [(f"exactness, a {MAX_PROMPT:,}-token prompt, one pass + chunks of {DEFAULT_CHUNK} "
             "(float32 + float64)", 2.0, lambda: exactness(prompt, DEFAULT_CHUNK))]
