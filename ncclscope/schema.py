"""Declared Polars schemas for every frame ncclscope builds (the contract between stages).

Every row of a log frame keeps `path` and `line` (1-based) plus the prefix fields of the line
it came from; units are in column names (`_us`, `_ms`, `_bytes`, `_gbps`).
"""

from __future__ import annotations

import polars as pl

Schema = dict[str, pl.DataType | type[pl.DataType]]

# Fields every log-derived row carries: where it came from and who printed it.
# host/pid/tid/cuda_dev come from NCCL's `host:pid:tid [dev]` prefix (null when absent);
# rank_hint comes from a launcher wrapper such as `[rank3]:`, `[default3]:` or `[1,3]<stdout>:`.
ORIGIN: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "host": pl.Utf8,
    "pid": pl.Int64,
    "tid": pl.Int64,
    "cuda_dev": pl.Int64,
    "rank_hint": pl.Int64,
    "ts_us": pl.Float64,  # wall-clock epoch microseconds when the line had a timestamp
    "text": pl.Utf8,  # the original line (for evidence), capped in length
}


def _with_origin(extra: Schema) -> Schema:
    return {**ORIGIN, **extra}


# --- log frames (built by ncclscope.frames from parse records) -------------------------------

INITS = _with_origin(
    {
        "phase": pl.Utf8,  # "start" | "complete" | "comm" (the `comm … nRanks … nNodes` line) | "legacy"
        "func": pl.Utf8,  # ncclCommInitRank, ncclCommSplit, ncclCommInitAll, … (null when not printed)
        "comm_ptr": pl.Utf8,  # "0x55…" as printed
        "comm_id": pl.Utf8,  # commId hex as printed (2.2x+), else null
        "rank": pl.Int64,
        "nranks": pl.Int64,
        "nnodes": pl.Int64,
        "local_ranks": pl.Int64,
        "local_rank": pl.Int64,
        "init_cuda_dev": pl.Int64,
        "nvml_dev": pl.Int64,
        "bus_id": pl.Utf8,
        "parent_comm_ptr": pl.Utf8,  # ncclCommSplit parent, when printed
        "color": pl.Int64,
        "key": pl.Int64,
    }
)

VERSIONS = _with_origin(
    {
        "kind": pl.Utf8,  # "nccl" | "cuda" (the +cudaX.Y of the banner) | "cuda_driver" | "torch" | "plugin"
        "value": pl.Utf8,
    }
)

ENV = _with_origin(
    {
        "name": pl.Utf8,
        "value": pl.Utf8,
    }
)

NETWORK = _with_origin(
    {
        # "bootstrap" | "socket_iface" | "ib_dev" | "using_network" | "plugin" | "gdr_disabled"
        # | "ib_no_device" | "ibverbs_missing" | "socket_threads" | "ofi" | "nic_distance"
        "kind": pl.Utf8,
        "index": pl.Int64,  # [N] position in a list line
        "iface": pl.Utf8,
        "address": pl.Utf8,  # IPv4/IPv6 without the <port>
        "port": pl.Int64,
        "net": pl.Utf8,  # Socket | IB | IBext | AWS Libfabric | … (using_network, plugin)
        "hca": pl.Utf8,
        "hca_port": pl.Int64,
        "link_layer": pl.Utf8,  # IB | RoCE
        "detail": pl.Utf8,
    }
)

RINGS = _with_origin(
    {
        "kind": pl.Utf8,  # "ring_order" | "ring_neighbors" | "tree"
        "channel": pl.Int64,
        "nchannels": pl.Int64,  # the /MM of `Channel NN/MM :`
        "order": pl.List(pl.Int64),  # ring order (ring_order) or [prev, me, next] (ring_neighbors)
        "tree_rank": pl.Int64,  # tree: this rank
        "tree_up": pl.Int64,  # tree: parent (-1 none)
        "tree_down": pl.List(pl.Int64),  # tree: children (-1 entries dropped)
        "truncated": pl.Boolean,  # line capped with `...` or at 20 ranks
    }
)

