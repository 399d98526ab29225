"""The pages that serve one workload on several GPUs (Disaggregation): their runs, figures and
words."""
