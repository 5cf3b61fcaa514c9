"""Parse stage, torch.profiler Chrome traces: `decode` (one file), `workers` (a process pool over
files), `events` (typed rows), `link` (kernels ↔ launches ↔ c10d ops), `read.read_traces` (all).
"""
