"""`python -m sim exactness`: a tiny decoder's prompt prefilled in one pass and in chunks, compared.

JSON keys (`--json`): prompt, chunk, seed, chunks (how many), last_chunk (its tokens),
same_greedy_tokens, new_tokens, decoder (its shape); per dtype (float32, float64):
max_abs_diff_DTYPE (the larger of the hidden state's and the logits'), max_abs_diff_hidden_DTYPE,
max_abs_diff_logits_DTYPE, largest_logit_DTYPE, bit_identical_DTYPE,
greedy_tokens_one_pass_DTYPE, greedy_tokens_chunked_DTYPE, smallest_logit_margin_DTYPE,
machine_epsilon_DTYPE; with --search-s above 0, near_tie_search (seconds, elapsed_s, seeds_tried,
found, and found_seed with its tokens and margin where one was found, smallest_margin and its
seed).
"""

from __future__ import annotations

from sim.knobs import EXACTNESS_KNOBS
from sim.studies import exactness as ex

from .flags import knob_flag, paragraph
from .output import emit, table


def _diff(x: float) -> str:
    return "0 (bit-identical)" if x == 0 else f"{x:.3g}"


def _exactness(args) -> None:
    result = ex.exactness(args.prompt, args.chunk, args.seed, args.search_s)
    rows = [(a.dtype, _diff(a.max_abs_diff_hidden), _diff(a.max_abs_diff_logits),
             f"{a.largest_logit:.4g}", f"{ex.EPSILON[a.dtype]:.3g}",
             "same" if a.same_tokens else "DIFFERENT", f"{a.smallest_margin:.4g}")
            for a in result.by_dtype.values()]
    last = result.chunks[-1][1] - result.chunks[-1][0]
    cut = (f"in {len(result.chunks):,} chunks of up to {result.chunk:,} tokens (the last {last:,}), "
           "each chunk attending to the cached keys and values of the tokens before it and to its "
           "own" if len(result.chunks) > 1 else
           f"in 1 chunk (a chunk of {result.chunk:,} tokens holds the whole prompt: the one pass "
           "itself)")
    lines = [f"A {ex.LAYERS}-layer decoder ({ex.HEADS} heads of {ex.HEAD_DIM}, vocabulary "
             f"{ex.VOCAB}, random weights from seed {result.seed}) reads a {result.prompt:,}-token "
             f"prompt in one pass and {cut}.",
             table(rows, ("dtype", "max |diff| hidden", "max |diff| logits", "largest |logit|",
                          "machine epsilon", f"{ex.NEW_TOKENS} greedy tokens",
                          "smallest logit margin"), args.wide),
             f"Greedy tokens (float32, one pass): "
             f"{' '.join(map(str, result.by_dtype['float32'].tokens_one_pass))}"]
    if result.search:
        s = result.search
        found = (f"seed {s.found_seed} picks other greedy tokens (one pass "
                 f"{s.found.tokens_one_pass}, chunked {s.found.tokens_chunked})"
                 if s.found_seed is not None else "no seed whose greedy tokens differ")
        smallest = (f"; the smallest logit margin seen {s.smallest_margin:.4g} (seed "
                    f"{s.smallest_margin_seed})" if s.smallest_margin is not None else "")
        lines.append(f"Near-tie search: {s.seeds_tried:,} seeds after {result.seed} in "
                     f"{s.elapsed_s:.2f} s of a {s.seconds:g} s deadline, float32: {found}"
                     f"{smallest}.")
    emit(args, result.as_dict(), "\n".join(lines))


def register_exactness(sub) -> None:
    p = sub.add_parser("exactness", help="chunked prefill against one pass on a tiny decoder",
                       description=paragraph(f"""
        Chunking is exact: a tiny decoder ({ex.LAYERS} layers, {ex.HEADS} attention heads,
        RMSNorm, a KV cache, a {ex.VOCAB}-token vocabulary, random weights from --seed) reads a
        random prompt in one pass and in chunks of --chunk tokens, each chunk's queries attending
        to the keys and values the earlier chunks cached plus its own. Prints, in float32 and
        float64, the largest absolute difference between the two of the last position's hidden
        state and of its logits (0: bit-identical; otherwise the order of floating-point sums),
        whether {ex.NEW_TOKENS} greedily decoded tokens agree, and the smallest logit margin (top
        logit minus the second) among them; then, within --search-s seconds, searches the seeds
        after --seed for one whose float32 greedy tokens differ (a near tie) and says whether it
        found one."""))
    for knob in EXACTNESS_KNOBS.values():
        knob_flag(p, knob)
    p.set_defaults(func=_exactness)
