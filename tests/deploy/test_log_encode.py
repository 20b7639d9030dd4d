"""The log's fast CDR encoder (`deploy.logs.encode`) writes, byte for byte, what ROS 2's
own message definitions and CDR serializer (as carried by `rosbags`) write."""

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from simreal.deploy.logs import encode

TS = get_typestore(Stores.ROS2_HUMBLE)
T = TS.types
TIME_NS = 1_700_000_123_456_789_012


def header(frame_id: str = ""):
    sec, nanosec = divmod(TIME_NS, 1_000_000_000)
    return T["std_msgs/msg/Header"](
        stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=frame_id
    )


def ros(msg, msgtype: str) -> bytes:
    return bytes(TS.serialize_cdr(msg, msgtype))


@pytest.mark.parametrize("fields", ["all", "velocity only", "none"])
def test_joint_state(fields):
    rng = np.random.default_rng(0)
    names = [f"joint_{i}" * (i % 3 + 1) for i in range(7)]  # lengths vary: padding varies
    values = {k: rng.normal(size=7) for k in ("position", "velocity", "effort")}
    if fields != "all":
        values = {k: (v if fields == "velocity only" and k == "velocity" else None)
                  for k, v in values.items()}  # fmt: skip
    theirs = T["sensor_msgs/msg/JointState"](
        header=header(),
        name=names,
        **{k: np.zeros(0) if v is None else v for k, v in values.items()},
    )
    ours = encode.joint_state(TIME_NS, names, **values)
    assert ours == ros(theirs, "sensor_msgs/msg/JointState")


@pytest.mark.parametrize("with_accel", [True, False])
def test_imu(with_accel):
    rng = np.random.default_rng(1)
    q, w, a = rng.normal(size=4), rng.normal(size=3), rng.normal(size=3)
    vec = T["geometry_msgs/msg/Vector3"]
    accel_cov = np.zeros(9)
    if not with_accel:
        accel_cov[0] = -1.0
    theirs = T["sensor_msgs/msg/Imu"](
        header=header("base"),
        orientation=T["geometry_msgs/msg/Quaternion"](x=q[1], y=q[2], z=q[3], w=q[0]),
        orientation_covariance=np.zeros(9),
        angular_velocity=vec(*w),
        angular_velocity_covariance=np.zeros(9),
        linear_acceleration=vec(*a) if with_accel else vec(0.0, 0.0, 0.0),
        linear_acceleration_covariance=accel_cov,
    )
    ours = encode.imu(TIME_NS, "base", q, w, a if with_accel else None)
    assert ours == ros(theirs, "sensor_msgs/msg/Imu")


@pytest.mark.parametrize(("dtype", "kind"), [("<f8", "Float64"), ("<f4", "Float32")])
@pytest.mark.parametrize("shape", [(5,), (29, 5), (3, 2, 4)])
def test_multi_array(dtype, kind, shape):
    values = np.random.default_rng(2).normal(size=shape)
    dims = [f"axis{i}" + "x" * i for i in range(len(shape))]
    strides = np.cumprod(shape[::-1])[::-1]
    theirs = T[f"std_msgs/msg/{kind}MultiArray"](
        layout=T["std_msgs/msg/MultiArrayLayout"](
            dim=[
                T["std_msgs/msg/MultiArrayDimension"](label=d, size=n, stride=int(s))
                for d, n, s in zip(dims, shape, strides, strict=True)
            ],
            data_offset=0,
        ),
        data=values.ravel().astype(dtype),
    )
    assert encode.multi_array(values, dims, dtype) == ros(theirs, f"std_msgs/msg/{kind}MultiArray")
    with pytest.raises(ValueError, match="dimension labels"):
        encode.multi_array(values, dims[:-1], dtype)
