"""Per-tick costs of the deploy loop's message work, old path and new side by side.

G1 messages: cyclonedds' Python IDL objects (build or read the object, serialize or
deserialize, crc over the packed struct) against the numpy path (`messages.encode_*` /
`decode_*`: C-struct record, crc, `CdrLayout` gather). Log messages: mcap-ros2-support's
dict encoder against `deploy.logs.encode`. Also the ONNX policy's inference. Each
number is the median (and p99) over `--repeat` calls in this one process, so the ratios
hold even on a busy machine; the absolute values do not.

    python bench/deploy_codec.py [--repeat 2000] [--policy POLICY.onnx]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from mcap_ros2._dynamic import serialize_dynamic

from simreal.deploy.dds import crc_ok, with_crc
from simreal.deploy.dds.crc import pack_lowcmd
from simreal.deploy.dds.unitree_hg import (
    NUM_MOTORS,
    IMUState_,
    LowCmd_,
    LowState_,
    MotorCmd_,
    MotorState_,
)
from simreal.deploy.g1.messages import (
    decode_lowcmd,
    decode_lowstate,
    encode_lowcmd,
    encode_lowstate,
)
from simreal.deploy.g1.sim_robot import MotorCommand, SimG1
from simreal.deploy.logs import encode
from simreal.deploy.logs.messages import msgdef
from simreal.robots.g1 import JOINT_NAMES

ROOT = Path(__file__).resolve().parent.parent


def timed(fn, repeat: int) -> dict:
    fn()
    samples = np.empty(repeat)
    for i in range(repeat):
        start = time.perf_counter()
        fn()
        samples[i] = time.perf_counter() - start
    us = samples * 1e6
    return {
        "p50_us": round(float(np.median(us)), 1),
        "p99_us": round(float(np.percentile(us, 99)), 1),
    }


def idl_lowstate(sensors, tick: int) -> bytes:
    """The old virtual-robot path: IDL objects, crc over the packed struct, serialize."""
    motors = [
        MotorState_(mode=1, q=float(q), dq=float(dq), tau_est=float(t))
        for q, dq, t in zip(sensors.q, sensors.dq, sensors.tau_est, strict=True)
    ] + [MotorState_() for _ in range(NUM_MOTORS - len(JOINT_NAMES))]
    imu = IMUState_(
        quaternion=sensors.quat_wxyz.tolist(),
        gyroscope=sensors.gyro.tolist(),
        accelerometer=sensors.accel.tolist(),
        rpy=sensors.rpy.tolist(),
    )
    return with_crc(LowState_(tick=tick, imu_state=imu, motor_state=motors)).serialize()


def idl_read_lowstate(data: bytes):
    msg = LowState_.deserialize(data)
    ok = crc_ok(msg)
    return ok, np.array([m.q for m in msg.motor_state[: len(JOINT_NAMES)]])


def idl_lowcmd(cmd: MotorCommand) -> bytes:
    motors = [
        MotorCmd_(mode=1, q=float(q), dq=float(dq), tau=float(t), kp=float(kp), kd=float(kd))
        for q, dq, t, kp, kd in zip(cmd.q, cmd.dq, cmd.tau, cmd.kp, cmd.kd, strict=True)
    ] + [MotorCmd_() for _ in range(NUM_MOTORS - len(JOINT_NAMES))]
    return with_crc(LowCmd_(mode_machine=5, motor_cmd=motors)).serialize()


def idl_read_lowcmd(data: bytes):
    msg = LowCmd_.deserialize(data)
    return crc_ok(msg) and pack_lowcmd(msg)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2000)
    p.add_argument(
        "--policy", type=Path, default=ROOT / "results/experiments/g1-force-run1/policy.onnx"
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    n = args.repeat
    sensors = SimG1(band=True).sensors()
    cmd = MotorCommand(*(np.linspace(-1, 1, 29) * (i + 1) for i in range(5)))
    state_bytes, cmd_bytes = encode_lowstate(sensors, 10), encode_lowcmd(cmd, 5)
    rows = {
        "LowState_ write (virtual robot)": (
            timed(lambda: idl_lowstate(sensors, 10), n),
            timed(lambda: encode_lowstate(sensors, 10), n),
        ),
        "LowState_ read (node)": (
            timed(lambda: idl_read_lowstate(state_bytes), n),
            timed(lambda: decode_lowstate(state_bytes), n),
        ),
        "LowCmd_ write (node)": (
            timed(lambda: idl_lowcmd(cmd), n),
            timed(lambda: encode_lowcmd(cmd, 5), n),
        ),
        "LowCmd_ read (virtual robot)": (
            timed(lambda: idl_read_lowcmd(cmd_bytes), n),
            timed(lambda: decode_lowcmd(cmd_bytes), n),
        ),
    }
    table = np.stack([cmd.q, cmd.dq, cmd.kp, cmd.kd, cmd.tau], axis=1)
    dims = [",".join(JOINT_NAMES), "q,dq,kp,kd,tau"]
    strides = [145, 5]
    as_dict = {
        "layout": {
            "dim": [
                {"label": d, "size": s, "stride": st}
                for d, s, st in zip(dims, table.shape, strides, strict=True)
            ],
            "data_offset": 0,
        },
        "data": table.ravel().tolist(),
    }
    mcap_encode = serialize_dynamic(
        "std_msgs/Float64MultiArray", msgdef("std_msgs/msg/Float64MultiArray")
    )["std_msgs/Float64MultiArray"]
    rows["log /lowcmd encode"] = (
        timed(lambda: mcap_encode(as_dict), n),
        timed(lambda: encode.multi_array(table, dims, "<f8"), n),
    )
    report = {name: {"old": old, "new": new} for name, (old, new) in rows.items()}
    if args.policy.is_file():
        from simreal.deploy.g1.node import load_g1_policy

        policy = load_g1_policy(args.policy)
        obs = np.zeros(policy.metadata.n_obs, np.float32)
        report["policy inference"] = {"new": timed(lambda: policy(obs), n)}
    report["load_average"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    for name, row in report.items():
        if name == "load_average":
            print(f"load average: {row}")
        elif "old" in row:
            ratio = row["old"]["p50_us"] / row["new"]["p50_us"]
            print(
                f"{name}: {row['old']['p50_us']} us -> {row['new']['p50_us']} us (p50, {ratio:.0f}x; p99 {row['old']['p99_us']} -> {row['new']['p99_us']})"
            )
        else:
            print(f"{name}: p50 {row['new']['p50_us']} us, p99 {row['new']['p99_us']} us")


if __name__ == "__main__":
    main()
