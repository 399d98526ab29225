"""The Chunking is exact page's words: why a chunked prefill computes what one pass does, what the
tiny decoder's run found (bit-identical or not, with its numbers) and where the two can differ.
Every sentence with a number is built here from the study's result (sim/studies/exactness.py),
chosen by what it found. Pure Python (no Streamlit)."""

from __future__ import annotations

from sim.studies.exactness import (
    EPSILON,
    HEAD_DIM,
    HEADS,
    LAYERS,
    NEW_TOKENS,
    VOCAB,
    Agreement,
    Exactness,
    NearTieSearch,
)
from sim.units import fmt_counted

from ..shell.glossary import first, term


def intro() -> str:
    """Why chunking changes nothing but the order of sums (Markdown with glossary marks)."""
    return (
        f"Does splitting a prompt into {term('chunk', 'chunks')} change what the model computes? "
        f"In a {term('prefill')}, every prompt token's query takes an "
        f"{term('attention_score')} against the key of each token at or before it: a triangle of "
        "scores, queries down, keys across. In one pass the whole triangle is one computation. "
        "In chunks, each chunk is one pass over a band of rows: its queries against the "
        f"{first('kv')} cache the earlier chunks wrote (the rectangle) and against its own keys, "
        "causally (the small triangle). Row by row these are the same scores, softmax weights "
        "and sums as in one pass, so the output is the same; only the order in which the "
        "computer adds the numbers up may change.")


def model_words(result: Exactness) -> str:
    return (f"A tiny decoder in numpy stands in for the model: {LAYERS} layers, {HEADS} attention "
            f"heads of {HEAD_DIM}, RMSNorm (each vector divided by its root mean square), a "
            f"{VOCAB}-token vocabulary and random weights (random seed: {result.seed:,}). It "
            f"reads a random {result.prompt:,}-token prompt in one pass and in "
            f"{cut_words(result)}, then decodes {NEW_TOKENS} tokens by {term('greedy')} after each.")


def cut_words(result: Exactness) -> str:
    """How the prompt is cut: the chunks, the last one's length."""
    count = len(result.chunks)
    if count == 1:
        return (f"1 chunk: a chunk of {result.chunk:,} tokens holds the whole prompt, so the "
                "chunked prefill is the one pass itself")
    last = result.chunks[-1][1] - result.chunks[-1][0]
    if last == result.chunk:
        return f"{count:,} chunks of {fmt_counted(result.chunk, 'token')}"
    return (f"{fmt_counted(count - 1, 'chunk')} of {fmt_counted(result.chunk, 'token')} and a last "
            f"one of {fmt_counted(last, 'token')}")


def relative(a: Agreement) -> float:
    """The logits' difference against the largest logit: rounding's own scale."""
    return a.max_abs_diff_logits / a.largest_logit if a.largest_logit else 0.0


def dtype_finding(a: Agreement) -> str:
    if a.bit_identical:
        return (f"in {a.dtype} the last hidden state and the {term('logit')} are bit-identical "
                "(difference 0)")
    eps = EPSILON[a.dtype]
    return (f"in {a.dtype} they differ by at most {a.max_abs_diff_logits:.3g} in the logits "
            f"(largest logit {a.largest_logit:.4g}: a relative difference of "
            f"{relative(a):.2g}, {relative(a) / eps:,.1f} × the machine epsilon {eps:.3g}) and "
            f"{a.max_abs_diff_hidden:.3g} in the last hidden state")


