"""ONNX export and the deploy runtime: same actions as torch, metadata that refuses misuse."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from simreal.deploy import (
    OnnxPolicy,
    PolicyMetadata,
    PolicyMetadataError,
    PolicyMismatchError,
    check_compatible,
)
from simreal.policies.config import ModelConfig
from simreal.policies.export import export_onnx
from simreal.policies.models import ActorCritic

GROUPS = {"a": (0, 2), "b": (1, 3, 4)}
OBS_MEAN = np.array([1.0, -2.0, 0.5, 3.0, 0.0, -0.7, 10.0], dtype=np.float32)
OBS_SCALE = np.array([0.1, 2.0, 5.0, 0.3, 1.0, 4.0, 0.02], dtype=np.float32)
JOINTS = ["j0", "j1", "j2", "j3", "j4"]
METADATA: dict[str, object] = {
    "task": "toy-task",
    "robot": "toy",
    "observation_names": [["joint_pos", 5], ["base_ang_vel_xy", 2]],
    "action_groups": {name: list(idx) for name, idx in GROUPS.items()},
    "joint_names": JOINTS,
    "default_joint_pos": [0.1, 0.2, 0.3, 0.4, 0.5],
    "action_scale": [0.25] * 5,
    "kp": [40.0] * 5,
    "kd": [1.0] * 5,
    "control_dt": 0.02,
    "sim_dt": 0.005,
    "decimation": 4,
    "action_clip": 1.0,
}


def observations(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (OBS_MEAN + OBS_SCALE * rng.standard_normal((n, 7))).astype(np.float32)


def trained_like_model(arch: str) -> ActorCritic:
    """A model whose normalizer and actor are far from their initial values."""
    torch.manual_seed(0)
    model = ActorCritic(7, 9, GROUPS, ModelConfig(arch=arch))
    model.update_normalizers(torch.from_numpy(observations(1000, seed=1)), torch.randn(1000, 9))
    with torch.no_grad():
        for param in model.actor.parameters():
            param.add_(0.3 * torch.randn_like(param))
    return model


@pytest.mark.parametrize("arch", ["decoupled", "coupled"])
def test_onnx_runtime_matches_act_inference(tmp_path: Path, arch: str) -> None:
    model = trained_like_model(arch)
    path = export_onnx(model, tmp_path / "policy.onnx", METADATA)
    policy = OnnxPolicy(path)
    obs = observations(256, seed=2)
    with torch.no_grad():
        expected = model.act_inference(torch.from_numpy(obs)).numpy()
    assert np.abs(expected).max() > 0.1, "actions too small to show a difference"

    batched = policy(obs)
    one_at_a_time = np.stack([policy(row) for row in obs])
    assert batched.dtype == np.float32 and batched.shape == (256, 5)
    np.testing.assert_allclose(batched, expected, atol=1e-5)
    np.testing.assert_allclose(one_at_a_time, expected, atol=1e-5)
    np.testing.assert_allclose(policy(obs[:1]), expected[:1], atol=1e-5)


def test_observation_width_is_checked(tmp_path: Path) -> None:
    policy = OnnxPolicy(export_onnx(trained_like_model("decoupled"), tmp_path / "p.onnx", METADATA))
    with pytest.raises(ValueError, match=r"n_obs=7, got shape \(3, 6\)"):
        policy(np.zeros((3, 6), dtype=np.float32))


def test_metadata_round_trip(tmp_path: Path) -> None:
    path = export_onnx(trained_like_model("decoupled"), tmp_path / "policy.onnx", METADATA)
    meta = OnnxPolicy(path).metadata
    assert isinstance(meta, PolicyMetadata)
    assert meta.task == "toy-task" and meta.robot == "toy"
    assert meta.observation_names == [("joint_pos", 5), ("base_ang_vel_xy", 2)]
    assert meta.action_groups == {"a": [0, 2], "b": [1, 3, 4]}
    assert meta.joint_names == JOINTS
    assert meta.default_joint_pos == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert meta.action_scale == [0.25] * 5
    assert meta.kp == [40.0] * 5 and meta.kd == [1.0] * 5
    assert meta.control_dt == 0.02 and meta.sim_dt == 0.005 and meta.decimation == 4
    assert meta.obs_history == 0
    assert meta.simreal_version and meta.simreal_version != "0+unknown"
    assert (meta.n_obs, meta.n_actions) == (7, 5)


def test_file_without_simreal_metadata_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(torch.nn.Linear(3, 2), (torch.zeros(1, 3),), str(path), dynamo=False)
    with pytest.raises(PolicyMetadataError, match="not a simreal policy") as err:
        OnnxPolicy(path)
    assert str(path) in str(err.value)
    assert "simreal_version" in str(err.value) and "task" in str(err.value)


def test_file_that_is_not_onnx_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "noise.onnx"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(PolicyMetadataError) as err:
        OnnxPolicy(path)
    assert str(path) in str(err.value)


def test_check_compatible_names_what_differs(tmp_path: Path) -> None:
    path = export_onnx(trained_like_model("decoupled"), tmp_path / "policy.onnx", METADATA)
    policy = OnnxPolicy(path)
    policy.check_compatible(robot="toy", joint_names=tuple(JOINTS), control_dt=0.02 + 1e-12)

    swapped = ["j1", "j0", "j2", "j3", "j4"]
    with pytest.raises(PolicyMismatchError) as err:
        check_compatible(policy.metadata, robot="toy", joint_names=swapped, control_dt=0.02)
    message = str(err.value)
    assert "joint_names" in message and str(JOINTS) in message and str(swapped) in message
    assert "control_dt" not in message and set(err.value.differences) == {"joint_names"}

    with pytest.raises(PolicyMismatchError) as err:
        policy.check_compatible(robot="toy", joint_names=JOINTS, control_dt=0.01, task="other")
    assert set(err.value.differences) == {"control_dt", "task"}
    assert str(path) in str(err.value) and "0.02" in str(err.value) and "0.01" in str(err.value)


@pytest.mark.slow
def test_deploy_runtime_imports_without_torch() -> None:
    code = "import sys, simreal.deploy; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
