"""The simulator's own effort, bounded before a run starts: what a run will count and what that
costs this machine in CPU seconds and memory (estimate), and the iteration caps that keep a
command's runs within its allowance (caps). Not part of the serving model: `sim.serving` never
imports it (an import contract in pyproject.toml), and the studies are told "may I start another
run" and "a run finished" by callbacks."""
