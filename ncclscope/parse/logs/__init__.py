"""Parse stage, text logs: NCCL_DEBUG lines, PyTorch/gloo/torchrun/RAS lines and application output.

Three packages, each behind one seam: `lines/` (what a line means: a batch of lines to typed rows),
`keep/` (what a big input is reduced to, and why: `KeepPolicy`), `engine/` (bytes, pieces and worker
processes, knowing nothing about NCCL). `reduce.reduce_piece` binds them for one piece, `merge` joins the
pieces' facts, and `read.read_logs` runs them over a set of inputs.
"""
