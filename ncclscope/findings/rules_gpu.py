"""Findings stage, GPU-side error rules: CUDA failures and OOM inside NCCL, /dev/shm, duplicate GPUs, NVLS.

Each reads the WARN lines NCCL printed (WARNINGS), the error trail (TRAIL) and, when the paste holds
only an exception, the `Last error` text PyTorch/XLA/nccl-tests carry. Reference: real-logs.md §5
R7, R9, R10, R13.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from ncclscope.findings import meanings as M
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import cite, live_warnings, make, norm_host, where
from ncclscope.findings.teardown_abort import (
    ABORT_ECHO_FIX,
    ABORT_ECHO_TITLE,
    ABORT_ECHO_WHY,
    raised_by_abort,
)
from ncclscope.records import Finding


def _cuda_rows(ctx: Context) -> pl.DataFrame:
    w = live_warnings(ctx).filter(pl.col("family").is_in(["cuda", "oom"]))
    return w.filter(~_is_nvls()).join(_nvls_trailed(ctx, w), on=["path", "line"], how="anti")


def _thread_key(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(
        pl.col("host").fill_null(""), pl.col("pid").fill_null(-1), pl.col("tid").fill_null(-1)
    )


def _nvls_trailed(ctx: Context, warns: pl.DataFrame) -> pl.DataFrame:
    """(path, line) of CUDA WARNs whose own error trail (the next trail line of the same thread) starts in
    nvls.cc: an NVLS failure even when the WARN's source location was stripped from the paste."""
    keys = ["path", "host", "pid", "tid"]
    trail = (
        _thread_key(ctx.logs.trail).select(*keys, pl.col("line").alias("t_line"), "src_file").sort("t_line")
    )
    w = _thread_key(warns).select(*keys, "line").sort("line")
    nxt = w.join_asof(
        trail, left_on="line", right_on="t_line", by=keys, strategy="forward", check_sortedness=False
    )
    return nxt.filter(pl.col("src_file").fill_null("").str.contains("nvls")).select("path", "line")


def _is_nvls() -> pl.Expr:
    return (
        (pl.col("family") == "nvls")
        | pl.col("src_file").fill_null("").str.contains("nvls")
        | pl.col("message").fill_null("").str.contains(r"NVLS|NVLink SHARP")
    )


UNHANDLED_CUDA = r"(?i)unhandled cuda error|ncclUnhandledCudaError"
NVLS_BIND = r"Failed to bind NVLink SHARP"


@rule("cuda-error", "error", "CUDA error inside NCCL", "errors", searches=(UNHANDLED_CUDA, NVLS_BIND))
def cuda_error(ctx: Context) -> Iterable[Finding]:
    """`Cuda failure [N] '<msg>'`, `Failed to CUDA calloc`, or, with no such WARN, an `unhandled cuda error`
    in a torch/XLA/nccl-tests message or an error trail whose codes are 1 (ncclUnhandledCudaError).
    NVLS (nvls.cc) CUDA failures go to nvls-failure. Error; out-of-memory is named as such."""
    if not (
        ctx.logs.warnings.height or ctx.logs.trail.height or ctx.logs.torch.height or ctx.logs.unknown.height
    ):
        return []
    rows = _cuda_rows(ctx)
    code_only = rows.is_empty()
    if code_only and _nvls_rows(ctx).is_empty():  # an NVLS failure explains a bare 'unhandled cuda error'
        rows = _unhandled_cuda_mentions(ctx)
    if rows.is_empty():
        return []
    oom = bool(
        rows["text"].fill_null("").str.contains(r"(?i)out of memory|CUDA calloc|cudaMalloc").any()
    ) or bool((rows["family"] == "oom").any() if "family" in rows.columns else False)
    first = rows.sort(["ts_us", "path", "line"], nulls_last=True).head(1)
    title = (
        "CUDA out of memory inside NCCL" if oom else "CUDA failure inside NCCL"
    ) + f", first {where(first, ctx)}"
    if code_only and not oom:
        title = f"NCCL reported an unhandled CUDA error {where(first, ctx)} (the failing CUDA call is not in the evidence)"
    why = (
        "NCCL allocates its buffers lazily (first collective on a communicator, P2P connection setup); when "
        "the GPU is already full NCCL is the victim, not the cause."
        if oom
        else "A CUDA call NCCL made failed; the communicator is unusable and every rank waiting on this one errors "
        "out or hangs."
    )
    fix = (
        "Leave headroom on the GPU (smaller batch, PYTORCH_CUDA_ALLOC_CONF, fewer cached blocks) or shrink "
        "NCCL's footprint: NCCL_BUFFSIZE, NCCL_MAX_NCHANNELS/NCCL_NCHANNELS_PER_NET_PEER."
        if oom
        else "Look at the failing CUDA call and the GPU state (nvidia-smi, Xid errors in dmesg); check driver/CUDA "
        "compatibility and CUDA_VISIBLE_DEVICES."
    )
    cited = (
        rows.unique(["host", "pid", "text"], keep="first", maintain_order=True).sort(["path", "line"]).head(8)
    )
    if code_only and not oom and raised_by_abort(ctx, rows):  # findings.teardown_abort: an echo at teardown
        title, why, fix = ABORT_ECHO_TITLE + where(first, ctx), ABORT_ECHO_WHY, ABORT_ECHO_FIX
        return [make("cuda-error", "warning", title, why, fix, cited, ctx, metrics={"role": "abort-echo"})]
    return [make("cuda-error", "error", title, why, fix, cited, ctx)]


