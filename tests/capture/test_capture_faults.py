"""Capture stage, fault specs and the per-rank injection plan (pure: no torch)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncclscope.capture.faults import KINDS, Fault, FaultSpecError, check_ranks, parse_fault, parse_faults
from ncclscope.capture.inject import Plan, mismatched_numel


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("straggler:rank=1,delay_ms=50", Fault("straggler", (1,), delay_ms=50.0)),
        ("straggler:rank=0+2,delay_ms=2.5", Fault("straggler", (0, 2), delay_ms=2.5)),
        ("hang:rank=3", Fault("hang", (3,))),
        ("hang:rank=1,at=7", Fault("hang", (1,), at=7)),
        ("mismatch:rank=0", Fault("mismatch", (0,))),
        ("crash:rank=1", Fault("crash", (1,))),
        ("crash:rank=1,code=13", Fault("crash", (1,), code=13)),
        ("iface:rank=1,name=lo", Fault("iface", (1,), name="lo")),
        ("iface:rank=1", Fault("iface", (1,), name="lo")),
        ("no-ib", Fault("no-ib", ())),
        ("no-ib:rank=2,asymmetric=yes", Fault("no-ib", (2,), asymmetric=True)),
        ("no-p2p", Fault("no-p2p", ())),
        ("NO-P2P:rank=1,asymmetric=TRUE", Fault("no-p2p", (1,), asymmetric=True)),
        (" straggler : rank = 1 , delay-ms = 5 ", Fault("straggler", (1,), delay_ms=5.0)),
    ],
)
def test_parse_valid(spec: str, expected: Fault) -> None:
    f = parse_fault(spec)
    assert f == expected
    assert f.spec == spec.strip()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("explode:rank=1", "unknown fault 'explode'"),
        ("straggler:rank=1", "needs delay_ms"),
        ("straggler:delay_ms=5", "needs rank"),
        ("straggler:rank=1,delay_ms=0", "delay_ms must be > 0"),
        ("straggler:rank=1,delay_ms=fast", "delay_ms must be a number"),
        ("straggler:rank=1,delay_ms=nan", "must be finite"),
        ("hang", "hang needs rank"),
        ("hang:rank=-1", "rank must be a non-negative integer"),
        ("hang:rank=one", "rank must be a non-negative integer"),
        ("hang:rank=1,rank=2", "rank given twice"),
        ("hang:rank=1+1", "a rank is repeated"),
        ("hang:rank=1,delay_ms=3", "unknown key(s) delay_ms for hang"),
        ("hang:rank", "expected key=value"),
        ("crash:rank=1,code=0", "code must be an exit status"),
        ("crash:rank=1,code=300", "code must be an exit status"),
        ("iface:rank=1,name=lo;rm", "interface name"),
        ("no-ib:at=3", "unknown key(s) at"),
        ("no-p2p:rank=1", "a transport mismatch, give both rank= and asymmetric=yes"),
        ("no-ib:rank=0+1", "no-ib applies to every rank"),
        ("no-p2p:asymmetric=yes", "give both rank= and asymmetric=yes"),
        ("no-p2p:rank=1,asymmetric=maybe", "asymmetric must be yes or no"),
    ],
)
def test_parse_errors_are_clear(spec: str, message: str) -> None:
    with pytest.raises(FaultSpecError) as e:
        parse_fault(spec)
    assert message in str(e.value)
    assert spec.strip() in str(e.value) or spec in str(e.value)


def test_unknown_kind_lists_every_kind() -> None:
    with pytest.raises(FaultSpecError) as e:
        parse_fault("nope")
    for kind in KINDS:
        assert kind in str(e.value)


def test_faults_are_frozen() -> None:
    f = parse_fault("hang:rank=1")
    with pytest.raises(AttributeError):
        f.kind = "crash"  # type: ignore[misc]


def test_check_ranks_against_world_size() -> None:
    faults = parse_faults(["hang:rank=1", "straggler:rank=0+3,delay_ms=1"])
    check_ranks(faults, 4)
    with pytest.raises(FaultSpecError, match=r"rank 3 is outside the job \(world size 2: ranks 0..1\)"):
        check_ranks(faults, 2)


def test_environment_faults() -> None:
    assert parse_fault("iface:rank=1,name=eth9").env() == {
        "NCCL_SOCKET_IFNAME": "eth9",
        "GLOO_SOCKET_IFNAME": "eth9",
    }
    assert parse_fault("no-ib").env() == {"NCCL_IB_DISABLE": "1"}
    assert parse_fault("no-p2p").env() == {"NCCL_P2P_DISABLE": "1"}
    assert parse_fault("hang:rank=0").env() == {}
    # Both ends of every connection see the same transport setting, unless a mismatch is asked for.
    assert parse_fault("no-p2p").applies_to(5) and parse_fault("no-ib").applies_to(3)
    assert not parse_fault("no-ib:rank=0,asymmetric=yes").applies_to(1)


specs = st.sampled_from(
    [
        "straggler:rank=1,delay_ms=50",
        "hang:rank=0,at=3",
        "mismatch:rank=2",
        "crash:rank=1,code=9",
        "crash:rank=0+1",
        "iface:rank=1,name=eth0",
        "no-ib",
        "no-ib:rank=3,asymmetric=yes",
        "no-p2p",
    ]
)


@given(st.lists(specs, max_size=4))
def test_json_round_trip(items: list[str]) -> None:
    for f in parse_faults(items):
        back = Fault.from_json(f.to_json())
        assert back == f and back.spec == f.spec


def test_plan_fires_step_faults_once_at_the_first_all_reduce() -> None:
    faults = parse_faults(["hang:rank=1", "crash:rank=2,at=6", "straggler:rank=1,delay_ms=30"])
    plan = Plan.for_rank(faults, rank=1, default_step=4)
    assert plan.delay_s == pytest.approx(0.03)
    assert plan.action(3, "all_reduce", True) == ("", None)
    assert plan.action(4, "broadcast", True) == ("", None)
    assert plan.action(4, "all_reduce", False) == ("", None)
    kind, fault = plan.action(4, "all_reduce", True)
    assert kind == "hang" and fault is not None and fault.ranks == (1,)
    other = Plan.for_rank(faults, rank=2, default_step=4)
    assert other.delay_s == 0 and other.action(4, "all_reduce", True) == ("", None)
    assert other.action(6, "all_reduce", True)[0] == "crash"
    assert Plan.for_rank(faults, rank=0, default_step=4).step_faults == ()


@given(st.integers(1, 1 << 22), st.integers(1, 64))
def test_mismatched_numel_differs_and_divides(numel: int, world: int) -> None:
    numel = max(world, numel // world * world)
    m = mismatched_numel(numel, world)
    assert m != numel and m > 0 and m % world == 0