CONNECTIONS = _with_origin(
    {
        "kind": pl.Utf8,  # "ring" (≤2.6 `Ring NN :`) | "channel" | "collnet"
        "channel": pl.Int64,
        "conn_index": pl.Int64,  # the /N of `Channel NN/N` (2.12+)
        "src_rank": pl.Int64,
        "src_dev": pl.Utf8,  # busId (≤2.18.1) or nvmlDev as printed
        "dst_rank": pl.Int64,
        "dst_dev": pl.Utf8,
        "direction": pl.Utf8,  # "send" | "receive" | null (P2P/SHM lines)
        "transport": pl.Utf8,  # "P2P" | "SHM" | "NET" | "COLLNET"
        "detail": pl.Utf8,  # IPC/read, CUMEM, direct pointer, direct/direct, IB/0/GDRDMA, …
        "net": pl.Utf8,  # for NET: IB | Socket | AWS Libfabric | …
        "net_dev": pl.Int64,
        "gdr": pl.Boolean,
    }
)

CHANNELS = _with_origin(
    {
        "kind": pl.Utf8,  # "summary" | "connected_rings" | "connected_trees" | "thread_thresholds" | …
        "coll_channels": pl.Int64,
        "collnet_channels": pl.Int64,
        "nvls_channels": pl.Int64,
        "p2p_channels": pl.Int64,
        "p2p_per_peer": pl.Int64,
        "pxn": pl.Int64,
        "gdr": pl.Int64,
    }
)

WARNINGS = _with_origin(
    {
        "level": pl.Utf8,  # "WARN" | "INFO" (NOWARN-downgraded or retry lines)
        "src_file": pl.Utf8,
        "src_line": pl.Int64,
        # socket | ib_completion | ib_async | cuda | oom | shm | duplicate_gpu | version | collective_mismatch
        # | nvls | bootstrap | proxy | plugin | collnet | ring | other
        "family": pl.Utf8,
        "message": pl.Utf8,
        "peer": pl.Utf8,  # peer address/host when the message names one
        "status": pl.Int64,  # IB completion status
        "vendor_err": pl.Int64,
        "cuda_code": pl.Int64,
        "benign": pl.Boolean,  # whitelisted noise (plugin probing, libibverbs on Ethernet, …)
    }
)

TRAIL = _with_origin(
    {
        "src_file": pl.Utf8,
        "src_line": pl.Int64,
        "code": pl.Int64,  # ncclResult_t
        "thread": pl.Utf8,  # Async thread | Proxy Thread | Progress Thread | Service thread | null
        "detail": pl.Utf8,  # strerror text when printed
    }
)

COLLECTIVES = _with_origin(
    {
        "op": pl.Utf8,  # AllReduce, Broadcast, …
        "op_count": pl.Int64,  # opCount is printed in hex
        "comm_ptr": pl.Utf8,
        "count": pl.Int64,
        "datatype": pl.Int64,
        "red_op": pl.Int64,
        "root": pl.Int64,
        "nranks": pl.Int64,
        "stream": pl.Utf8,
        "sendbuff": pl.Utf8,
        "recvbuff": pl.Utf8,
    }
)

# What the analysis keeps of COLL lines (`frames_coll.CollFacts`): one row per process key (everything
# a line's communicator and rank depend on) and each distinct set of (opCount, op signature) pairs once.
COLL_PROCS: Schema = {
    "host": pl.Utf8,
    "pid": pl.Int64,
    "comm_ptr": pl.Utf8,
    "rank_hint": pl.Int64,
    "nranks": pl.Int64,
    "n_coll": pl.Int64,  # COLL lines with an opCount
    "max_op_count": pl.Int64,
    # the first line (path, line order) that printed max_op_count
    "path": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
    "op": pl.Utf8,
    "count": pl.Int64,
    "datatype": pl.Int64,
    # hashes of its sets of (op_count, sig) pairs (one per part of the input), Send/Recv left out
    "seq": pl.List(pl.UInt64),
}
COLL_SEQS: Schema = {
    "seq": pl.UInt64,
    "op_count": pl.Int64,
    "sig": pl.UInt64,  # hash of (op, count, datatype)
}

