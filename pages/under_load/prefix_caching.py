"""Prefix caching: requests that share a prompt's start, served with the cache off and on."""

import pandas as pd
import streamlit as st

from sim.serving.policies import get_policy
from ui.shell import presenter, widgets
from ui.shell.controls import CONTROLS
from ui.shell.glossary import first, term
from ui.under_load import prefix_caching
from ui.under_load import prefix_caching_words as words

s = widgets.scenario()
look = widgets.look()
spec = get_policy(s.chunked)
engine, block = spec.engine, spec.profile.kv_block_tokens

st.header("Prefix caching")
st.markdown(
    f"Many prompts start alike: a shared system prompt, a conversation's earlier turns. With "
    f"**{term('prefix_caching')}**, an engine keeps the {first('kv')} cache of each full "
    f"{term('kv_block', 'block')}: here, as in vLLM V1, another request can read a block as soon "
    f"as the chunk that fills it has run, while its own request still runs, and the block stays "
    f"cached after that request ends. A later prompt that begins with the same tokens reads "
    f"those blocks (a {term('cache_hit')}) instead of computing them: only the rest is "
    f"prefilled and chunked. Cached blocks nobody reads count as free memory, dropped by "
    f"{term('lru')} when a block is needed. vLLM V1 ships it on (hashed 16-token blocks), and "
    f"SGLang (its {term('radix_cache')}, 1-token pages). Here the same requests are served by the "
    f"sidebar's chunked engine, {engine}, with the cache off and on, at the sidebar's GPU, model, "
    f"cost mode and token {term('budget', 'budget')}: the prompt tokens each computes, and each "
    f"request's {first('ttft')}.", unsafe_allow_html=True)
if not spec.profile.prefix_caching:
    st.info(f"{engine} ships prefix caching off: its run with the cache on is a what-if, the "
            "lab's rules (vLLM V1's) applied to its scheduler. Pick vLLM V1 or SGLang in the "
            "sidebar for an engine that caches.", icon=":material/science:")
with st.container(border=True):
    prefix, share, order, arrivals, requests, qps, prompt, output, seed = (
        widgets.widget(CONTROLS[k], c) for k, c in zip(
            ("prefix", "pshare", "order", "arrivals", "requests", "qps", "plen", "olen", "seed"),
            (*st.columns(3), *st.columns(3), *st.columns(3))))
    when = (f"Poisson arrivals at {qps:g} requests/s (random seed: {seed})"
            if arrivals == "poisson" else
            f"all arriving at time 0 (a burst: the rate is not used; random seed: {seed})")
    st.caption(f"{requests:,} requests, {when}; each prompt {prompt:,} drawn tokens and "
               f"{output:,} output tokens, and "
               + ("every one" if share >= 1 else f"each with chance {share:g}")
               + f" begins with the same {prefix:,}-token system prompt (its prompt then "
               f"{prefix + prompt:,} tokens). Waiting order: "
               f"{CONTROLS['order'].name(order)}.")

served_workload = prefix_caching.workload(arrivals, requests, qps, seed, prompt, output, prefix,
                                          share)
served = prefix_caching.runs(s, served_workload, order)
off, on = served.outcome("off"), served.outcome("on")
sharing = words.sharing(served_workload)
ideal = words.ideal_hits(served_workload, block)
said = words.claims(off, on, ideal, sharing, requests)

label = f"{engine}, caching on" + ("" if spec.profile.prefix_caching else " (a what-if)")
st.subheader(label)
with presenter.figure():
    prefix_caching.draw(served, look)
st.caption(
    "Above: each new request's prompt tokens, those it computed (prefill orange) and those it "
    "read from the cache (the same orange, faint). Below: the KV pool at each iteration's end, "
    "what running requests hold (grey) and what cached blocks nobody reads hold (faint orange: "
    "free memory the next request may find, or LRU evicts). Hover a bar for its numbers.")
verdict = words.verdict(off, on, said.regime, sharing, *words.shared_prompt(served_workload),
                        block, served.traces["on"].budget)
st.markdown("\n".join(f"- {c}." for c in said.sentences) + f"\n\n{verdict}")
if sharing:
    st.markdown(f"A request that shares: {words.hit_formula(prefix, prefix + prompt, block)} "
                f"({engine}'s block: {block} token{'s' if block > 1 else ''}).")

st.subheader("Off and on")
widgets.table(pd.DataFrame(words.table_rows(off, on), index=["caching off", "caching on"]).T)
st.caption(
    "Prompt tokens computed: every prefill chunk's tokens (a recomputation after a preemption "
    "included). Read from the cache: each admission's hit. Hit rate = hits / prompt tokens looked "
    f"up, every admission's (vLLM's prefix cache hit rate). {term('ttft')}: a request's first "
    "token − its arrival; p50 and p99 by linear interpolation between ranked values. The last "
    "row: the largest KV held at an iteration's end by cached blocks no running request reads.",
    unsafe_allow_html=True)
