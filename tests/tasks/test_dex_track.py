"""dex-track: objects, reference format and loader errors, generator feasibility, the
environment contract, metrics on a constructed case, ONNX export round trip."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from simreal.tasks.dex_track import DexTrackConfig, DexTrackEnv
from simreal.tasks.dex_track import objects as ob
from simreal.tasks.dex_track.dataset import load_split, write_dataset
from simreal.tasks.dex_track.generator import MOTIONS, generate_reference
from simreal.tasks.dex_track.grasp import check_feasible
from simreal.tasks.dex_track.metrics import tracking_metrics
from simreal.tasks.dex_track.observations import observation_layout
from simreal.tasks.dex_track.references import (
    Reference,
    ReferenceError,
    load_reference,
    resample_reference,
    save_reference,
)
from simreal.tasks.episodes import episode_budget

RATE = 20.0
FRAMES = 64


@pytest.fixture(scope="module")
def reference() -> Reference:
    g = generate_reference(np.random.default_rng([7, 0, 0]), "cylinder", "lift", RATE, FRAMES)
    assert g.reference is not None and g.feasibility.ok, g.feasibility.reason
    return g.reference


def _fields(ref: Reference) -> dict:
    return {
        "rate_hz": np.float64(ref.rate_hz),
        "wrist_pos": ref.wrist_pos,
        "wrist_quat": ref.wrist_quat,
        "finger_pos": ref.finger_pos,
        "object_pos": ref.object_pos,
        "object_quat": ref.object_quat,
        "object_type": np.str_(ref.object_type),
        "object_dims": ref.object_dims,
    }


def test_every_object_type_builds_with_mujoco_consistent_mass_properties():
    assert len(ob.OBJECT_TYPES) >= 8
    rng = np.random.default_rng(0)
    for kind in ob.OBJECT_TYPES:
        dims = ob.sample_dims(rng, kind)
        g = ob.slot_geometry([kind], dims[None])
        assert 1 <= g.active.sum() <= 2
        com, inertia = ob.mass_properties(g, np.array([0.2]))
        assert np.all(inertia > 0) and np.all(np.isfinite(com))
    # A single box: MuJoCo's own inertia for the same solid.
    g = ob.slot_geometry(["box"], np.array([[0.02, 0.03, 0.04, 0.0]]))
    _, inertia = ob.mass_properties(g, np.array([0.3]))
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><freejoint/><geom type="box" size="0.02 0.03 0.04" '
        'mass="0.3"/></body></worldbody></mujoco>'
    )
    np.testing.assert_allclose(inertia[0], model.body_inertia[1], rtol=1e-9)


def test_reference_round_trip_and_resampling(tmp_path: Path, reference: Reference):
    path = save_reference(tmp_path / "ref.npz", reference)
    loaded = load_reference(path, rate_hz=RATE)
    np.testing.assert_allclose(loaded.object_pos, reference.object_pos, atol=1e-6)
    assert loaded.object_type == "cylinder" and loaded.motion == "lift"
    half = resample_reference(loaded, 10.0)
    assert half.num_frames == 32 and half.duration_s == pytest.approx(3.1)
    np.testing.assert_allclose(half.object_pos, loaded.object_pos[::2], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(half.wrist_quat, axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f.pop("object_quat"), "missing field 'object_quat'"),
        (lambda f: f.update(finger_pos=f["finger_pos"][:, :15]), "field 'finger_pos' has shape"),
        (lambda f: f.update(object_pos=f["object_pos"][:-1]), "field 'object_pos' has shape"),
        (lambda f: f.update(object_quat=f["object_quat"] * 1.1), "field 'object_quat' frame 0"),
        (lambda f: f.update(object_type=np.str_("teapot")), "object_type 'teapot'"),
        (lambda f: f.update(rate_hz=np.float64(-1.0)), "field 'rate_hz'"),
    ],
)
def test_loader_errors_name_the_field(tmp_path: Path, reference: Reference, edit, message):
    fields = _fields(reference)
    edit(fields)
    path = tmp_path / "bad.npz"
    np.savez(path, **fields)
    with pytest.raises(ReferenceError, match=message):
        load_reference(path, rate_hz=RATE)


def test_rate_mismatch_is_an_error_unless_resampled(tmp_path: Path, reference: Reference):
    path = save_reference(tmp_path / "ref.npz", resample_reference(reference, 40.0))
    with pytest.raises(ReferenceError, match=r"field 'rate_hz' is 40 Hz.*resample"):
        load_reference(path, rate_hz=RATE)
    assert load_reference(path, rate_hz=RATE, resample=True).num_frames == FRAMES


def test_generated_references_are_feasible_and_grasp_before_lifting(reference: Reference):
    for i, motion in enumerate(MOTIONS):
        g = generate_reference(np.random.default_rng([3, 0, i]), "mug", motion, RATE, FRAMES)
        assert g.feasibility.ok, (motion, g.feasibility.reason)
        ref = g.reference
        # The object rests until the grasp frame, then moves.
        moved = np.linalg.norm(ref.object_pos - ref.object_pos[0], axis=1) > 1e-6
        assert not moved[: g.grasp_frame + 1].any() and moved.any()


def test_feasibility_check_reports_interpenetration_and_missing_contact(reference: Reference):
    from simreal.tasks.rotations import quat_rotate

    # The object 2.5 cm further along the hand's x: into the closed fingers.
    ahead = quat_rotate(reference.wrist_quat, np.array([0.025, 0.0, 0.0]))
    ahead[:, 2] = 0.0
    shifted = replace(reference, object_pos=reference.object_pos + ahead)
    check = check_feasible(shifted)
    assert not check.ok and "interpenetration" in check.reason
    opened = replace(reference, finger_pos=np.repeat(reference.finger_pos[:1], FRAMES, 0))
    check = check_feasible(opened, grasp_frame=20)
    assert not check.ok and "no thumb-finger contact" in check.reason


def test_dataset_split_by_seed_and_object(tmp_path: Path):
    manifest = write_dataset(tmp_path, 7, 8, 0, ("bottle",), RATE, FRAMES)
    train = [r for r in manifest["references"] if r["split"] == "train"]
    held = [r for r in manifest["references"] if r["split"] == "heldout"]
    assert train and held
    assert all(r["object_type"] != "bottle" for r in train)
    assert any(r["object_type"] == "bottle" for r in held)
    refs, rejected = load_split(tmp_path, "heldout", RATE, FRAMES)
    assert len(refs) == len(held) and not rejected
    assert json.loads((tmp_path / "manifest.json").read_text())["seed"] == 0


@pytest.fixture(scope="module")
def env() -> DexTrackEnv:
    cfg = DexTrackConfig(train_references=10, curriculum=False)
    env = DexTrackEnv(cfg, num_envs=4, seed=0, num_threads=1)
    env.reset()
    return env


def test_observation_layout_groups_and_residual_actions(env: DexTrackEnv):
    assert env.num_obs == sum(n for _, n in observation_layout(3)) == 219
    assert env.num_critic_obs == 219 + 6
    assert [len(v) for v in env.action_groups.values()] == [6, 16] and env.num_actions == 22
    obs, critic = env.reset()
    assert obs.shape == (4, 219) and critic.shape == (4, 225)
    np.testing.assert_allclose(critic[:, :219], obs)
    # Zero action replays the reference (plus the grip preload on the flexing joints).
    env.apply_action(np.zeros((4, 22)))
    f = env.frame() + 1
    preload = env.refs.grip[env.ref_id, f][:, None] * env.preload
    np.testing.assert_allclose(env.engine.ctrl, env.ref_joints(f) + preload, atol=1e-9)
    assert env.preload[6 + 1] == 0.1 and env.preload[6 + 15] == 0.2 and env.preload[6 + 12] == 0
    env.reset()


def test_steps_stay_finite_and_episodes_reset(env: DexTrackEnv):
    rng = np.random.default_rng(1)
    env.reset()
    ended = 0
    for _ in range(env.max_episode_steps + 2):
        step = env.step(rng.uniform(-1, 1, (4, 22)).astype(np.float32))
        assert np.isfinite(step.obs).all() and np.isfinite(step.reward).all()
        ended += int((step.terminated | step.truncated).sum())
    assert ended >= 4
    assert (env.episode_step <= env.max_episode_steps).all()


def test_metrics_on_a_constructed_case():
    t = 10
    pos = np.full((4, t), 0.01)
    rot = np.full((4, t), 5.0)
    fingers = np.full((4, t), 0.1)
    pos[1, 3] = 0.06  # one frame beyond 5 cm
    rot[2] = 12.0  # mean beyond 10 deg, every frame within 30
    pos[3] = 0.025  # mean beyond 2 cm
    m = tracking_metrics(pos, rot, fingers)
    np.testing.assert_array_equal(m["success_rate"], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(m["object_pos_err_mean_m"][1], (9 * 0.01 + 0.06) / 10)
    np.testing.assert_allclose(m["object_rot_err_mean_deg"], [5, 5, 12, 5])
    np.testing.assert_allclose(m["finger_joint_err_mean_rad"], 0.1)


def test_evaluation_runs_every_held_out_reference_with_fixed_physics():
    cfg = DexTrackConfig(heldout_references=6, evaluation=True)
    assert episode_budget("dex-track", cfg).default == 6
    env = DexTrackEnv(cfg, num_envs=6, seed=0, num_threads=1)
    env.reset()
    assert sorted(env.ref_id.tolist()) == list(range(env.refs.count))
    first = (env.mass.copy(), env.friction.copy())
    env.reset()
    np.testing.assert_array_equal(env.mass, first[0])
    assert not env.terminated().any()


def test_onnx_export_round_trip(tmp_path: Path, env: DexTrackEnv):
    from simreal.deploy import OnnxPolicy
    from simreal.policies.config import ModelConfig
    from simreal.policies.export import export_onnx
    from simreal.policies.models import ActorCritic

    torch.manual_seed(0)
    model = ActorCritic(env.num_obs, env.num_critic_obs, env.action_groups, ModelConfig())
    obs, _ = env.reset()
    meta = {"task": "dex-track", **env.deployment_metadata()}
    path = export_onnx(model, tmp_path / "policy.onnx", meta)
    policy = OnnxPolicy(path)
    with torch.inference_mode():
        expected = model.act_inference(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(policy(obs), expected, atol=1e-5)
    assert json.loads(policy.raw_metadata["joint_names"])[6] == "ffj0"
    assert json.loads(policy.raw_metadata["action_groups"]) == {
        "wrist": list(range(6)),
        "fingers": list(range(6, 22)),
    }


def test_cli_generates_and_checks_references(tmp_path: Path, capsys):
    from simreal.cli import main

    out = tmp_path / "refs"
    args = ["dex", "references", "--out", str(out), "--count", "3", "--heldout-count", "2"]
    assert main(args) == 0
    files = sorted((out / "heldout").glob("*.npz"))
    assert main(["dex", "check", str(files[0])]) == 0
    assert "feasible" in capsys.readouterr().out
    # A file at another rate: an error naming the field, or resampled on request.
    slow = tmp_path / "slow.npz"
    assert (
        main(["dex", "check", str(files[0]), "--rate", "10", "--resample", "--write", str(slow)])
        == 0
    )
    assert main(["dex", "check", str(slow)]) == 2
    assert "field 'rate_hz' is 10 Hz" in capsys.readouterr().err


@pytest.mark.slow
def test_replay_baseline_evaluates_every_held_out_reference(tmp_path: Path):
    from simreal.cli import main

    json_file = tmp_path / "replay.json"
    args = ["eval", "baseline:replay", "--task", "dex-track", "--json", str(json_file)]
    pure = ["--set", "task.grip_preload_rad=[0.0, 0.0]"]
    assert main([*args, "--set", "task.heldout_references=8", *pure]) == 0
    metrics = json.loads(json_file.read_text())
    assert metrics["episodes"] == metrics["references_evaluated"] == metrics["references_total"]
    assert metrics["references_total"] + metrics["references_rejected"] == 8
    for key in ("success_rate", "object_pos_err_mean_m", "object_rot_err_mean_deg"):
        assert key in metrics
    assert metrics["finger_joint_err_mean_rad"] < 0.05  # the servos follow the replayed fingers
