"""Redaction: pseudonyms are consistent, cover every identifying family, and leave the rest alone."""

from __future__ import annotations

import json
import re

import pytest

from ncclscope.report import html as H
from ncclscope.report import render
from ncclscope.report.redact import Redactor, for_session

from .conftest import ADDRS, HOSTS, USER, make_session


def redactor(*hosts: str) -> Redactor:
    r = Redactor()
    for h in hosts:
        r.add_host(h)
    return r


@pytest.mark.parametrize(
    "text, expected",
    [
        ("peer 10.1.2.3<1234> and 10.1.2.4, 10.1.3.3", "peer ip-1.1<1234> and ip-1.2, ip-2.1"),
        ("Using [0]ib0:fe80::1a2b:3c4d:5e6f:7a8b%ib0<0>", "Using [0]ib0:fe80::ip6-1%ib0<0>"),
        (
            "localGid fd00:7084:de06:7bf9:fa0e:e134:af46:512e remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
            "localGid ip6-1 remoteGidsip6-2",
        ),
        (
            "[1]veth75fa783:fe80:fb33:e7b6:bd71:5c40:d6f%veth75fa783<0>",
            "[1]veth75fa783:fe80::ip6-1%veth75fa783<0>",
        ),
        ("eth1:fe80:1525:7b25:4e3f:531a:3200%eth1<0>", "eth1:fe80::ip6-1%eth1<0>"),
        ("[0]ens5f0:fe80::1a2b:3c4d:5e6f:7a8b%ens5f0<0>", "[0]ens5f0:fe80::ip6-1%ens5f0<0>"),
        (
            "comm 0x55d1c2a3b4c0 commId 0x7c6d1f2b9e3a4c55 opCount 1a",
            "comm 0xptr-1 commId 0xptr-2 opCount 1a",
        ),
        ("HWaddr 02:42:ac:11:00:02", "HWaddr mac-1"),
        (
            'File "/home/alice/train.py" and /Users/bob/x, C:\\Users\\carol\\y',
            'File "/home/user-1/train.py" and /Users/user-2/x, C:\\Users\\user-3\\y',
        ),
    ],
)
def test_patterns(text: str, expected: str) -> None:
    assert redactor()(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "c10d::ProcessGroupNCCL::allreduce",
        "std::runtime_error",
        "2024-05-22 20:41:43",
        "12:34:56:78",
        "127.0.0.1 ::1 :: 0.0.0.0",
        "NCCL version 2.19.3+cuda12.2",
        "busId 4a000 opCount 2a",
        "torch::c10d::x",
    ],
)
def test_leaves_non_identifying_text_alone(text: str) -> None:
    assert redactor()(text) == text


def test_hosts_are_replaced_as_whole_names_only() -> None:
    r = redactor("node-1", "gpu")
    assert (
        r("node-1:12:13 [0] NCCL INFO on node-10 and node-1.cluster")
        == "host-1:12:13 [0] NCCL INFO on node-10 and host-1.cluster"
    )
    # '-', '_' and '.' end a name: safer to over-redact `gpu-util` than to leak `gpu-node-rank3.log`.
    assert r("gpu-util gpu_0 gpu gpu2") == "host-2-util host-2_0 host-2 gpu2"
    assert redactor()("localhost:29500") == "localhost:29500"


def test_prefix_hosts_are_learned_from_text() -> None:
    r = Redactor()
    r.learn(["ip-host-07:1234:1240 [3] NCCL INFO x", "later mention of ip-host-07"])
    assert r("later mention of ip-host-07") == "later mention of host-1"


def test_user_names_become_words_once_learned() -> None:
    r = Redactor()
    r.learn(["/home/alice/job.log", "owner alice"])
    assert r("owner alice, /home/alice/x") == "owner user-1, /home/user-1/x"
    r.learn(["/home/ubuntu/x"])
    assert r("ubuntu 22.04 /home/ubuntu/x") == "ubuntu 22.04 /home/user-2/x"  # generic names stay words


def test_same_value_same_pseudonym_and_tree() -> None:
    r = redactor("a-host")
    doc = {"a-host": ["10.0.0.1", {"k": "a-host 10.0.0.1"}], "n": 3}
    assert r.tree(doc) == {"host-1": ["ip-1.1", {"k": "host-1 ip-1.1"}], "n": 3}


def _outputs(redact: bool) -> dict[str, str]:
    s = make_session()
    out = {
        fmt: render(s, fmt, command=f"ncclscope report /home/{USER}/jobs -o r.html", redact=redact)
        for fmt in ("json", "markdown", "html")
    }
    out["html"] = out["html"].replace(H._plotly_js(), "")
    return out


def test_hand_built_session_is_clean_in_every_format() -> None:
    identifying = [*HOSTS, *ADDRS, "10.99.1.5", USER, "0x55d1c2a3b4", "0x7c6d1f2b9e3a4c55", "fe80::42:acff"]
    plain = _outputs(redact=False)
    for fmt, text in plain.items():
        assert any(v in text for v in identifying), fmt  # the values are there to begin with
    for fmt, text in _outputs(redact=True).items():
        leaks = [v for v in identifying if v in text]
        assert not leaks, f"{fmt} leaks {leaks}"


def test_pseudonyms_agree_across_formats() -> None:
    s = make_session()
    expected = for_session(s).hosts[HOSTS[1]]
    out = _outputs(redact=True)
    doc = json.loads(out["json"])
    assert doc["findings"][0]["hosts"] == [expected]
    assert re.search(rf"\*\*Hosts:\*\* {expected}\b", out["markdown"])
    assert f"hosts {expected}<" in out["html"]