TORCH = _with_origin(
    {
        # watchdog_timeout | pg_status | dump_signal | dump_observed | heartbeat_stuck | created_comm
        # | backend_error | last_error | desync | taking_down | terminate | init_options | other
        # | exception | traceback | spawn (application output, issue 10)
        "kind": pl.Utf8,
        "severity": pl.Utf8,  # c10 letter I/W/E/F
        "rank": pl.Int64,  # rank named in the line ([Rank N] / [PG … Rank N]); else rank_hint
        "pg_id": pl.Utf8,
        "pg_name": pl.Utf8,
        "pg_desc": pl.Utf8,
        "seq": pl.Int64,
        "op_type": pl.Utf8,
        "numel_in": pl.Int64,
        "numel_out": pl.Int64,
        "timeout_ms": pl.Int64,
        "ran_for_ms": pl.Int64,
        "last_enqueued": pl.Int64,
        "last_completed": pl.Int64,
        "last_started": pl.Int64,
        "from_rank": pl.Int64,  # dump signal from rank N (null for "this local rank")
        "comm_ptr": pl.Utf8,  # created ncclComm_ 0x…
        "nccl_version": pl.Utf8,
        "world_size": pl.Int64,  # the world size a framework says it starts (Lightning's MEMBER m/n)
        "detail": pl.Utf8,
        # additive (issue 10): application output
        "exc_type": pl.Utf8,  # Python exception class in front of the message (`torch.OutOfMemoryError`)
        "local_rank": pl.Int64,  # process index torch.multiprocessing.spawn names (`-- Process N terminated …`)
    }
)

# NCCL lines no family claims, named by the message catalog (grammars/nccl_catalog.lark).
KNOWN = _with_origin(
    {
        "level": pl.Utf8,  # INFO | WARN | TRACE | CALL | VERSION, as the line's prefix says
        "catalog_id": pl.Utf8,  # the format's id in grammars/catalog/nccl_messages.json
        "subsys": pl.Utf8,  # the INFO subsystems the source passes, comma-separated (WARN: ALL)
        "message": pl.Utf8,
    }
)

UNKNOWN = _with_origin(
    {
        "is_nccl": pl.Boolean,  # it carried an NCCL prefix but the message matched no family
    }
)

# Rows of an evidence table that stand for more lines than themselves: the first kept row of a kind whose
# other lines were counted, not kept (parse/logs/keep/bounded.py; `LogFrames.lines_of`).
REPEATS: Schema = {"table": pl.Utf8, "path": pl.Utf8, "line": pl.Int64, "more": pl.Int64}

# Per (path, host, pid) process stream: span of lines, for hang analysis.
STREAMS: Schema = {
    "path": pl.Utf8,
    "host": pl.Utf8,
    "pid": pl.Int64,
    "rank_hint": pl.Int64,
    "first_line": pl.Int64,
    "last_line": pl.Int64,
    "n_lines": pl.Int64,
    "last_ts_us": pl.Float64,
    "last_text": pl.Utf8,
}

# --- aligned frames (built by ncclscope.align) -------------------------------------------

RANKS: Schema = {
    "rank": pl.Int64,  # global rank (from the world/largest communicator), null when unknown
    "host": pl.Utf8,
    "pid": pl.Int64,
    "cuda_dev": pl.Int64,
    "path": pl.Utf8,
    "nccl_version": pl.Utf8,
    "cuda_driver": pl.Utf8,
    "comm_ids": pl.List(pl.Utf8),
    "iface": pl.Utf8,
    "address": pl.Utf8,
    "net": pl.Utf8,
    "gdr": pl.Boolean,
}

COMMS: Schema = {
    "comm_key": pl.Utf8,  # commId when printed, else a key derived from (nranks, comm_ptr set)
    "comm_id": pl.Utf8,
    "nranks": pl.Int64,
    "nnodes": pl.Int64,
    "ranks_seen": pl.Int64,
    "complete": pl.Int64,  # ranks with Init COMPLETE
    "pg_name": pl.Utf8,  # PyTorch process group mapped through `created ncclComm_ 0x…`
}

