"""Findings, error rules: root failures told apart from their echoes, decoded IB/CUDA/SHM/NVLS errors."""

from __future__ import annotations

import pytest
from logframes_builder import init, logs, proc, run, warn

A, B, C = proc("node-a", 100, 0), proc("node-b", 200, 0), proc("node-c", 300, 0)
CLOSED = "socketProgress: Connection closed by remote peer node-c<5123>"


def test_connection_root_named_before_echoes() -> None:
    lf = logs(
        inits=[init(A, 0, 3), init(B, 1, 3), init(C, 2, 3)],
        warnings=[
            warn(A, "socket", CLOSED),
            warn(C, "socket", "socketStartConnect: Connect to 10.0.0.9<1> failed : Connection refused"),
            warn(B, "proxy", "[Service thread] Error encountered progressing operation=Connect"),
        ],
    )
    [f] = run("connection-failure", lf)
    assert f.severity == "error" and "rank 2" in f.title and "refused" in f.evidence[0].text
    assert "echoes in 2" in f.title


def test_timestamps_decide_first_failure() -> None:
    lf = logs(
        warnings=[
            warn(A, "socket", CLOSED, ts_us=1.0),
            warn(C, "socket", "Connect to 10.0.0.9<1> failed : Connection refused", ts_us=5.0),
        ]
    )
    [f] = run("connection-failure", lf)
    assert "closed by remote peer" in f.evidence[0].text


def test_echo_only_with_ib_root_is_warning() -> None:
    lf = logs(
        warnings=[
            warn(A, "ib_completion", "NET/IB : Got completion from peer x with error 4", status=4),
            {
                **B,
                "level": "INFO",
                "family": "proxy",
                "message": "[Service thread] Connection closed by localRank 0",
            },
        ]
    )
    [f] = run("connection-failure", lf)
    assert f.severity == "warning" and "consequence" in f.title


def test_retries_exhausted_is_error_unexhausted_warning() -> None:
    msg = "socketPollConnect: connect returned No route to host, retrying ({}/34) after sleep for 100 msec"
    row = {**A, "level": "INFO", "family": "socket"}
    [f] = run(
        "connection-failure", logs(warnings=[{**row, "message": msg.format(34), "text": msg.format(34)}])
    )
    assert f.severity == "error"
    [f] = run("connection-failure", logs(warnings=[{**row, "message": msg.format(3), "text": msg.format(3)}]))
    assert f.severity == "warning"


def test_silent_trail_in_socket_code() -> None:
    lf = logs(
        trail=[
            {**A, "src_file": "misc/socket.cc", "src_line": 47, "code": 3},
            {**A, "src_file": "bootstrap.cc", "src_line": 90, "code": 3},
        ]
    )
    [f] = run("connection-failure", lf)
    assert "error trail" in f.title


def test_benign_and_unrelated_warnings_are_silent() -> None:
    lf = logs(
        warnings=[
            warn(A, "plugin", "Failed to open libibverbs.so[.1]", benign=True),
            warn(A, "collnet", "CollNet is not supported or fails to initialize", benign=True),
        ],
        trail=[{**A, "src_file": "init.cc", "src_line": 1, "code": 5}],
    )
    assert run("connection-failure", lf) == []


def test_ib_status_decoded_and_flush_is_consequence() -> None:
    lf = logs(
        inits=[init(A, 0, 2), init(B, 1, 2)],
        warnings=[
            warn(A, "ib_completion", "Got completion from peer 10.0.0.2<1> with status=5", status=5),
            warn(
                B,
                "ib_completion",
                "Got completion from peer 10.0.0.1<1> with status=12",
                status=12,
                vendor_err=129,
            ),
        ],
    )
    [f] = run("ib-error", lf)
    assert "status 12" in f.title and "retry" in f.title and "rank 1" in f.title
    assert f.metrics["statuses"] == [5, 12] and "GID" in f.fix


def test_ib_async_event_and_silence() -> None:
    [f] = run("ib-error", logs(warnings=[warn(A, "ib_async", "NET/IB : Got async event : GID table change")]))
    assert "GID table change" in f.title
    assert f.severity == "error"  # a RoCE address changed under NCCL's GID: not a mere notification
    assert run("ib-error", logs(network=[{**A, "kind": "ib_dev", "hca": "mlx5_0"}])) == []


def test_cuda_oom_and_generic() -> None:
    [f] = run("cuda-error", logs(warnings=[warn(A, "oom", "Cuda failure 'out of memory'")]))
    assert "out of memory" in f.title
    [f] = run("cuda-error", logs(warnings=[warn(A, "cuda", "Cuda failure 'invalid resource handle'")]))
    assert "out of memory" not in f.title


def test_cuda_from_torch_exception_only() -> None:
    lf = logs(
        torch=[
            {
                "kind": "backend_error",
                "text": "DistBackendError: NCCL error in: x.cpp:1, unhandled cuda error",
            }
        ]
    )
    assert [f.id for f in run("cuda-error", lf)] == ["cuda-error"]


def test_nvls_cuda_failure_is_nvls_not_cuda() -> None:
    lf = logs(warnings=[warn(A, "nvls", "Cuda failure 'invalid argument'", src_file="transport/nvls.cc")])
    assert run("cuda-error", lf) == [] and [f.id for f in run("nvls-failure", lf)] == ["nvls-failure"]


def test_nvls_unavailable_is_benign() -> None:
    lf = logs(channels=[{**A, "kind": "nvls_unavailable"}])
    assert run("nvls-failure", lf) == []


