"""The traffic pages' family (Traffic, Budget trade-off, Capacity, Memory): their workload box
and uploads' parse, the runs of a workload under each policy, the sweep, the capacity search, the
KV figure, the overhead strip and their words."""
