"""Torch/RAS line shapes with the TORCH fields each must yield (torch 1.x → 2.7+).

Shapes come from ../shared/reference/nccl-messages.md §4 (P1–P29), PyTorch's ProcessGroupNCCL.cpp /
TraceUtils.h format strings and real pastes in ../shared/corpus/issues; numbers and pointers are invented.
"""

from __future__ import annotations

CASES: list[tuple[str, dict[str, object]]] = [
    # torch < 1.11 split a 2.9+ NCCL_VERSION_CODE by the old formula: `21.2.12` is NCCL 2.12.12
    (
        (
            "RuntimeError: NCCL error in: /root/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, "
            "unhandled system error, NCCL version 21.2.12"
        ),
        {"kind": "backend_error", "detail": "unhandled system error", "nccl_version": "2.12.12"},
    ),
    (
        "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, invalid usage, NCCL version 2.7.8",
        {"kind": "backend_error", "detail": "invalid usage", "nccl_version": "2.7.8"},
    ),
    # P1 hard-wrapped by a terminal inside the WorkNCCL record: the fields before the cut are kept
    (
        (
            "[rank2]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=4, OpTy"
        ),
        {"kind": "watchdog_timeout", "rank": 2, "seq": 4, "op_type": None, "numel_in": None},
    ),
    (
        (
            "[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112,"
        ),
        {"kind": "watchdog_timeout", "rank": 2, "seq": 4, "op_type": "BROADCAST", "numel_in": 112},
    ),
    # a paste that starts mid-line keeps only the c10 header's tail
    (
        (
            "` ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, Numel"
        ),
        {"kind": "watchdog_timeout", "rank": 1, "seq": 4, "op_type": "BROADCAST", "numel_in": 112},
    ),
    # P1 watchdog timeout, every era
    (
        (
            "[E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(OpType=BROADCAST, TensorShape=[1000], Timeout(ms)=1800000) ran for 1800397 milliseconds before timing out."
        ),
        {
            "kind": "watchdog_timeout",
            "severity": "E",
            "rank": 1,
            "op_type": "BROADCAST",
            "seq": None,
            "timeout_ms": 1800000,
            "ran_for_ms": 1800397,
        },
    ),
    (
        (
            "[E ProcessGroupNCCL.cpp:587] [Rank 2] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800296 milliseconds before timing out."
        ),
        {"kind": "watchdog_timeout", "rank": 2, "seq": 469508, "op_type": "ALLREDUCE", "numel_in": None},
    ),
    (
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046, "
            "OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for 600027 milliseconds before timing out."
        ),
        {
            "kind": "watchdog_timeout",
            "rank": 1,
            "seq": 158046,
            "op_type": "GATHER",
            "numel_in": 2867200,
            "numel_out": 0,
        },
    ),
    (
        (
            "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran for 600081 "
            "milliseconds before timing out."
        ),
        {
            "kind": "watchdog_timeout",
            "severity": "E",
            "rank": 0,
            "seq": 1,
            "op_type": "BROADCAST",
            "ran_for_ms": 600081,
        },
    ),
    (
        (
            "E0321 02:07:08.408271 12345 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=7, OpType=_ALLGATHER_BASE, NumelIn=4, NumelOut=32, Timeout(ms)=60000) ran for 60012 milliseconds "
            "before timing out."
        ),
        {"kind": "watchdog_timeout", "severity": "E", "rank": 3, "seq": 7, "op_type": "_ALLGATHER_BASE"},
    ),
    (
        (
            "Epoch 0:   6%|██    | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6][E ProcessGroupNCCL.cpp:458] [Rank 0] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
            "25624887 milliseconds before timing out."
        ),
        {"kind": "watchdog_timeout", "rank": 0, "seq": 96120},
    ),
    # P1 hard-wrapped after `timeout: `
    (
        "[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 14] Watchdog caught collective operation timeout: ",
        {"kind": "watchdog_timeout", "rank": 14, "seq": None, "detail": "wrapped_head"},
    ),
    (
        (
            "WorkNCCL(SeqNum=2070, OpType=REDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before "
            "timing out."
        ),
        {
            "kind": "watchdog_timeout",
            "seq": 2070,
            "op_type": "REDUCE",
            "detail": "wrapped_tail",
            "rank": None,
        },
    ),
    # P24 blocking wait
    (
        (
            "[E ProcessGroupNCCL.cpp:1004] [Rank 5] Work WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=60000) timed out in "
            "blocking wait (NCCL_BLOCKING_WAIT=1)."
        ),
        {"kind": "watchdog_timeout", "rank": 5, "seq": 12, "detail": "blocking_wait"},
    ),
    # P4–P7 PG status
    (
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 1] Timeout at NCCL work: 158046, last enqueued NCCL work: 158046, "
            "last completed NCCL work: 158045."
        ),
        {
            "kind": "pg_status",
            "pg_id": "1",
            "rank": 1,
            "seq": 158046,
            "last_enqueued": 158046,
            "last_completed": 158045,
            "detail": "timeout_at",
        },
    ),
    (
        (
            "[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by "
            "watchdog at work: 7753, last enqueued NCCL work: 7755, last completed NCCL work: 7752."
        ),
        {
            "kind": "pg_status",
            "pg_id": "1",
            "seq": 7753,
            "last_enqueued": 7755,
            "last_completed": 7752,
            "detail": "exception",
        },
    ),
    (
        (
            "[E909 09:55:29.313379098 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 12] Exception (either an error or "
            "timeout) detected"
        ),
        {"kind": "pg_status", "pg_id": "0", "pg_desc": "default_pg", "rank": 12, "detail": "wrapped_head"},
    ),
    (
        "by watchdog at work: 2070, last enqueued NCCL work: 2070, last completed NCCL work: 2069.",
        {
            "kind": "pg_status",
            "seq": 2070,
            "last_enqueued": 2070,
            "last_completed": 2069,
            "detail": "wrapped_tail",
        },
    ),
    (
        (
            "[E1010 10:00:00.000000001 ProcessGroupNCCL.cpp:1800] [PG ID 0 PG GUID 0(default_pg) Rank 2] NCCL error is detected "
            "by watchdog at work: 31, last enqueued NCCL work: 31, last completed NCCL work: 30."
        ),
        {"kind": "pg_status", "seq": 31, "detail": "error", "pg_name": "0"},
    ),
    (
        (
            "[E1010 10:00:00.000000001 ProcessGroupNCCL.cpp:1800] [PG ID 0 PG GUID 0(default_pg) Rank 2] Work timeout is detected "
            "by watchdog at work: 31, last enqueued NCCL work: 32, last completed NCCL work: 30."
        ),
        {"kind": "pg_status", "seq": 31, "last_enqueued": 32, "detail": "timeout"},
    ),
    (
        (
            "[rank5]:[E626 16:48:25.440238649 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 5]  failure detected "
            "by watchdog at work sequence id: 120049 PG status: last enqueued work: 120051, last completed work: 120048"
        ),
        {
            "kind": "pg_status",
            "pg_id": "0",
            "pg_name": "0",
            "pg_desc": "default_pg",
            "rank": 5,
            "seq": 120049,
            "last_enqueued": 120051,
            "last_completed": 120048,
            "detail": "failure",
        },
    ),
    (
        (
            "[rank1]:[E1218 20:27:21.484903450 ProcessGroupNCCL.cpp:2168] [PG ID 1 PG GUID 1 Rank 1]  failure detected by watchdog "
            "at work sequence id: 1 PG status: last enqueued work: 547, last completed work: -1"
        ),
        {"kind": "pg_status", "pg_id": "1", "pg_name": "1", "pg_desc": None, "seq": 1, "last_completed": -1},
    ),
    # P13–P16 dump signals
    (
        (
            "[E901 05:20:03.118859045 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due "
            "to a collective timeout from  rank 6 and we will try our best to dump the debug info. Last enqueued NCCL work: 460631, "
            "last completed NCCL work: 460630.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used"
        ),
        {
            "kind": "dump_signal",
            "rank": 2,
            "from_rank": 6,
            "last_enqueued": 460631,
            "last_completed": 460630,
            "detail": "from_rank",
        },
    ),
    (
        (
            "[E418 01:32:50.907313453 ProcessGroupNCCL.cpp:1890] [PG ID 0 PG GUID 0(default_pg) Rank 1] Received a dump signal due "
            "to a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: "
            "233659, last completed NCCL work: 233659.This is most likely"
        ),
        {
            "kind": "dump_signal",
            "rank": 1,
            "from_rank": None,
            "detail": "this_local_rank",
            "last_completed": 233659,
        },
    ),
    (
        (
            "[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Received a global timeout from another rank and will start to dump the "
            "debug info."
        ),
        {"kind": "dump_observed", "rank": 3},
    ),
    (
        (
            "[E901 05:20:03.110823792 ProcessGroupNCCL.cpp:1685] [PG ID 0 PG GUID 0(default_pg) Rank 5] Observed flight recorder "
            "dump signal from another rank via TCPStore."
        ),
        {"kind": "dump_observed", "rank": 5},
    ),
    (
        (
            "[E1010 10:00:00.1 ProcessGroupNCCL.cpp:1700] [PG ID 0 PG GUID 0(default_pg) Rank 4] Broadcasting flight-recorder "
            "dump signal to other processes via TCPStore."
        ),
        {"kind": "dump_signal", "rank": 4, "detail": "broadcast"},
    ),
    (
        "[E602 11:17:52.399441451 ProcessGroupNCCL.cpp:2103] [PG ID 1 PG GUID 1 Rank 0] First PG on this rank to signal dumping.",
        {"kind": "dump_signal", "rank": 0, "detail": "first_pg"},
    ),
    (
        (
            "[E804 23:05:54.818690144 ProcessGroupNCCL.cpp:1628] [PG ID 0 PG GUID 0(default_pg) Rank 0] ProcessGroupNCCL preparing "
            "to dump debug info. Include stack trace: 1, only active collectives: 0"
        ),
        {"kind": "other", "detail": "dump_prepare"},
    ),
    (
        (
            "[E1010 10:00:00.1 ProcessGroupNCCL.cpp:1300] [PG ID 0 PG GUID 0(default_pg) Rank 4] ProcessGroupNCCL dumping nccl "
            "trace to /tmp/nccl_trace_rank_4"
        ),
        {"kind": "dump_file", "detail": "/tmp/nccl_trace_rank_4"},
    ),
    (
        "[I1010 10:00:00.1 NCCLUtils.cpp:400] Finished writing NCCLPG debug info to /tmp/nccl_trace_rank_4",
        {"kind": "dump_file", "severity": "I", "detail": "/tmp/nccl_trace_rank_4"},
    ),
    # P11 heartbeat
    (
        (
            "[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 7] ProcessGroupNCCL's "
            "watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically "
            "indicates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog"
        ),
        {"kind": "heartbeat_stuck", "rank": 7, "ran_for_ms": 480000},
    ),
    (
        (
            "[E ProcessGroupNCCL.cpp:1100] [PG 0 Rank 2] Heartbeat monitor timed out! Process will be terminated after dumping "
            "debug info. workMetaList_.size()=1"
        ),
        {"kind": "heartbeat_stuck", "rank": 2, "detail": "heartbeat_timeout"},
    ),
    # created ncclComm_ (maps the PG to NCCL's `comm 0x…` of its Init lines)
    (
        (
            "I0527 15:16:57.738664 58629 ProcessGroupNCCL.cpp:2183] [PG 0 (default_pg) Rank 5] ProcessGroupNCCL created "
            "ncclComm_ 0x555b8d27b370 on CUDA device: "
        ),
        {"kind": "created_comm", "severity": "I", "rank": 5, "pg_id": "0", "comm_ptr": "0x555b8d27b370"},
    ),
    (
        (
            "[I1218 20:17:21.100000000 ProcessGroupNCCL.cpp:2350] [PG ID 2 PG GUID 5(tp_group) Rank 1] ProcessGroupNCCL created "
            "ncclComm_ 0x55D1C1A0B2C0 on CUDA device: 1"
        ),
        {
            "kind": "created_comm",
            "pg_id": "2",
            "pg_name": "5",
            "pg_desc": "tp_group",
            "rank": 1,
            "comm_ptr": "0x55d1c1a0b2c0",
        },
    ),
    # P19–P23 exceptions
    (
        (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, invalid "
            "usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.6"
        ),
        {
            "kind": "backend_error",
            "nccl_version": "2.18.6",
            "detail": "invalid usage (run with NCCL_DEBUG=WARN for details)",
        },
    ),
    (
        "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8",
        {"kind": "backend_error", "nccl_version": "2.7.8", "detail": "unhandled system error"},
    ),
    (
        "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:514, unhandled cuda error",
        {"kind": "backend_error", "nccl_version": None, "detail": "unhandled cuda error"},
    ),
    (
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        {"kind": "backend_error", "detail": "ncclRemoteError"},
    ),
    (
        (
            "RuntimeError: NCCL communicator was aborted on rank 3.  Original reason for failure was: [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=55, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1806234 milliseconds "
            "before timing out."
        ),
        {"kind": "backend_error", "detail": "comm_aborted", "rank": 3, "seq": 55, "op_type": "BROADCAST"},
    ),
    (
        (
            "RuntimeError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key "
            "'0', but store->get('0') got error: Socket Timeout"
        ),
        {"kind": "backend_error", "detail": "unique_id_store", "rank": 3},
    ),
    ("Last error:", {"kind": "last_error", "detail": None}),
    (
        "Last error: NET/IB : Got completion from peer 10.0.0.2<39138> with error 12, opcode 0, len 0, vendor err 129",
        {
            "kind": "last_error",
            "detail": "NET/IB : Got completion from peer 10.0.0.2<39138> with error 12, opcode 0, len 0, "
            "vendor err 129",
        },
    ),
    # P18 desync report (continuation lines start with a tab)
    (
        "[E1010 10:00:00.1 ProcessGroupNCCL.cpp:1700] Rank 3",
        {"kind": "desync", "rank": 3, "detail": "report"},
    ),
    (
        "\t - [3] Timeout at collective: ALLREDUCE, #8",
        {"kind": "desync", "rank": 3, "op_type": "ALLREDUCE", "seq": 8, "detail": "timeout_at"},
    ),
    (
        (
            "\t - To our best knowledge, ranks [1, 5] are the lagging ranks that caused this timeout. They never joined any "
            "collectives"
        ),
        {"kind": "desync", "detail": "never_joined 1, 5"},
    ),
    (
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        {"kind": "desync", "detail": "report"},
    ),
    (
        "\t   - [2] joined but didn't finish collective #8 (count from 1)",
        {"kind": "desync", "detail": "not_finished 2", "seq": 8},
    ),
    (
        "\t     [0, 1, 3] finished collective #8, but didn't join collective #9 (count from 1)",
        {"kind": "desync", "detail": "not_joined 0, 1, 3", "seq": 8},
    ),
    ("\t - Snapshot of ranks' latest states:", {"kind": "desync", "detail": "report"}),
    ("\t   #8 started ranks:", {"kind": "desync", "detail": "snapshot", "seq": 8}),
    ("\t     [2] started ALLREDUCE", {"kind": "desync", "detail": "started 2", "op_type": "ALLREDUCE"}),
    ("\t     [0, 1, 3] finished ALLREDUCE", {"kind": "desync", "detail": "finished 0, 1, 3"}),
    # P2, P3, P9, P12 taking the process down
    (
        (
            "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
            "kernels, subsequent GPU operations might run on corrupted/incomplete data."
        ),
        {"kind": "taking_down"},
    ),
    (
        (
            "[rank3]:[E626 16:48:25.440271515 ProcessGroupNCCL.cpp:698] [Rank 3] To avoid data inconsistency, we are taking the "
            "entire process down."
        ),
        {"kind": "taking_down", "rank": 3},
    ),
    (
        (
            "[E ProcessGroupNCCL.cpp:1414] [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, "
            "Timeout(ms)=600000) ran for 600027 milliseconds before timing out."
        ),
        {"kind": "terminate", "pg_id": "1", "rank": 1, "seq": 158046, "detail": "watchdog_exception"},
    ),
    (
        (
            "[F1218 20:37:21.100000000 ProcessGroupNCCL.cpp:1224] [PG ID 0 PG GUID 0(default_pg) Rank 1] Terminating the process "
            "after attempting to dump debug info, due to collective timeout or exception."
        ),
        {"kind": "terminate", "severity": "F", "detail": "collective timeout or exception"},
    ),
    (
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        {"kind": "terminate", "detail": "'c10::DistBackendError'"},
    ),
    (
        (
            "  what():  [PG 0 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 "
            "milliseconds before timing out."
        ),
        {"kind": "terminate", "seq": 4, "rank": 1},
    ),
    # P26 options (TORCH_CPP_LOG_LEVEL=INFO)
    (
        (
            "[I1218 20:17:20.1 ProcessGroupNCCL.cpp:900] [PG ID 0 PG GUID 0(default_pg) Rank 1] ProcessGroupNCCL initialization "
            "options: size: 8, global rank: 1, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 0, "
            "PG Name: 0"
        ),
        {"kind": "init_options", "rank": 1, "timeout_ms": 600000, "pg_name": "0"},
    ),
    (
        (
            "[I1218 20:17:20.1 ProcessGroupNCCL.cpp:910] [PG ID 0 PG GUID 0(default_pg) Rank 1] ProcessGroupNCCL environments: "
            "NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 1"
        ),
        {"kind": "init_options", "nccl_version": "2.21.5"},
    ),
    # P8 stack of the failed collective
    (
        "[rank3]:[E710 18:00:32.427312432 ProcessGroupNCCL.cpp:801] Stack trace of the failed collective: ",
        {"kind": "other", "detail": "stack_head"},
    ),
    (
        "#0 all_reduce from /usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py:3174",
        {"kind": "stack_frame", "seq": 0},
    ),
    # NCCL RAS client report (ncclras)
    (
        "#0-0 (fa93daea854b060b) MISMATCH",
        {"kind": "ras", "pg_name": "fa93daea854b060b", "detail": "comm MISMATCH"},
    ),
    (
        "  Communicator ranks have different AllGather operation counts",
        {"kind": "ras", "op_type": "AllGather"},
    ),
    (
        "  30 ranks have launched up to operation 640",
        {"kind": "ras", "seq": 640, "numel_in": 30, "detail": "op_count"},
    ),
    ("  Rank 12 -- GPU 4 managed by process 323032 on node 10.134.247.124", {"kind": "ras", "rank": 12}),
    # gloo (CPU backend) errors, torch 2.13 (samples/capture): a waiter's timeout, a lost peer, a size mismatch
    (
        (
            "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
            "10000ms for recv operation to complete"
        ),
        {"kind": "gloo_timeout", "timeout_ms": 10000, "detail": "waiting for recv", "rank": None},
    ),
    (
        (
            "[rank2]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 1800000ms "
            "for send operation to complete"
        ),
        {"kind": "gloo_timeout", "timeout_ms": 1800000, "detail": "waiting for send"},
    ),
    (
        (
            "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
            "[127.0.0.1]:9635. This is typically caused by a remote worker crashing. Check the logs of the remote worker "
            "before reporting an error. GLHF! \U0001f3d6\ufe0f"
        ),
        {"kind": "gloo_peer_lost", "detail": "connection closed by peer [127.0.0.1]:9635"},
    ),
    (
        (
            "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
            "[127.0.0.1]:9635: Connection reset by peer. This is typically caused by a remote worker hanging or bugs in the "
            "application."
        ),
        {"kind": "gloo_peer_lost", "detail": "connection reset by peer [127.0.0.1]:9635"},
    ),
    (
        (
            "  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
            "op.preamble.length <= op.nbytes. 512 vs 384. Received data size doesn't match expected size. Is there a "
            "distributed collective mismatch in your code?"
        ),
        {"kind": "gloo_size_mismatch", "numel_in": 512, "numel_out": 384},
    ),
    # torchrun (torch.distributed.elastic) agent lines and its ChildFailedError summary
    (
        (
            "E1121 22:05:15.854000 18052 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
            "local_rank: 3 (pid: 26749) of binary: /work/main/.venv/bin/python"
        ),
        {"kind": "launcher", "severity": "E", "detail": "failed exitcode -9 local_rank 3 pid 26749"},
    ),
    (
        (
            "W1121 22:24:03.249000 2713 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 2911 closing "
            "signal SIGTERM"
        ),
        {"kind": "launcher", "detail": "sent SIGTERM pid 2911"},
    ),
    ("Failures:", {"kind": "launcher", "detail": "section failures"}),
    ("Root Cause (first observed failure):", {"kind": "launcher", "detail": "section root_cause"}),
    ("  rank      : 3 (local_rank: 3)", {"kind": "launcher", "rank": 3, "detail": "rank local_rank 3"}),
    ("  host      : node-17.cluster", {"kind": "launcher", "detail": "host node-17.cluster"}),
    (
        "  exitcode  : -9 (pid: 26749)  (SIGKILL)",
        {"kind": "launcher", "detail": "exitcode -9 pid 26749 signal SIGKILL"},
    ),
    ("  exitcode  : 143 (pid: 2911) ", {"kind": "launcher", "detail": "exitcode 143 pid 2911"}),
    (
        "  traceback : Signal 9 (SIGKILL) received by PID 3274",
        {"kind": "launcher", "detail": "traceback signal SIGKILL pid 3274"},
    ),
    ("  traceback : Traceback (most recent call last):", {"kind": "traceback", "detail": "table"}),
    # torch <= 2.1: the agent logged through Python logging
    (
        (
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 2410412) of "
            "binary: /opt/conda/bin/python"
        ),
        {"kind": "launcher", "severity": "E", "detail": "failed exitcode -9 local_rank 0 pid 2410412"},
    ),
    (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2410413 closing signal SIGTERM",
        {"kind": "launcher", "severity": "W", "detail": "sent SIGTERM pid 2410413"},
    ),
    (
        (
            "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) local_rank: 0 (pid: 358104) of "
            "binary: /usr/bin/python3"
        ),
        {"kind": "launcher", "severity": "E", "detail": "failed exitcode 1 local_rank 0 pid 358104"},
    ),
    # application output (issue 10): tracebacks, their last line, torch.multiprocessing.spawn's report
    ("Traceback (most recent call last):", {"kind": "traceback", "detail": "start"}),
    (
        "Scheduler hit an exception: Traceback (most recent call last):",
        {"kind": "traceback", "detail": "start"},
    ),
    (
        "During handling of the above exception, another exception occurred:",
        {"kind": "traceback", "detail": "chained"},
    ),
    (
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB "
            "of which 1.02 GiB is free."
        ),
        {"kind": "exception", "exc_type": "torch.OutOfMemoryError", "rank": None},
    ),
    (
        "[rank3]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB.",
        {"kind": "exception", "exc_type": "torch.cuda.OutOfMemoryError"},
    ),
    (
        "Rank 5: RuntimeError: CUDA error: an illegal memory access was encountered",
        {
            "kind": "exception",
            "exc_type": "RuntimeError",
            "rank": 5,
            "detail": "CUDA error: an illegal memory access was encountered",
        },
    ),
    ("[rank 6] RuntimeError: CUDA error: device-side assert triggered", {"kind": "exception", "rank": 6}),
    (
        (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
            "unhandled system error, NCCL version 2.18.6"
        ),
        {
            "kind": "backend_error",
            "exc_type": "torch.distributed.DistBackendError",
            "detail": "unhandled system error",
        },
    ),
    ("RuntimeError: [x.cc:1] something else went wrong", {"kind": "exception", "exc_type": "RuntimeError"}),
    ("KeyboardInterrupt", {"kind": "exception", "exc_type": "KeyboardInterrupt"}),
    ("SystemExit: 1", {"kind": "exception", "exc_type": "SystemExit", "detail": "1"}),
    (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        {
            "kind": "exception",
            "exc_type": "torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
        },
    ),
    (
        "-- Process 1 terminated with the following error:",
        {"kind": "spawn", "detail": "process_error", "local_rank": 1},
    ),
    (
        "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL",
        {"kind": "spawn", "detail": "exited signal SIGKILL", "local_rank": 0},
    ),
    (
        "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with exit code 1",
        {"kind": "spawn", "detail": "exited exitcode 1", "local_rank": 3},
    ),
    (
        "W1123 00:08:56.994000 10266 torch/multiprocessing/spawn.py:165] Terminating process 10304 via signal SIGTERM",
        {"kind": "spawn", "detail": "sent SIGTERM pid 10304"},
    ),
    # PyTorch Lightning's DDP world (Lightning 1.x `ddp`, >= 1.6 `distributed`)
    (
        "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8",
        {"kind": "lightning_world", "rank": 1, "world_size": 8, "detail": "MEMBER 2/8"},
    ),
    (
        "initializing distributed: GLOBAL_RANK: 15, MEMBER: 16/16",
        {"kind": "lightning_world", "rank": 15, "world_size": 16, "detail": "MEMBER 16/16"},
    ),
]

# Lines that must NOT be taken for torch lines.
NOT_TORCH: list[str] = [
    "NCCL version 2.14.3+cuda11.7",
    '    raise RuntimeError("boom")',
    "UserWarning: the default will change",
    "NET/OFI Request 0x7fcd completed with error. RC: 113. Error: 2 (UNDELIVERABLE).",
    "rank 2 step 3",
    '  File "train.py", line 10, in <module>',
    "Epoch 3: 100%|██████| 300/300 [07:24<00:00, loss=2.29]",
    "",
    ".",
    "[E something] unrelated",
    "the collective was slow today",
    "  time      : 2026-11-21_22:24:51",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "the rank : 3 of them failed",
]