def test_shm() -> None:
    [f] = run(
        "shm-exhausted",
        logs(warnings=[warn(A, "shm", "Error: failed to extend /dev/shm/nccl-x to 5967876 bytes")]),
    )
    assert "--shm-size" in f.fix
    assert run("shm-exhausted", logs(warnings=[warn(A, "socket", CLOSED)])) == []


def test_duplicate_gpu_warn_and_bus_id_clash() -> None:
    [f] = run(
        "duplicate-gpu",
        logs(
            warnings=[
                warn(
                    A, "duplicate_gpu", "Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000"
                )
            ]
        ),
    )
    assert f.severity == "error"
    a1 = proc("node-a", 101, 0)
    lf = logs(inits=[init(A, 0, 2, bus_id="1000"), init(a1, 1, 2, bus_id="1000")])
    assert [f.id for f in run("duplicate-gpu", lf)] == ["duplicate-gpu"]


def test_every_rank_on_device_zero_is_not_duplicate() -> None:
    lf = logs(inits=[init(A, 0, 2, bus_id="1000"), init(B, 1, 2, bus_id="1000")])  # different hosts
    assert run("duplicate-gpu", lf) == []


def test_nvls_available_on_some_nodes_only() -> None:
    lf = logs(channels=[{**A, "kind": "nvls_unavailable"}, {**B, "kind": "nvls_comm"}])
    [f] = run("nvls-failure", lf)
    assert f.severity == "warning" and f.hosts == ("node-a", "node-b")
    assert (
        run(
            "nvls-failure",
            logs(channels=[{**A, "kind": "nvls_unavailable"}, {**B, "kind": "nvls_unavailable"}]),
        )
        == []
    )


def test_unexplained_warn_is_raised_and_claimed_or_benign_warns_are_not() -> None:
    odd = warn(A, "other", "Weird thing 17 happened on 0x7f00")
    [f] = run("unexplained-warn", logs(warnings=[odd]))
    assert f.severity == "warning" and "Weird thing 17" in f.title
    benign = warn(A, "other", "NET/IB :SHARP coll init error: Cannot create SHArP job(-11)", benign=True)
    assert run("unexplained-warn", logs(warnings=[benign])) == []
    [b] = run("benign-warn", logs(warnings=[benign]))
    assert b.severity == "info" and "SHARP" in b.why


def test_a_warn_of_the_shape_a_finding_cites_is_explained() -> None:
    from ncclscope.align import identify, job_phase
    from ncclscope.findings import Context, run_rules

    lf = logs(
        warnings=[
            warn(A, "socket", "Connect to 10.0.0.2<4000> failed : Connection refused"),
            warn(B, "socket", "Connect to 10.0.0.3<4001> failed : Connection refused"),
        ]
    )
    ranks, comms = identify(lf)
    found = run_rules(
        Context(logs=lf, ranks=ranks, comms=comms, phase=job_phase(lf)),
        only=["connection-failure", "unexplained-warn"],
    )
    assert [f.id for f in found] == ["connection-failure"]


def test_service_thread_closures_after_teardown_are_benign_but_echoes_after_a_failure() -> None:
    down = {**A, "phase": "destroy_complete", "rank": 0, "nranks": 2, "line": 100}
    close = warn(A, "proxy", "[Service thread] Accept failed Resource temporarily unavailable", line=101)
    lf = logs(inits=[down], warnings=[close])
    assert run("connection-failure", lf) == [] and run("unexplained-warn", lf) == []
    oom = warn(B, "cuda", "Cuda failure 'out of memory'", line=50)
    failed = logs(inits=[down], warnings=[oom, close])
    assert [f.id for f in run("connection-failure", failed)] == ["connection-failure"]


def test_incompatible_peer_gets_its_own_advice_not_firewall() -> None:
    lf = logs(
        warnings=[
            warn(
                A,
                "socket",
                "socketAccept: connecting to address with family 17 is neither AF_INET(2) nor AF_INET6(10)",
            )
        ]
    )
    [f] = run("connection-failure", lf)
    assert f.metrics["cause"] == "incompatible-peer" and "A firewall does not cause this" in f.fix
    [g] = run(
        "connection-failure",
        logs(warnings=[warn(A, "socket", "Connect to 10.0.0.2<4000> failed : No route to host")]),
    )
    assert g.metrics["cause"] == "no-route" and "NCCL_SOCKET_IFNAME" in g.fix


@pytest.mark.parametrize(
    "event",
    ["client reregistration", "SM change", "path migrated", "communication established"],
)
def test_ib_notification_events_alone_are_info(event: str) -> None:
    [f] = run("ib-error", logs(warnings=[warn(A, "ib_async", f"NET/IB : Got async event : {event}")]))
    assert f.severity == "info" and event in f.title


@pytest.mark.parametrize(
    "event",
    [
        "port error",
        "local catastrophic error",
        "CQ error",
        "async fatal event: QP",
        "LID change",
        "port active",
    ],
)
def test_ib_failure_events_stay_errors(event: str) -> None:
    [f] = run("ib-error", logs(warnings=[warn(A, "ib_async", f"NET/IB : Got async event : {event}")]))
    assert f.severity == "error"


def test_a_notification_beside_a_completion_error_is_still_an_error() -> None:
    rows = [
        warn(A, "ib_async", "NET/IB : Got async event : client reregistration"),
        {
            **warn(A, "ib_completion", "NET/IB : Got completion from peer 10.0.0.2<1> with status=12"),
            "status": 12,
        },
    ]
    [f] = run("ib-error", logs(warnings=rows))
    assert f.severity == "error"
