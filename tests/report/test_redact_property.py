"""Redaction, property test (issue 31): addresses, host names and user names in every common spelling
never survive `--redact`: zero-padded IPv4, addresses embedded in cloud host names, IPv4-mapped IPv6,
IPv6 with zone ids, `~user` and home paths, URLs with credentials. 200 examples × 50 identities =
10,000 generated identities; and redaction time stays linear in the number of hosts."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncclscope.report.redact import GENERIC_USERS, Redactor

octet = st.integers(0, 255)
first = st.integers(1, 223).filter(lambda a: a != 127)  # loopback is kept on purpose (iface-loopback)
ip4 = st.tuples(first, octet, octet, octet)
name = st.from_regex(r"[a-z][a-z0-9]{3,9}", fullmatch=True).filter(lambda u: u not in GENERIC_USERS)
hex4 = st.integers(1, 0xFFFF).map(lambda v: f"{v:x}")


@st.composite
def identity(draw: st.DrawFn) -> tuple[str, list[str]]:
    """(its spelling in a log, the strings that must not survive)."""
    a, b, c, d = draw(ip4)
    dotted = f"{a}.{b}.{c}.{d}"
    forms = {
        "plain": (f"{dotted}<{draw(st.integers(1, 65535))}>", [dotted]),
        "padded": (f"{a:03d}.{b:03d}.{c:03d}.{d:03d}", [dotted, f"{a:03d}.{b:03d}.{c:03d}.{d:03d}"]),
        "aws": (f"ip-{a}-{b}-{c}-{d}.ec2.internal", [dotted, f"{a}-{b}-{c}-{d}"]),
        "gcp": (f"{a}-{b}-{c}-{d}.compute.internal", [dotted, f"{a}-{b}-{c}-{d}"]),
        "mapped": (f"::ffff:{dotted}", [dotted, f"{b}.{c}.{d}"]),
    }
    groups = draw(st.lists(hex4, min_size=4, max_size=4))
    v6 = "fe80::" + ":".join(groups)
    forms["ip6zone"] = (f"{v6}%ib0", [v6, ":".join(groups)])
    user, secret = draw(name), draw(name)
    forms["tilde"] = (f"~{user}/runs/job.log", [f"~{user}", user])
    forms["home"] = (f"/home/{user}/venv/lib", [user])
    forms["url"] = (f"https://{user}:{secret}@git.example.org/x", [user, secret])
    return forms[draw(st.sampled_from(sorted(forms)))]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(identity(), min_size=50, max_size=50))
def test_no_identity_survives(ids: list[tuple[str, list[str]]]) -> None:
    text = "\n".join(f"node-a:1:2 [0] NCCL INFO seen {spelling} here" for spelling, _ in ids)
    out = Redactor()(text)
    for spelling, secrets in ids:
        for s in secrets:
            assert not _contains(out, s), (spelling, s)


def _contains(text: str, s: str) -> bool:
    """`s` in `text` as a token of its own (not inside a longer number or word)."""
    i = text.find(s)
    while i >= 0:
        before = text[i - 1] if i else " "
        after = text[i + len(s)] if i + len(s) < len(text) else " "
        if not (before.isalnum() or after.isalnum()):
            return True
        i = text.find(s, i + 1)
    return False


def test_redaction_time_is_linear_in_hosts() -> None:
    def run(n: int) -> float:
        lines = [
            f"node-{i:05d}:1:2 [0] NCCL INFO peer node-{(i * 7) % n:05d} 10.{i // 256}.{i % 256}.1"
            for i in range(n)
        ]
        r = Redactor()
        t = time.perf_counter()
        r.learn(lines)
        out = [r(ln) for ln in lines]
        assert "node-" not in out[-1]
        return time.perf_counter() - t

    small, big = min(run(1000) for _ in range(2)), min(run(8000) for _ in range(2))
    assert big < small * 8 * 3  # 8× the hosts and lines: within 3× of linear (a flat alternation was ~n²)