# --- trace frames (built by ncclscope.parse.traces.read) --------------------------------------------

TRACE_COLLECTIVES: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "host": pl.Utf8,
    "event": pl.Utf8,  # name of the event that carried it, for evidence
    "source": pl.Utf8,  # "kernel" | "cpu_op" | "gloo"
    "op": pl.Utf8,  # normalised: allreduce, allgather, reduce_scatter, broadcast, alltoall, sendrecv, …
    "pg_name": pl.Utf8,
    "pg_ranks": pl.Utf8,
    "seq": pl.Int64,
    "index_in_pg": pl.Int64,  # k-th collective of that group on this rank
    "dtype": pl.Utf8,
    "in_nelems": pl.Int64,
    "out_nelems": pl.Int64,
    "group_size": pl.Int64,
    "msg_bytes": pl.Int64,
    "launch_us": pl.Float64,  # CPU launch time, epoch µs
    "start_us": pl.Float64,  # kernel start, epoch µs
    "end_us": pl.Float64,
    "dur_us": pl.Float64,
    "step": pl.Int64,  # ProfilerStep#N that encloses the launch
    # additive (trace loader): what the alignment keys on and what evidence cites
    "pg_desc": pl.Utf8,
    "is_p2p": pl.Boolean,
    "comms_id": pl.Utf8,  # `Comms Id` (torch ≥ 2.13 / Kineto, March 2026), the same on every rank of one op
    "stream": pl.Int64,  # CUDA stream (GPU tid) of the kernel
    "external_id": pl.Int64,
    "correlation": pl.Int64,
    "kernel": pl.Utf8,  # kernel name without its `(…)` signature
    "dtype_bytes": pl.Int64,
}

TRACE_STEPS: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "step": pl.Int64,
    "start_us": pl.Float64,
    "end_us": pl.Float64,
    "dur_us": pl.Float64,
}


# Every GPU activity of a rank (kernels, memcpy, memset) as intervals, for compute/communication overlap.
TRACE_KERNELS: Schema = {
    "rank": pl.Int64,
    "stream": pl.Int64,
    "start_us": pl.Float64,
    "end_us": pl.Float64,
    "is_comm": pl.Boolean,  # NCCL kernel (either naming era)
}

# One row per trace file: who wrote it and how its clock and kernels are to be read.
TRACE_RANKS: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "world_size": pl.Int64,
    "host": pl.Utf8,  # top-level `host_name` (torch ≥ 2.13), else filled from logs, else null
    "backend": pl.Utf8,
    "nccl_version": pl.Utf8,
    "gpu": pl.Utf8,  # deviceProperties[0].name
    "n_gpus": pl.Int64,  # visible devices listed in deviceProperties
    "base_ns": pl.Int64,  # baseTimeNanoseconds when the trace's ts are relative to it
    "n_events": pl.Int64,
    "kernel_era": pl.Utf8,  # "ncclKernel" (NCCL < 2.19) | "ncclDevKernel" | null (no NCCL kernel)
    "rank_from": pl.Utf8,  # "distributedInfo" | "rank-map" | "file name"
}

# Process groups from `distributedInfo.pg_config` (may list fewer PGs than `pg_count`).
TRACE_PGS: Schema = {
    "rank": pl.Int64,
    "pg_name": pl.Utf8,
    "pg_desc": pl.Utf8,
    "backend_config": pl.Utf8,
    "pg_size": pl.Int64,
    "pg_ranks": pl.Utf8,
}

# --- aligned trace frames (built by ncclscope.align.traces) ------------------------------------

# One row per (collective, rank): the rank's times, corrected for its clock offset.
ALIGNED_RANKS: Schema = {
    "coll_id": pl.Int64,
    "match_key": pl.Utf8,  # "seq" | "pg-order" | "stream-order" | "gloo-order"
    "group": pl.Utf8,
    "index": pl.Int64,
    "rank": pl.Int64,
    "host": pl.Utf8,
    "op": pl.Utf8,
    "step": pl.Int64,
    "msg_bytes": pl.Int64,
    "launch_us": pl.Float64,
    "arrival_us": pl.Float64,  # kernel start (gloo: op start) minus the clock offset
    "end_us": pl.Float64,
    "skew_us": pl.Float64,  # arrival minus the first arrival
    "wait_us": pl.Float64,  # last arrival minus own arrival
    "lateness_us": pl.Float64,  # arrival minus the median arrival of the other ranks
    "is_last": pl.Boolean,
    "delay_caused_us": pl.Float64,  # last only: arrival minus the second-last arrival
    "event": pl.Utf8,
    "path": pl.Utf8,
}