def _unhandled_cuda_mentions(ctx: Context) -> pl.DataFrame:
    """Lines that only report the result code: torch/XLA exceptions and nccl-tests failures (no NCCL WARN)."""
    pat = UNHANDLED_CUDA
    torch = ctx.logs.torch.filter(
        pl.col("text").fill_null("").str.contains(pat) & ~pl.col("text").str.contains(r"NVLS|NVLink SHARP")
    )
    other = ctx.logs.warnings.filter(pl.col("text").fill_null("").str.contains(pat))
    unk = ctx.logs.unknown.filter(pl.col("text").fill_null("").str.contains(pat))
    trail = ctx.logs.trail.filter(
        (pl.col("code") == 1) & ~pl.col("src_file").fill_null("").str.contains("nvls")
    )
    trail = trail.unique(["path", "host", "pid"], keep="first", maintain_order=True)
    return cite(torch, other, unk, trail)


@rule("shm-exhausted", "error", "/dev/shm too small for NCCL's shared-memory segments", "errors")
def shm_exhausted(ctx: Context) -> Iterable[Finding]:
    """SHM WARNs: `posix_fallocate failed : No space left on device`, `failed to extend /dev/shm/nccl-…`,
    `Error while creating/attaching shared memory segment`. Error."""
    rows = live_warnings(ctx).filter(pl.col("family") == "shm")
    if rows.is_empty():
        return []
    why, fix = shm_advice(rows)
    return [
        make(
            "shm-exhausted",
            "error",
            f"NCCL could not create its shared-memory segments, first {where(rows.head(1), ctx)}",
            why,
            fix,
            rows.unique(["host", "pid", "text"], keep="first", maintain_order=True).head(8),
            ctx,
        )
    ]


SHM_FULL_WHY = (
    "NCCL ≥ 2.7 uses /dev/shm for the SHM transport and proxy buffers between processes of one node; "
    "Docker's default /dev/shm is 64 MB, far too small."
)
SHM_FULL_FIX = (
    "Run the container with --shm-size=8g (or --ipc=host); on Kubernetes mount an emptyDir with "
    "medium: Memory at /dev/shm. NCCL_SHM_DISABLE=1 avoids it at a bandwidth cost."
)


