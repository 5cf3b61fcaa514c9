"""Parse stage, text logs: NCCL_DEBUG lines, PyTorch/gloo/torchrun/RAS lines and application output.

`reader` streams numbered lines; `peel` splits prefixes; `match` assigns grammar families; `lane`
and `transform` type the fields into `LogFrames`; `read.read_logs` runs them over a set of files.
"""
