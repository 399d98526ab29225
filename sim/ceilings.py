"""The largest values any run accepts, named once. The engine and the workload generators check
them; the command line's flags and the app's controls take their ranges from the knob table
(sim/knobs.py), which starts from them and narrows a surface's range only with a stated reason."""

MAX_TOKENS = 10_000_000   # a prompt, an output, a cached context, a token budget
MAX_REQUESTS = 1_000_000  # requests in a workload, running at once (max_seqs), mid-prefill at once
MAX_STREAMS = 100_000     # requests already streaming, prompts arriving in one burst
