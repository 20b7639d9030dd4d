"""Logs that survive their writer: flushed and fsync'd chunks, metadata from the start,
and killed or truncated logs read up to their last complete chunk and recovered into a
finished bag that rosbags and mcap's reader open. The slow test SIGKILLs the deploy node
while it logs from the virtual robot (processes over DDS on loopback)."""

import json
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from _g1_policy import export_g1_policy
from _procs import g1_node, virtual_g1
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader

from simreal import cli
from simreal.deploy.logs import LogMeta, LogReadError, RolloutLog, read_rollout
from simreal.deploy.logs.recover import recover_bag, salvage_mcap

NAMES = tuple(f"j{i}" for i in range(3))
META = LogMeta(robot="g1", joint_names=NAMES, control_dt=0.02, command_fields=("q",))


def write_log(path: Path, chunks: int, per_chunk: int = 20) -> RolloutLog:
    """A log with `chunks` flushed chunks of joint states (left open)."""
    log = RolloutLog(path, META)
    rng = np.random.default_rng(0)
    for c in range(chunks):
        for k in range(per_chunk):
            t = (c * per_chunk + k) * 0.02
            log.joint_state(t, rng.random(3), rng.random(3), rng.random(3))
        log.bag.flush()
    return log


def rosbags_count(path: Path) -> int:
    with Reader(path) as reader:
        return sum(1 for _ in reader.messages())


def test_metadata_is_on_disk_from_the_start_and_after_each_flush(tmp_path):
    log = RolloutLog(tmp_path / "log", META)
    partial = tmp_path / "log.partial"
    info = yaml.safe_load((partial / "metadata.yaml").read_text())
    assert info["rosbag2_bagfile_information"]["message_count"] == 0
    mcap_file = partial / "log_0.mcap"
    before = mcap_file.stat().st_size
    log.joint_state(0.0, np.zeros(3), np.zeros(3), np.zeros(3))
    log.bag.flush()
    assert mcap_file.stat().st_size > before
    info = yaml.safe_load((partial / "metadata.yaml").read_text())
    assert info["rosbag2_bagfile_information"]["message_count"] == 2  # meta + joint state
    log.close()


def test_messages_reach_the_disk_within_the_flush_interval(tmp_path):
    log = RolloutLog(tmp_path / "log", META)
    log.bag.flush_every_s = 0.0  # every write flushes: the file grows with each one
    mcap_file = tmp_path / "log.partial" / "log_0.mcap"
    sizes = []
    for k in range(3):
        log.joint_state(k * 0.02, np.zeros(3), np.zeros(3), np.zeros(3))
        sizes.append(mcap_file.stat().st_size)
    assert sizes[0] < sizes[1] < sizes[2]
    log.close()


def test_unclosed_log_reads_whole_and_says_it_was_cut_off(tmp_path):
    log = write_log(tmp_path / "log", chunks=3)
    rollout = read_rollout(tmp_path / "log")  # only log.partial exists
    assert rollout.path.name == "log.partial"
    assert len(rollout.series["joint_position"].t) == 60
    (report,) = rollout.recovery
    assert report["bytes_lost"] == 0 and "never closed" in report["note"]
    log.close()
    assert read_rollout(tmp_path / "log").recovery == []  # closed: complete


def test_truncated_log_reads_up_to_its_last_complete_chunk(tmp_path):
    log = write_log(tmp_path / "src", chunks=3)
    log.close()
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "src", cut)
    mcap_file = cut / "src_0.mcap"
    data = mcap_file.read_bytes()
    whole = salvage_mcap(tmp_path / "src" / "src_0.mcap")
    assert whole.complete and whole.lost_bytes == 0
    mcap_file.write_bytes(data[: int(len(data) * 0.6)])  # into the second or third chunk
    with pytest.raises(Exception), mcap_file.open("rb") as f:  # noqa: B017  mcap refuses it
        list(make_reader(f).iter_messages())
    rollout = read_rollout(cut)
    n = len(rollout.series["joint_position"].t)
    assert n in (20, 40)  # whole chunks only
    (report,) = rollout.recovery
    assert report["bytes_lost"] > 0 and "runs past the end" in report["note"]

    out = tmp_path / "recovered"
    result = recover_bag(cut, out)
    assert result["files"][0]["messages_recovered"] == n + 1  # and the meta message
    assert rosbags_count(out) == n + 1
    with (out / "recovered_0.mcap").open("rb") as f:
        assert sum(1 for _ in make_reader(f).iter_messages()) == n + 1
    assert len(read_rollout(out).series["joint_position"].t) == n
    assert read_rollout(out).recovery == []


def test_nothing_readable_is_a_clear_error(tmp_path):
    log = RolloutLog(tmp_path / "log", META)
    mcap_file = tmp_path / "log.partial" / "log_0.mcap"
    log.bag._stream.close()
    mcap_file.write_bytes(b"\x89MCA")
    with pytest.raises(LogReadError, match=r"log_0\.mcap: no readable MCAP records"):
        read_rollout(tmp_path / "log")


@pytest.mark.slow
def test_deploy_node_killed_mid_log_replays_and_recovers(tmp_path, capsys):
    dom = 1 + (os.getpid() * 13) % 230
    policy = export_g1_policy(tmp_path / "g1.onnx")
    robot = virtual_g1(dom, "--hang")
    node = None
    try:
        node = g1_node(policy, dom, "--auto-start", "--log", str(tmp_path / "run"))
        node.wait_for("HOLD -> ACTIVE", 30)
        time.sleep(1.5)
        node.popen.send_signal(signal.SIGKILL)
        node.popen.wait(15)
    finally:
        robot.stop()
        if node:
            node.stop()
    partial = tmp_path / "run.partial"
    assert (partial / "metadata.yaml").is_file() and not (tmp_path / "run").exists()

    capsys.readouterr()
    assert cli.main(["replay", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert "read up to its last complete chunk" in captured.err
    assert report["recovery"][0]["messages_recovered"] > 0
    assert report["control_steps"] > 500  # ACTIVE at 500 Hz for more than a second

    out = tmp_path / "recovered"
    assert cli.main(["replay", str(tmp_path / "run"), "--recover", str(out)]) == 0
    recovered = json.loads(capsys.readouterr().out)["files"][0]["messages_recovered"]
    assert rosbags_count(out) == recovered
    assert cli.main(["replay", str(out)]) == 0
    assert "recovery" not in json.loads(capsys.readouterr().out)
