"""Walks and streams that end (issue 30, item 5): a log directory holding a FIFO, a socket, `up -> ..`, a
dangling symlink and a file whose name is not UTF-8 finishes with notes; a named device is skipped at once."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.errors import InputError
from ncclscope.parse import classify_inputs, read_logs

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "logs" / "nccl952_ib_no_device_socket_fallback_16r.log"
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symlinks")


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    (root / "node0").mkdir(parents=True)
    shutil.copy(SAMPLE, root / "node0" / "rank0.log")
    os.mkfifo(root / "node0" / "tee.log")  # a `mkfifo`-based tee left behind: opening it blocks
    (root / "node0" / "up").symlink_to("..")  # back into the tree
    (root / "node0" / "etc").symlink_to("/etc")  # out of it
    (root / "latest.log").symlink_to("gone.log")  # a stale `latest.log`
    (root / "rank0-again.log").symlink_to(root / "node0" / "rank0.log")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "agent.sock"))
    except OSError:  # (a path too long for AF_UNIX on this machine)
        pass
    finally:
        sock.close()
    name = os.fsdecode(b"caf\xe9.log")
    shutil.copy(SAMPLE, root / name)
    return root


@posix_only
def test_walk_skips_what_is_not_a_file_with_notes(messy: Path) -> None:
    inp = classify_inputs([str(messy)])
    assert [Path(p).name for p in inp.logs] == ["caf\\xe9.log", "rank0.log"]
    text = "\n".join(inp.notes)
    assert "1 named pipe(s)" in text and "tee.log" in text
    assert "3 symlink(s) (not followed" in text
    assert "1 dangling symlink(s)" in text and "latest.log" in text


@posix_only
def test_a_name_that_is_not_utf8_is_read_and_cited(messy: Path) -> None:
    logs = classify_inputs([str(messy)]).logs
    lf = read_logs([p for p in logs if "caf" in p])
    assert lf.inputs[0].path.endswith("caf\\xe9.log") and lf.coverage.nccl_lines == 16


@posix_only
def test_cli_on_the_messy_directory_finishes(messy: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "ncclscope", "analyze", str(messy), "-q", "-f", "json"],
        capture_output=True,
        text=True,
        timeout=120,  # a FIFO opened or `up` followed would never end
        env=env,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    assert "named pipe" in run.stderr and "symlink" in run.stderr


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom"])
def test_named_device_is_skipped_at_once(dev: str) -> None:
    if not os.path.exists(dev):
        pytest.skip(f"{dev} is absent")
    with pytest.raises(InputError, match="a device, not a log"):
        classify_inputs([dev])
    inp = classify_inputs([dev, str(SAMPLE)])
    assert inp.logs == (str(SAMPLE),) and any("a device" in n for n in inp.notes)


@posix_only
def test_named_fifo_is_read_as_a_stream(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert classify_inputs([str(fifo)]).logs == (str(fifo),)  # never opened while sorting: no block
    writer = subprocess.Popen(["sh", "-c", f'cat "{SAMPLE}" > "{fifo}"'])
    try:
        lf = read_logs([str(fifo)])
    finally:
        writer.wait(timeout=30)
    assert lf.coverage.nccl_lines == 16


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_a_note(tmp_path: Path) -> None:
    shutil.copy(SAMPLE, tmp_path / "a.log")
    locked = tmp_path / "b.log"
    shutil.copy(SAMPLE, locked)
    locked.chmod(0)
    inp = classify_inputs([str(tmp_path)])
    assert inp.logs == (str(tmp_path / "a.log"),) and any("b.log: cannot be read" in n for n in inp.notes)


@posix_only
def test_trace_directory_walk_ends(tmp_path: Path) -> None:
    from ncclscope.parse.traces.read import expand_trace_paths

    traces = REPO / "samples" / "traces" / "hta_sampled_2rank"
    root = tmp_path / "traces"
    shutil.copytree(traces, root)
    (root / "up").symlink_to("..")
    os.mkfifo(root / "live.json")
    got = expand_trace_paths([str(root)])
    assert [Path(p).name for p in got] == sorted(p.name for p in traces.glob("*.json.gz"))


def test_trace_and_dump_inside_an_archive_are_read(tmp_path: Path) -> None:
    import zipfile

    from ncclscope.session import analyze

    trace = REPO / "samples" / "traces" / "single_rank" / "hta_nccl_data_rank0_of2.json.gz"
    with zipfile.ZipFile(tmp_path / "ticket.zip", "w") as zf:
        zf.write(SAMPLE, "logs/rank0.log")
        zf.write(trace, "prof/rank0.pt.trace.json.gz")
    s = analyze([str(tmp_path / "ticket.zip")])
    assert s.traces is not None and s.traces.notes is not None
    assert s.logs.inputs[0].path.endswith("ticket.zip!logs/rank0.log")