def shm_advice(rows: pl.DataFrame) -> tuple[str, str]:
    """The advice of the first SHM line whose words pick a variant of its meaning family (findings.meanings:
    ENOSPC is a full /dev/shm; a failed attach or map with room left is not), else /dev/shm too small."""
    for msg, src in rows.select("message", "src_file").iter_rows():
        fam = M.family_of(msg or "", src)
        found = fam.variant_advice(msg or "") if fam is not None else None
        if found is not None:
            return found
    return SHM_FULL_WHY, SHM_FULL_FIX


@rule("duplicate-gpu", "error", "Two ranks on the same GPU", "errors")
def duplicate_gpu(ctx: Context) -> Iterable[Finding]:
    """NCCL's `Duplicate GPU detected : rank a and rank b both on CUDA device <busId>` (also inside a torch
    `Last error`), or two ranks of one communicator whose Init lines name the same host and busId. Error;
    a warning when NCCL printed no such refusal and every one of those ranks reached Init COMPLETE: NCCL
    accepted the shared GPU (a host id per rank, NCCL_HOSTID, or NCCL_MULTI_RANK_GPU_ENABLE=1 on
    NCCL >= 2.30) and the ranks time-slice it. Every rank printing `[0]` alone is not a duplicate (each
    process may see one GPU as device 0)."""
    w = ctx.logs.warnings.filter(
        (pl.col("family") == "duplicate_gpu")
        | pl.col("message").fill_null("").str.contains(r"(?i)duplicate gpu detected")
    )
    inits = ctx.logs.inits.filter(pl.col("bus_id").is_not_null() & pl.col("rank").is_not_null())
    clash = (
        norm_host(inits)
        .group_by(["host", "bus_id", "nranks", "comm_id"])
        .agg(pl.col("rank").n_unique().alias("n"))
        .filter(pl.col("n") > 1)
    )
    same = norm_host(inits).join(
        clash.select("host", "bus_id", "nranks", "comm_id"),
        on=["host", "bus_id", "nranks", "comm_id"],
        nulls_equal=True,
    )
    rows = cite(w, same)
    if rows.is_empty():
        return []
    named = w["message"].fill_null("").str.extract_all(r"rank (\d+)").explode().str.extract(r"(\d+)", 1)
    devices = sorted(
        set(w["message"].fill_null("").str.extract(r"CUDA device ([0-9a-fA-F]+)", 1).drop_nulls().to_list())
    )
    fix = (
        "Call torch.cuda.set_device(local_rank) before init_process_group, and check CUDA_VISIBLE_DEVICES "
        "per process and the launcher's --local_rank / --gpus settings."
    )
    on_one = sorted(set(same["bus_id"].drop_nulls().cast(pl.Utf8).to_list()))  # the Init lines' busIds
    if w.is_empty() and _all_completed(same):
        return [
            make(
                "duplicate-gpu",
                "warning",
                f"Several ranks share one GPU (busId {', '.join(on_one)}) and NCCL accepted it",
                "Those ranks completed NCCL init on one device (a host id per rank via NCCL_HOSTID, or "
                "NCCL_MULTI_RANK_GPU_ENABLE=1): they time-slice that GPU, so their kernels and collectives run "
                "at a fraction of their speed. Deliberate in a test, a mistake in training.",
                fix + " Unless the sharing is deliberate, give each rank a GPU of its own.",
                same.unique(["path", "line"], maintain_order=True).head(10),
                ctx,
            )
        ]
    # NCCL >= 2.30 names no device in its refusal (`Multiple Ranks are using the same GPU/Partition`):
    # the Init lines' busId then says which one
    devices = devices or on_one
    title = "Several ranks were bound to the same GPU" + (f" (busId {', '.join(devices)})" if devices else "")
    return [
        make(
            "duplicate-gpu",
            "error",
            title,
            "Each rank must own its GPU; here two ranks resolved to one device, so NCCL refuses to build the "
            "communicator (ncclInvalidUsage).",
            fix,
            rows.unique(["path", "line"], maintain_order=True).head(10),
            ctx,
            named_ranks=[int(v) for v in named.drop_nulls().to_list()],
        )
    ]