# One row per collective lined up across ranks.
ALIGNED_COLLECTIVES: Schema = {
    "coll_id": pl.Int64,
    "match_key": pl.Utf8,
    "group": pl.Utf8,
    "index": pl.Int64,
    "op": pl.Utf8,
    "step": pl.Int64,
    "n_ranks": pl.Int64,
    "expected_ranks": pl.Int64,
    "complete": pl.Boolean,  # every rank of the group is present
    "consistent": pl.Boolean,  # op (and size where it must agree) is the same on every rank
    "msg_bytes": pl.Int64,  # nccl-tests' S
    "first_arrival_us": pl.Float64,
    "last_arrival_us": pl.Float64,
    "last_rank": pl.Int64,
    "arrival_spread_us": pl.Float64,
    "end_spread_us": pl.Float64,
    "transfer_us": pl.Float64,  # median end minus last arrival: the time data actually moved
    "algbw_gbps": pl.Float64,
    "busbw_gbps": pl.Float64,
}

# One row per matching group of the aligned traces, joined to the log's communicator where the
# PyTorch process-group name was mapped to one (`created ncclComm_ 0x…` watchdog lines).
TRACE_GROUPS: Schema = {
    "group": pl.Utf8,  # "pg <name>" | "stream <id>" | "gloo"
    "pg_name": pl.Utf8,
    "pg_desc": pl.Utf8,
    "collectives": pl.Int64,
    "ranks": pl.Int64,
    "comm_key": pl.Utf8,  # COMMS.comm_key when the logs name this PG's communicator, else null
    "comm_nranks": pl.Int64,
}

# Clock offset per host (or per rank when hosts are unknown), from collective completions.
CLOCK_OFFSETS: Schema = {
    "basis": pl.Utf8,  # "host" | "rank"
    "host": pl.Utf8,
    "rank": pl.Int64,
    "offset_us": pl.Float64,  # subtract from this clock's times to line it up with the reference
    "spread_us": pl.Float64,  # median absolute deviation of the completion residuals
    "n_samples": pl.Int64,
}

# --- Flight Recorder frames (built by ncclscope.parse.flight.read) -------------------------------
# One dump per rank (TORCH_NCCL_DEBUG_INFO_TEMP_FILE / TORCH_FR_DUMP_TEMP_FILE); `rank` is the
# global rank taken from the file name's numeric suffix, as torch's own fr_trace does.

FLIGHT_ENTRIES: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "record_id": pl.Int64,
    "pg_id": pl.Int64,  # ProcessGroupNCCL::uid_ on this rank
    "pg_name": pl.Utf8,  # process_group[0]: the group name (GUID), stable across ranks
    "pg_desc": pl.Utf8,  # process_group[1]: default_pg, undefined, user description
    "collective_seq_id": pl.Int64,
    "p2p_seq_id": pl.Int64,
    "op_id": pl.Int64,
    "profiling_name": pl.Utf8,  # nccl:all_reduce, nccl:send 0->1, nccl:coalesced, …
    "op": pl.Utf8,  # the part after `nccl:` up to the first space
    "is_p2p": pl.Boolean,
    "state": pl.Utf8,  # scheduled | started | completed
    "input_sizes": pl.Utf8,  # as printed, e.g. [[8, 4]]
    "output_sizes": pl.Utf8,
    "input_numel": pl.Int64,
    "output_numel": pl.Int64,
    "input_dtypes": pl.Utf8,  # comma-joined
    "output_dtypes": pl.Utf8,
    "time_created_ns": pl.Int64,
    "time_started_ns": pl.Int64,
    "time_completed_ns": pl.Int64,
    "duration_ms": pl.Float64,
    "timeout_ms": pl.Int64,
    "retired": pl.Boolean,
    "frame": pl.Utf8,  # innermost Python frame outside torch.distributed, `func at file:line`
}