def finding(result: Exactness) -> str:
    """What the run found, with its numbers: bit-identical or rounding-sized, and the tokens."""
    float32, float64 = result.by_dtype["float32"], result.by_dtype["float64"]
    if all(a.bit_identical for a in result.by_dtype.values()):
        head = f"**Bit-identical.** {capital(dtype_finding(float32))}, and in float64 too."
    else:
        head = (f"**The same up to rounding.** {capital(dtype_finding(float32))}; "
                f"{dtype_finding(float64)}.")
    if result.same_greedy_tokens:
        tokens = (f" The {NEW_TOKENS} greedy tokens after the prompt are the same in both "
                  f"precisions: {' '.join(map(str, float32.tokens_one_pass))}.")
    else:
        differ = [a.dtype for a in result.by_dtype.values() if not a.same_tokens]
        tokens = (f" The greedy tokens differ in {' and '.join(differ)}: one pass "
                  f"{' '.join(map(str, result.by_dtype[differ[0]].tokens_one_pass))}, chunked "
                  f"{' '.join(map(str, result.by_dtype[differ[0]].tokens_chunked))}, a near tie "
                  "(below).")
    return head + tokens


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def differs_words(result: Exactness) -> str:
    """Where the two can differ: summation order, and a near tie in greedy decoding."""
    float32 = result.by_dtype["float32"]
    return (
        "Where they can differ: a softmax row is summed over all the keys a pass holds, and the "
        "products run over rows of another length in each pass, which numpy and the "
        "matrix-multiply library may add up in another order; floating-point addition is not "
        f"associative, so the last digits can change ({term('float_precision')}). That moves "
        "a logit by a few machine epsilons times its size (the relative differences above). "
        "Greedy decoding then picks another token only where the best two logits are closer than that: the smallest "
        f"{term('logit_margin')} among the {NEW_TOKENS} picks here is "
        f"{float32.smallest_margin:.3g} in float32, {margin_against(float32)}.")


def margin_against(a: Agreement) -> str:
    """The smallest margin against the logits' largest difference: how far from a flip."""
    if a.max_abs_diff_logits == 0:
        return "and the logits' difference is 0: no margin is small enough to flip"
    times = a.smallest_margin / a.max_abs_diff_logits
    shown = f"{times:,.0f}" if times >= 10 else f"{times:.2g}"
    return (f"{shown} times the logits' largest difference ({a.max_abs_diff_logits:.3g}) = "
            f"{a.smallest_margin:.3g} / {a.max_abs_diff_logits:.3g}")


def search_words(search: NearTieSearch, seed: int) -> str:
    """What the near-tie search found, found or not."""
    tried = fmt_counted(search.seeds_tried, "random seed")
    where = (f"the {tried} after this one (random seed: {seed:,}), tried in "
             f"{search.elapsed_s:.2f} s (deadline {search.seconds:g} s)")
    if search.found_seed is not None:
        a = search.found
        return (f"**Near tie found.** Of {where}, the decoder of random seed: "
                f"{search.found_seed:,} picks other greedy tokens in float32: one pass "
                f"{' '.join(map(str, a.tokens_one_pass))}, chunked "
                f"{' '.join(map(str, a.tokens_chunked))}; its smallest logit margin is "
                f"{a.smallest_margin:.3g} against a difference of {a.max_abs_diff_logits:.3g}.")
    smallest = (f" The smallest logit margin met was {search.smallest_margin:.3g} (random seed: "
                f"{search.smallest_margin_seed:,}), and its tokens agreed too."
                if search.smallest_margin is not None else "")
    return (f"**No near tie found.** In {where}, the float32 greedy tokens of one pass and of "
            f"the chunks agreed every time.{smallest}")


def table_rows(result: Exactness) -> list[dict[str, str]]:
    """One row per precision: the differences, the scale they are read against, the tokens."""
    rows = []
    for a in result.by_dtype.values():
        rows.append({
            "precision": a.dtype,
            "max |one pass − chunked|, hidden state": diff_text(a.max_abs_diff_hidden),
            "max |one pass − chunked|, logits": diff_text(a.max_abs_diff_logits),
            "largest |logit|": f"{a.largest_logit:.4g}",
            "relative = logits' diff / largest": f"{relative(a):.2g}",
            "machine epsilon": f"{EPSILON[a.dtype]:.3g}",
            f"{NEW_TOKENS} greedy tokens": "same" if a.same_tokens else "different",
            "smallest logit margin": f"{a.smallest_margin:.3g}",
        })
    return rows


def diff_text(x: float) -> str:
    return "0 (bit-identical)" if x == 0 else f"{x:.3g}"


UNITS = ("The hidden state and the logits are the model's own numbers, without a unit: a "
         "difference is read against their size (the relative difference) and against the "
         "machine epsilon of its precision, the relative spacing of its numbers near 1.")
SEARCH_INTRO = ("A near tie needs the best two logits closer together than the rounding differences "
                "in the table above. The search runs the same prompt length and chunk on the random "
                "seeds after this one, in float32, and stops at the first whose greedy tokens "
                "differ or at its deadline, which it keeps: a try that could run past it is not "
                "started, and one that does is given up.")
