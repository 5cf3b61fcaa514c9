"""Findings stage, other programs' lines: the NVIDIA kernel driver's Xid reports and libfabric's warnings.

Neither prints an NCCL prefix, so both reach the rules as unknown lines (parse.logs.evidence keeps them in
big inputs). Their shapes are grammar rules (`kernel_xid`, `libfabric_log` in grammars/nccl.lark, each
from the printing code); what each Xid means is data (grammars/catalog/xid.json, from NVIDIA's Xid
catalog), with the role that decides the verdict: a GPU fault is a cause, Xid 45 (preemptive cleanup)
an echo of the error it names.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec
import polars as pl

from ncclscope import grammar as G
from ncclscope.findings.registry import Context, rule
from ncclscope.findings.rules_common import make
from ncclscope.records import Finding, Severity

# `Mon DD HH:MM:SS host kernel:` (syslog, journalctl) or `<ISO time> host kernel:` before the driver's text.
SYSLOG_HOST = r"(?:[A-Z][a-z]{2} +\d+ [\d:.]+|\d{4}-\d\d-\d\dT\S+) +(?P<xhost>[\w.-]+) +kernel: "
XID_NEEDLE = "NVRM: Xid"
LF_NEEDLE = r"libfabric:"  # declared as the rule's search: big inputs keep these unknown lines
CAUSED_BY = r"caused by previous Xid (\d+)"
XID_PID = r"\bpid=(\d+)"
ROLE_ORDER = {"fault": 0, "app": 1, "info": 2, "echo": 3}  # which Xid of a GPU heads its finding
FIX = {
    "fault": "Take the GPU out of service until it is reset (nvidia-smi -r or a node reboot) and checked "
    "(nvidia-smi -q, nvidia-bug-report.sh; NVIDIA's Xid catalog gives the recovery); the NCCL/PyTorch errors "
    "of the processes on it are consequences.",
    "app": "Restart the application; run it under compute-sanitizer to find the illegal access; if it repeats "
    "on one GPU only, suspect that GPU.",
    "echo": "Find the earlier error it names (the Xid before it in dmesg, on this or a linked GPU) and treat that.",
    "info": "Nothing to do now; read the other Xids of the GPU, and plan a GPU reset when one is pending.",
}


@dataclass(frozen=True)
class Xid:
    code: int
    name: str
    title: str
    role: str  # fault | app | echo | info
    severity: str
    meaning: str


class _XidDoc(msgspec.Struct, forbid_unknown_fields=True):
    code: int
    name: str
    title: str
    role: str
    severity: str
    meaning: str


class _XidFile(msgspec.Struct):
    about: str
    xids: list[_XidDoc]


@functools.cache
def xids() -> dict[int, Xid]:
    """Xid number -> its meaning (grammars/catalog/xid.json)."""
    doc = msgspec.json.decode(G.grammar_bytes("catalog", "xid.json"), type=_XidFile)
    return {x.code: Xid(x.code, x.name, x.title, x.role, x.severity, x.meaning) for x in doc.xids}


def _unknown(ctx: Context, needle: str) -> pl.DataFrame:
    u = ctx.logs.unknown
    return u.filter(pl.col("text").fill_null("").str.contains(needle, literal=True))


def xid_rows(ctx: Context) -> pl.DataFrame:
    """Kernel `NVRM: Xid` lines with `pci`, `code`, `detail`, the Xid a cleanup names (`cause`) and the
    syslog host when the line carries one."""
    rows = _unknown(ctx, XID_NEEDLE)
    if rows.is_empty():
        return rows
    g = pl.col("text").str.extract_groups(G.rule_regex("kernel_xid"))
    rows = rows.with_columns(
        pci=g.struct.field("xid_pci").str.to_lowercase(),
        code=g.struct.field("xid_code").cast(pl.Int64, strict=False),
        detail=g.struct.field("xid_detail").fill_null(""),
        xhost=pl.col("text").str.extract(SYSLOG_HOST, 1),
    ).filter(pl.col("code").is_not_null())
    return rows.with_columns(
        lines=ctx.logs.lines_of(
            "unknown", rows
        ),  # a flood of one Xid keeps its first and last lines, counted
        cause=pl.col("detail").str.extract(CAUSED_BY, 1).cast(pl.Int64, strict=False),
        host=pl.coalesce("host", "xhost"),
        pid=pl.coalesce(pl.col("pid"), pl.col("detail").str.extract(XID_PID, 1).cast(pl.Int64, strict=False)),
    )


def _describe(code: int) -> Xid:
    return xids().get(code) or Xid(
        code, "", f"Xid {code}", "fault", "warning", "An Xid ncclscope has no meaning for."
    )


@rule(
    "gpu-xid",
    "error",
    "NVIDIA driver Xid errors (dmesg/journal), one finding per GPU",
    "errors",
    searches=(XID_NEEDLE,),
)
def gpu_xid(ctx: Context) -> Iterable[Finding]:
    """`NVRM: Xid (PCI:0000:dc:00): 149, …` lines, one finding per GPU (host and PCI address) with the
    meaning of each Xid number (grammars/catalog/xid.json, NVIDIA's Xid catalog). The GPU's head Xid is its
    first `fault` (hardware, firmware or driver), else its first `app` fault, else an Xid a `caused by
    previous Xid N` cleanup names, else the first. Severity is the head Xid's (error for faults); a GPU with
    only Xid 45 cleanups that name nothing is a warning (an echo of an error not in the evidence)."""
    rows = xid_rows(ctx)
    if rows.is_empty():
        return []
    out = []
    for (_h, pci), g in rows.group_by(["host", "pci"], maintain_order=True):
        seen = [_describe(int(c)) for c in dict.fromkeys(g["code"].to_list())]
        named = [_describe(int(c)) for c in dict.fromkeys(g["cause"].drop_nulls().to_list())]
        direct = sorted((x for x in seen if x.role != "echo"), key=lambda x: ROLE_ORDER[x.role])
        head = direct[0] if direct else (named[0] if named else seen[0])
        by_name = not direct and bool(named)
        echoes = int(g.filter(pl.col("code") == 45)["lines"].sum() or 0)
        sev: Severity = (
            "error" if head.severity == "error" else "warning" if head.severity == "warning" else "info"
        )
        where = f"GPU {pci}" + (f" on {g['host'][0]}" if g["host"][0] else "")
        title = f"{where}: Xid {head.code} ({head.title})"
        if by_name:
            title += f", named by the {echoes} Xid 45 cleanup(s) of processes on it that follow from it"
        elif echoes and head.code != 45:
            title += f"; {echoes} Xid 45 cleanup(s) of processes on it follow from it"
        why = head.meaning
        if head.code != 45 and echoes:
            why += " " + _describe(45).meaning
        cited = g.unique(["code", "cause"], keep="first", maintain_order=True).head(8)
        out.append(
            make(
                "gpu-xid",
                sev,
                title[:200],
                why,
                FIX[head.role],
                cited,
                ctx,
                metrics={
                    "gpu": pci,
                    "xid": head.code,
                    "name": head.name,
                    "role": head.role,
                    "xids": sorted({x.code for x in seen} | {x.code for x in named}),
                    "cause_class": "hardware/driver" if head.role in ("fault", "info") else "application",
                    "source": "NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors)",
                },
            )
        )
    return out


# libfabric <warn> lines that report a failure (not the provider's notices), and what their words mean:
# (pattern on the message, why, try); the first that matches is used. Read from ofiwg/libfabric
# prov/efa (efa_rdm_txe_handle_error / efa_rdm_rxe_handle_error print `err: %d, message: %s (%d)`: the
# fi errno, the EFA completion status's text and number) and the aws-ofi-nccl issue threads.
LF_FAILURE = r"(?i)\berr(?:no)?: ?-?\d+|error|fail|unreachable|invalid|timed? ?out|refused"
LF_DATA_SUBSYS = ("cq", "ep_data", "ep_ctrl", "av", "domain")
LF_MEANINGS: tuple[tuple[str, str, str], ...] = (
    (
        r"(?i)invalid address|unknown peer|unreachable|unresponsive|bad dest|destination",
        (
            "libfabric's provider could not deliver a transfer to the peer endpoint: the peer's address is no "
            "longer valid or the peer does not answer (its process exited or reset its endpoint, its instance is "
            "gone, or the address vector entry is stale). NCCL's OFI plugin then fails the operation on this rank."
        ),
        (
            "Look at the peer (the `Peer host id` / address in the line): did its process die first? Check the EFA "
            "security group allows all traffic between the instances, and that both sides run the same "
            "libfabric/aws-ofi-nccl; `fi_info -p efa` on both."
        ),
    ),
    (
        r"(?i)rnr|receiver not ready",
        "The peer had no receive buffer posted (receiver not ready) for longer than the provider retries.",
        "Check whether the peer process stalled or died; FI_EFA_RNR_RETRY raises the retry count.",
    ),
    (
        "",
        (
            "libfabric's provider reported a failed network operation on this process (a completion or endpoint "
            "error): the transfer NCCL's OFI plugin issued did not complete."
        ),
        (
            "Read the error number and text in the line (`fi_strerror`); check the NIC and link on this host and "
            "the peer's log; run `fi_info` and the provider's own tests (fi_pingpong) between the hosts."
        ),
    ),
)


def libfabric_rows(ctx: Context) -> pl.DataFrame:
    """libfabric `<warn>` lines that report a failure, with provider, subsystem, function and message, and
    the host of their pid from the NCCL lines of the same process (ranks table)."""
    rows = _unknown(ctx, LF_NEEDLE)
    if rows.is_empty():
        return rows
    g = pl.col("text").str.extract_groups(G.rule_regex("libfabric_log"))
    rows = rows.with_columns(
        fpid=g.struct.field("fi_pid").cast(pl.Int64, strict=False),
        prov=g.struct.field("fi_prov"),
        subsys=g.struct.field("fi_subsys"),
        func=g.struct.field("fi_func"),
        level=g.struct.field("fi_level"),
        message=g.struct.field("fi_msg").fill_null(""),
    ).filter((pl.col("level") == "warn") & pl.col("message").str.contains(LF_FAILURE))
    rows = rows.with_columns(pid=pl.coalesce("pid", "fpid"))
    hosts = ctx.ranks.select("host", pid="pid").drop_nulls().unique("pid", keep="first")
    return (
        rows.join(hosts.rename({"host": "_h"}), on="pid", how="left")
        .with_columns(host=pl.coalesce("host", "_h"))
        .drop("_h")
    )


@rule(
    "libfabric-error",
    "error",
    "libfabric (EFA/OFI provider) failure lines",
    "errors",
    searches=(LF_NEEDLE,),
)
def libfabric_error(ctx: Context) -> Iterable[Finding]:
    """libfabric's own `libfabric:<pid>:…:<prov>:<subsys>:<func>():<line><warn> …` lines that report a
    failure (an error number or failure words), e.g. the EFA provider's `efa_rdm_txe_handle_error() … err: 5,
    message: Invalid address`: a network failure on that process's host (the host comes from the NCCL lines
    of the same pid). Error for data-path subsystems (cq, ep_data, ep_ctrl, av, domain), else warning."""
    rows = libfabric_rows(ctx)
    if rows.is_empty():
        return []
    first = rows.row(0, named=True)
    msg = str(first["message"])
    why, fix = next((w, f) for p, w, f in LF_MEANINGS if not p or re.search(p, msg))
    data = rows.filter(pl.col("subsys").is_in(LF_DATA_SUBSYS))
    sev: Severity = "error" if data.height else "warning"
    host = f" on {first['host']}" if first["host"] else ""
    pid = f" (pid {first['pid']})" if first["pid"] is not None else ""
    title = f"Network failure in libfabric's {first['prov']} provider{host}{pid}: {first['func']}(): {msg}"
    cited = rows.unique(["pid", "func"], keep="first", maintain_order=True).head(6)
    return [
        make(
            "libfabric-error",
            sev,
            title[:200],
            why,
            fix,
            cited,
            ctx,
            metrics={
                "provider": first["prov"],
                "subsystem": first["subsys"],
                "lines": rows.height,
                "cause_class": "network",
            },
        )
    ]