def _all_completed(inits: pl.DataFrame) -> bool:
    """Every (host, pid, rank) among these Init lines also printed Init COMPLETE (or a legacy init line)."""
    if inits.is_empty():
        return False
    done = inits.group_by("host", "pid", "rank").agg(pl.col("phase").is_in(["complete", "legacy"]).any())
    return bool(done["phase"].all())


@rule("nvls-failure", "error", "NVLink SHARP (NVLS) setup failed", "errors", searches=(NVLS_BIND,))
def nvls_failure(ctx: Context) -> Iterable[Finding]:
    """A CUDA failure in transport/nvls.cc (`Cuda failure 401|1|801 …`), the 2.29+ `Failed to bind NVLink
    SHARP (NVLS) Multicast memory` text, or an error trail through nvls.cc. Error. `NVLS multicast support
    is not available` alone is benign (no NVSwitch)."""
    out = _nvls_uneven(ctx)
    rows = _nvls_rows(ctx)
    if rows.is_empty():
        return out
    return out + [
        make(
            "nvls-failure",
            "error",
            f"NVLink SHARP (NVLS) multicast setup failed, first {where(rows.sort('line').head(1), ctx)}",
            "NVLS needs a healthy Fabric Manager / NVSwitch state; this usually happens when the fabric "
            "manager was restarted while processes held NVLS resources, or IMEX channels are missing.",
            "Reboot the node (or restart nvidia-fabricmanager with no GPU processes running) and load "
            "nvidia-caps-imex-channels; NCCL_NVLS_ENABLE=0 avoids NVLS as a workaround.",
            rows.unique(["path", "line"], maintain_order=True).sort(["path", "line"]).head(8),
            ctx,
        )
    ]


def _nvls_rows(ctx: Context) -> pl.DataFrame:
    live = live_warnings(ctx)
    w = live.filter(
        _is_nvls() & (pl.col("family").is_in(["nvls", "cuda", "oom", "other"]) | (pl.col("level") == "WARN"))
    )
    w = pl.concat(
        [
            w,
            live.join(
                _nvls_trailed(ctx, live.filter(pl.col("family").is_in(["cuda", "oom"]))), on=["path", "line"]
            ),
        ]
    )
    torch = ctx.logs.torch.filter(pl.col("text").fill_null("").str.contains(r"NVLink SHARP|NVLS"))
    unk = ctx.logs.unknown.filter(pl.col("text").fill_null("").str.contains(NVLS_BIND))
    trail = ctx.logs.trail.filter(
        pl.col("src_file").fill_null("").str.contains("nvls") & (pl.col("code") != 0)
    )
    return cite(w, torch, unk, trail.unique(["path", "host", "pid"], keep="first", maintain_order=True))


def _nvls_uneven(ctx: Context) -> list[Finding]:
    """`NVLS multicast support is not available` on some hosts while others set NVLS up (or fail in it)."""
    ch = norm_host(ctx.logs.channels).filter(pl.col("host") != "")
    off = ch.filter(pl.col("kind") == "nvls_unavailable")
    if off.is_empty():  # no host without NVLS: nothing uneven (and the NVLS rows are not needed)
        return []
    on = cite(ch.filter(pl.col("kind").is_in(["nvls_available", "nvls_comm"])), _nvls_rows(ctx))
    on = norm_host(on).filter(pl.col("host") != "")
    mixed_on = on.join(off.select("host").unique(), on="host", how="anti")
    if off.is_empty() or mixed_on.is_empty():
        return []
    rows = cite(
        off.unique("host", keep="first", maintain_order=True),
        mixed_on.unique("host", keep="first", maintain_order=True),
    )
    return [
        make(
            "nvls-failure",
            "warning",
            "NVLS multicast is available on some nodes but not on others",
            "Nodes that disagree on NVLS support build different algorithms; on NVSwitch systems it usually "
            "means the Fabric Manager / IMEX state differs between nodes.",
            "Check nvidia-fabricmanager and IMEX channels on the nodes without NVLS; NCCL_NVLS_ENABLE=0 on "
            "every node makes them agree.",
            rows,
            ctx,
        )
    ]
