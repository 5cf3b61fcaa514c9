"""Parse stage, PyTorch line anchor: the cheap test every line `runtime_lines` can accept passes.

Kept apart from `runtime_lines` (the Lark grammar and matcher) so that the readers' hot paths (`inert`,
`runtime_rows`) test lines without importing Lark; the matcher is imported only when a line passes.
"""

from __future__ import annotations

import re

# Every line the grammar (`grammars/torch.lark`) accepts contains one of these; most application lines
# contain none.
ANCHOR = re.compile(
    r"NCCL|nccl[A-Z]|[Ww]atchdog|\[(?:PG|Rank) |Rank \d|ranks|dump|Last error|collective|#\d|\] (?:started|finished) "
    r"|terminate|what\(\)|GIL|Exception raised|Heartbeat|TCPStore"
    r"|Timed out waiting|by peer|Received data size|exitcode|local_rank|closing signal|Failures:|Root Cause|host +:"
    r"|Traceback \(most|exception occurred:|following exception:|terminated with|Terminating process|traceback +:"
    r"|(?:Error|Exception|KeyboardInterrupt|SystemExit)(?::|\s*$)|GLOBAL_RANK"
    r"|noticed that process rank|srun: error:|Caught signal|Process name: \[\[|Exit code:"
    r"|Collective |group info:|Culprit rank"  # the Flight Recorder analyzer's records (fr_trace)
    r"|\[TC\]|Operation timed out after"  # torchcomms (torch nightly's nccl2 backend)
)
MAX_CHARS = 20_000  # longer messages are no PyTorch lines
# Records a terminal hard-wrap cuts, as data: (what a cut head looks like at a line's end, what the joined
# text must then hold). The reader offers the lines after such a head with it (`keep.inert`), and
# `runtime_rows` joins up to MAX_TAIL continuation lines until the record is whole.
CUTS: tuple[tuple[str, str], ...] = (
    # `…WorkNCCL(SeqNum=53` / `2339, OpType=…) ran for …` (NeMo#13562, sglang#3424, open-r1#620)
    (r"WorkNCCL\([^)]*$", r"WorkNCCL\([^)]*\)"),
    # `Received a dump signal due to a collective timeout from this local` / `rank and … Last enqueued NCCL
    # work: 9387, last completed NCCL work: 9386.` (torchtune#2651)
    (r"dump signal due to a collective timeout[^:]*$", r"last completed NCCL work: -?\d+\."),
)
CUT_RECORD = "|".join(f"(?:{head})" for head, _ in CUTS)
MAX_TAIL = 3  # continuation lines joined at most
