"""Run stage, knowledge: the job's evidence environment (user wins, aliases kept whole, --coll,
--no-fr), torchrun's options, the node layout under Slurm / Open MPI."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.run.launchers import job_python, plan_launch, torchrun_at
from ncclscope.run.layout import RunLayout, task_id
from ncclscope.run.settings import NOT_SET, SETTINGS, Value, elsewhere, env_updates, plan_env

NODE = "/out/host"


def test_every_setting_says_why_and_where_it_comes_from() -> None:
    for s in SETTINGS:
        assert s.names and s.value and len(s.why) > 20 and s.source, s
    names = [n for s in SETTINGS for n in s.names]
    assert len(names) == len(set(names))
    assert {n for n, _ in NOT_SET if "=" not in n}.isdisjoint(names)  # left alone means not set


def test_empty_environment_gets_every_setting() -> None:
    env = env_updates(plan_env({}, NODE))
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["NCCL_DEBUG_FILE"] == f"{NODE}/nccl/nccl.%h.%p.log"
    assert (
        env["TORCH_FR_DUMP_TEMP_FILE"]
        == env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"]
        == f"{NODE}/flight/nccl_trace_rank_"
    )
    assert env["TORCH_FR_BUFFER_SIZE"] == env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000"
    assert "COLL" not in env["NCCL_DEBUG_SUBSYS"].split(",")
    assert env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] == "[rank${rank}]:"  # a script may start torchrun
    assert "{node}" not in "".join(env.values())


def test_a_callers_value_replaces_the_default_with_its_reason_and_the_user_still_wins() -> None:
    wait = Value("TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "5000", "a short job timeout needs a short wait")
    c = next(c for c in plan_env({}, NODE, values=(wait,)) if c.setting.names[0] == wait.name)
    assert (c.action, c.value, c.to_json()["why"]) == ("set", "5000", wait.why)
    default = next(c for c in plan_env({}, NODE) if c.setting.names[0] == wait.name)
    assert default.value == "15000" and default.to_json()["why"] == default.setting.why
    mine = {wait.name: "9000"}
    c = next(c for c in plan_env(mine, NODE, values=(wait,)) if c.setting.names[0] == wait.name)
    assert (c.action, c.value) == ("kept", "9000")
    with pytest.raises(ValueError, match="NCCL_NOSUCH"):
        plan_env({}, NODE, values=(Value("NCCL_NOSUCH", "1", "x"),))


def test_the_users_value_wins_and_is_reported_as_kept() -> None:
    choices = plan_env({"NCCL_DEBUG": "WARN"}, NODE)
    c = next(c for c in choices if c.setting.names == ("NCCL_DEBUG",))
    assert (c.action, c.value, c.user) == ("kept", "WARN", (("NCCL_DEBUG", "WARN"),))
    assert "NCCL_DEBUG" not in env_updates(choices)
    assert c.to_json()["action"] == "kept"


def test_an_old_alias_set_by_the_user_keeps_the_whole_group() -> None:
    # torch 2.13 reads TORCH_FR_BUFFER_SIZE before TORCH_NCCL_TRACE_BUFFER_SIZE: setting the new name
    # beside the user's old one would override the user's 0.
    env = env_updates(plan_env({"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}, NODE))
    assert "TORCH_FR_BUFFER_SIZE" not in env and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env
    env = env_updates(plan_env({"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/mine/fr_"}, NODE))
    assert "TORCH_FR_DUMP_TEMP_FILE" not in env


def test_an_empty_value_is_still_the_users() -> None:
    assert "NCCL_DEBUG_SUBSYS" not in env_updates(plan_env({"NCCL_DEBUG_SUBSYS": ""}, NODE))


def test_coll_no_fr_and_torchrun() -> None:
    env = env_updates(plan_env({}, NODE, coll=True, flight=False))
    assert env["NCCL_DEBUG_SUBSYS"].endswith(",COLL")
    assert not any(k.startswith("TORCH_FR_") or "DUMP" in k or "MONITORING" in k for k in env)


def test_kept_paths_outside_the_run_directory_are_pointed_out() -> None:
    user = {"NCCL_DEBUG_FILE": "/scratch/nccl.%h.%p", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": f"{NODE}/fr_"}
    notes = elsewhere(plan_env(user, NODE), NODE)
    assert len(notes) == 1 and notes[0].startswith("NCCL_DEBUG_FILE is yours (/scratch/nccl.%h.%p)")
    assert elsewhere(plan_env({}, NODE), NODE) == ()


HIDDEN, VISIBLE = Path("/o/h/.torchrun"), Path("/o/h/torchrun")


@pytest.mark.parametrize(
    ("argv", "at"),
    [
        (["torchrun", "--nproc-per-node", "2", "t.py"], 1),
        (["/venv/bin/torchrun", "t.py"], 1),
        (["python3", "-m", "torch.distributed.run", "t.py"], 3),
        (["python", "-m", "torch.distributed.launch", "t.py"], 3),
        (["python", "train.py"], None),
        (["srun", "torchrun", "t.py"], None),
        (["python", "-m", "mymod"], None),
    ],
)
def test_torchrun_is_recognised(argv: list[str], at: int | None) -> None:
    assert torchrun_at(argv) == at


def test_torchrun_options_go_after_torchrun_and_the_script_is_untouched() -> None:
    argv = ["torchrun", "--nproc-per-node", "2", "train.py", "--tee", "x", "--log-dir", "y"]
    launch = plan_launch(argv, {}, HIDDEN, VISIBLE)
    assert launch.argv == ("torchrun", "--log-dir", str(HIDDEN), "--tee", "3", *argv[1:])
    assert launch.torchrun_dir == HIDDEN and launch.user_options == ()


def test_the_users_torchrun_log_options_win() -> None:
    argv = ["torchrun", "--log_dir=/mine", "-t", "1", "--standalone", "t.py"]
    launch = plan_launch(argv, {}, HIDDEN, VISIBLE)
    assert launch.argv == tuple(argv) and launch.added == ()
    assert dict(launch.user_options) == {"log_dir": "/mine", "tee": "1"}
    assert plan_launch(["torchrun", "t.py"], {"PET_TEE": "2"}, HIDDEN, VISIBLE).added == (
        "--log-dir",
        str(HIDDEN),
    )


def test_redirected_streams_go_to_a_visible_directory_and_are_not_teed() -> None:
    launch = plan_launch(["torchrun", "--redirects", "3", "t.py"], {}, HIDDEN, VISIBLE)
    assert launch.added == ("--log-dir", str(VISIBLE))
    launch = plan_launch(["torchrun", "--local-ranks-filter", "0", "t.py"], {}, HIDDEN, VISIBLE)
    assert launch.added == ("--log-dir", str(VISIBLE), "--tee", "3")


def test_other_commands_run_as_given() -> None:
    argv = ["srun", "-N2", "python", "train.py"]
    launch = plan_launch(argv, {}, HIDDEN, VISIBLE)
    assert launch.argv == tuple(argv) and not launch.torchrun and launch.added == ()


@pytest.mark.parametrize(
    ("env", "task"),
    [
        ({}, None),
        ({"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "2"}, None),
        ({"SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "16", "SLURM_STEP_NUM_NODES": "2"}, 3),
        ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_LOCAL_SIZE": "8"}, 5),
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}, None),
        ({"SLURM_PROCID": "x", "SLURM_STEP_NUM_TASKS": "16", "SLURM_STEP_NUM_NODES": "2"}, None),
    ],
)
def test_one_directory_per_node_and_per_task_when_tasks_share_a_node(
    env: dict[str, str], task: int | None
) -> None:
    assert task_id(env) == task
    lay = RunLayout(Path("/o"), "gpu-01.cluster", task)
    assert lay.node_dir == (
        Path("/o/gpu-01.cluster") if task is None else Path(f"/o/gpu-01.cluster/task{task}")
    )


def test_a_caller_may_name_the_node_directory() -> None:
    """capture on one node writes into --out itself, on several into <host>.node<N>."""
    assert RunLayout(Path("/o"), "gpu-01", None, "").node_dir == Path("/o")
    assert RunLayout(Path("/o"), "gpu-01", None, "gpu-01.node1").manifest == Path("/o/gpu-01.node1/run.json")


def test_odd_host_names_stay_inside_the_run_directory() -> None:
    assert RunLayout(Path("/o"), "../../etc").node_dir.parent == Path("/o")
    assert RunLayout(Path("/o"), "").node_dir == Path("/o/host")


def test_the_jobs_python_is_found_from_the_command(tmp_path: Path) -> None:
    script = tmp_path / "torchrun"
    script.write_text("#!/opt/env/bin/python3.11\nimport sys\n")
    script.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    assert job_python([str(script), "t.py"], env) == "/opt/env/bin/python3.11"
    assert job_python(["torchrun", "t.py"], env) == "/opt/env/bin/python3.11"
    (tmp_path / "python3").symlink_to(script)
    assert job_python(["python3", "t.py"], env) == str(tmp_path / "python3")
    script.write_text("#!/bin/bash\n")
    assert job_python(["torchrun"], env) is None
    assert job_python(["no-such-thing"], env) is None and job_python([], env) is None
