"""Findings, advice: the existing error rules take their why/try from the first line's own words (through
its meaning family, grammars/catalog/meanings.json) and say the cause class the diagnosis links by."""

from __future__ import annotations

from logframes_builder import logs, proc, run, warn

A, B = proc("node-a", 100, 0), proc("node-b", 200, 0)
CLAIMED = "Bootstrap Root : rank 1 of 2 ranks has already checked in"


def test_a_rank_claimed_twice_is_not_called_a_connection_failure() -> None:
    lf = logs(
        warnings=[
            warn(A, "bootstrap", CLAIMED, line=2),
            warn(B, "socket", "Net : Connection closed by remote peer node-a<4242>", line=3),
        ]
    )
    [f] = run("connection-failure", lf)
    assert f.title.startswith("Two processes claimed one rank") and "firewall" not in f.fix.lower()
    assert "same rank" in f.why and f.metrics["cause_class"] == "configuration"


def test_a_refused_connect_keeps_its_own_advice_and_an_echo_is_a_peer_failure() -> None:
    refused = warn(A, "socket", "socketStartConnect: Connect to 10.0.0.9<1> failed : Connection refused")
    [f] = run("connection-failure", logs(warnings=[refused]))
    assert "Nothing listened" in f.why and f.metrics["cause_class"] == "network"
    closed = warn(A, "socket", "socketProgress: Connection closed by remote peer node-b<5123>")
    [g] = run("connection-failure", logs(warnings=[closed]))
    assert g.metrics["cause_class"] == "peer-failure"


def test_shm_advice_depends_on_what_failed() -> None:
    full = warn(A, "shm", "Call to posix_fallocate failed : No space left on device")
    attach = warn(A, "shm", "Error while attaching to shared memory segment /dev/shm/nccl-x (size 9637888)")
    [f] = run("shm-exhausted", logs(warnings=[full]))
    [g] = run("shm-exhausted", logs(warnings=[attach]))
    assert "--shm-size=8g" in f.fix
    assert "--ipc=host" in g.fix and "will not help" in g.fix and "had room" in g.why


def test_ib_flush_errors_are_echoes() -> None:
    flushed = warn(A, "ib_completion", "NET/IB : Got completion from peer x with error 5", status=5)
    [f] = run("ib-error", logs(warnings=[flushed]))
    assert f.metrics["cause_class"] == "peer-failure"
    retry = warn(A, "ib_completion", "NET/IB : Got completion from peer x with error 12", status=12)
    [g] = run("ib-error", logs(warnings=[retry]))
    assert g.metrics["cause_class"] == "network"


def test_ib_advice_follows_the_status() -> None:
    prot = warn(A, "ib_completion", "NET/IB : Got completion from peer x with error 4, opcode 1", status=4)
    [f] = run("ib-error", logs(warnings=[prot]))
    assert "ACS" in f.fix and f.metrics["cause_class"] == "hardware/driver"
    gid = warn(A, "ib_async", "NET/IB : Got async event : GID table change")
    [g] = run("ib-error", logs(warnings=[gid]))
    assert "GID table changed" in g.why and g.metrics["cause_class"] == "configuration"
