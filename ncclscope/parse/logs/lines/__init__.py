"""Parse stage, log lines: pure functions from a batch of numbered lines to typed rows.

What a line means lives here and only here: NCCL's prefix and launcher wrappers (`peel`, `prepare`), the
grammar's families (`families`, `match`, `transform`), COLL lines field by field (`collfast`, `collfacts`),
PyTorch/gloo/torchrun lines (`runtime_*`), the message catalog (`catalog`), wrapped pastes (`rejoin`), the
regex runner (`rx`) and the literal text a pattern needs (`needles`, `rxtree`). Nothing here reads a file,
starts a process or decides what a big input keeps: a module here never imports `engine/` (a test pins it).
"""
