"""Serving: the schedulers as policies, the engine that runs them (clock, KV pool, tokens), the
workloads they serve and the metrics of a run."""