FLIGHT_STATUS: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "pg_id": pl.Int64,
    "last_enqueued": pl.Int64,
    "last_started": pl.Int64,
    "last_completed": pl.Int64,
}

FLIGHT_GROUPS: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "pg_name": pl.Utf8,
    "pg_desc": pl.Utf8,
    "ranks": pl.List(pl.Int64),  # global ranks of the group
    "size": pl.Int64,
}

FLIGHT_DUMPS: Schema = {
    "path": pl.Utf8,
    "rank": pl.Int64,
    "format": pl.Utf8,  # pickle | json
    "version": pl.Utf8,
    "comm_lib_version": pl.Utf8,
    "entries": pl.Int64,
}


def empty(schema: Schema) -> pl.DataFrame:
    """An empty frame with the declared schema (every stage returns one rather than None)."""
    return pl.DataFrame(schema=schema)


def conform(df: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Add missing columns as nulls, cast to the declared dtypes and order columns as declared."""
    cols = [
        (pl.col(n).cast(t) if n in df.columns else pl.lit(None, dtype=t).alias(n)) for n, t in schema.items()
    ]
    return df.select(cols)


# --- nccl-tests frames (built by ncclscope.parse.nccltests) ---------------------------------
# One row per (result line, placement): nccl-tests prints out-of-place then in-place on one line.
# `line` is 0 for rows read from `-J` JSON (then `text` names the entry).
NCCLTESTS_RESULTS: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "run": pl.Int64,  # k-th `# nThread …` header of the file (0 before the first)
    "op": pl.Utf8,  # all_reduce, all_gather, … from the program name (`all_reduce_perf`); null when never named
    "size_bytes": pl.Int64,
    "count": pl.Int64,
    "dtype": pl.Utf8,
    "redop": pl.Utf8,  # sum, none, … (absent from some pre-2.13 tables)
    "root": pl.Int64,  # -1 when the collective has none
    "placement": pl.Utf8,  # "out" | "in"
    "time_us": pl.Float64,
    "algbw_gbps": pl.Float64,
    "busbw_gbps": pl.Float64,
    "wrong": pl.Int64,  # `#wrong` elements (2.13+); null when N/A or when the table has an `error` column
    "max_error": pl.Float64,  # the `error` column of nccl-tests < 2.13 (maximum deviation), else null
    "text": pl.Utf8,
}

NCCLTESTS_DEVICES: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "run": pl.Int64,
    "rank": pl.Int64,
    "group": pl.Int64,
    "pid": pl.Int64,
    "host": pl.Utf8,
    "device": pl.Int64,  # CUDA device index
    "busid": pl.Utf8,  # as printed: 0x35 (< 2.14.1) or 0000:02:00
    "gpu_name": pl.Utf8,
    "text": pl.Utf8,
}

# One row per run that printed its footer.
NCCLTESTS_SUMMARY: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,  # the `# Avg bus bandwidth` line (or the out-of-bounds line when only it was printed)
    "run": pl.Int64,
    "avg_busbw_gbps": pl.Float64,
    "oob_values": pl.Int64,  # `# Out of bounds values : N`
    "oob_line": pl.Int64,
    "text": pl.Utf8,
    "oob_text": pl.Utf8,
}

# One row per run: its `# nThread …` header and what the lines around it name.
NCCLTESTS_RUNS: Schema = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "run": pl.Int64,
    "op": pl.Utf8,
    "tests_version": pl.Utf8,  # `# nccl-tests version X` (2.18.5+)
    "nccl_library": pl.Int64,  # NCCL_VERSION_CODE of the loaded library, e.g. 22809
    "nthreads": pl.Int64,
    "ngpus": pl.Int64,
    "min_bytes": pl.Int64,
    "max_bytes": pl.Int64,
    "warmup_iters": pl.Int64,
    "iters": pl.Int64,
    "text": pl.Utf8,
}
