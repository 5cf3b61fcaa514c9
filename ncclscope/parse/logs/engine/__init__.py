"""Parse stage, the engine: bytes to numbered lines, pieces of work, worker processes, stdin's spool.

It knows nothing about NCCL: `reader` streams any input (compressed, re-encoded, stdin) as numbered lines,
`pieces` cuts a set of inputs into units of work, `pool`/`spawn`/`worker` run any picklable reduction
over them on worker processes, `spool` keeps stdin readable twice. It imports neither `lines/` nor
`keep/` (a test pins it); `reduce.py` and `merge.py` above it bind the three together.
"""
