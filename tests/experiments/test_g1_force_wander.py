"""experiments/g1_force_wander.py: push directions fall in the sector named for them; a
run applies the torso force it reports, in every direction, and counts every simulation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _repo import REPO, load_script

SCRIPT = REPO / "experiments" / "g1_force_wander.py"


def test_push_azimuths_fall_in_their_named_sectors():
    sector_of = load_script(SCRIPT).sector_of
    azimuth = np.array([np.pi, -np.pi, 0.1, np.pi / 2 + 0.7, -np.pi / 2, -2.5])
    assert list(sector_of(azimuth)) == [
        "backward",
        "backward",
        "forward",
        "left",
        "right",
        "backward",
    ]


def test_a_wander_run_applies_its_force_and_counts_every_simulation(tmp_path):
    from _g1_policy import export_g1_policy

    wander = load_script(SCRIPT)
    policy = export_g1_policy(tmp_path / "g1.onnx")
    out = tmp_path / "wander.json"
    code = wander.main(
        [
            str(policy),
            "--force",
            "30",
            "--sims",
            "8",
            "--seconds",
            "0.6",
            "--ramp",
            "0.2",
            "--nominal",
            "--friction",
            "0.5",
            "--json",
            str(out),
        ]
    )
    report = json.loads(out.read_text())
    assert code == 0 and report["sims"] == 8
    assert np.isclose(report["largest_torso_force_applied_n"], 30.0)
    assert report["conditions"]["foot_friction"] == 0.5
    assert sum(s["sims"] for s in report["sectors"].values()) == 8
    assert all(s["sims"] == 2 for s in report["sectors"].values())


def test_an_onset_runs_its_seconds_after_the_standing_and_a_recurrent_policy_runs(tmp_path):
    """`--onset S`: the robot stands unpushed for S seconds, then the push ramps and holds
    for `--seconds` (the whole push is applied); a policy with memory runs like any other."""
    from _g1_policy import export_g1_policy

    wander = load_script(SCRIPT)
    policy = export_g1_policy(tmp_path / "g1.onnx", memory_size=8)
    out = tmp_path / "wander.json"
    args = [str(policy), "--force", "30", "--sims", "4", "--seconds", "0.3", "--ramp", "0.2"]
    assert wander.main([*args, "--onset", "0.5", "--nominal", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["conditions"]["onset_s"] == 0.5
    assert np.isclose(report["largest_torso_force_applied_n"], 30.0)


def test_blind_zeroes_only_the_oracle_force_and_refuses_a_policy_without_it():
    import pytest

    from simreal.tasks import make_env
    from simreal.tasks.g1_force import G1ForceConfig
    from simreal.tasks.g1_force.env import blind_to_force as blinded

    env = make_env("g1-force", G1ForceConfig(actor_observes_force=True), num_envs=2, seed=0)
    seen = []
    act = blinded(lambda obs: seen.append(obs) or np.zeros((2, 29)), env)
    obs = np.random.default_rng(0).normal(size=(2, env.num_obs)).astype(np.float32) + 5.0
    act(obs)
    (fed,) = seen
    assert (fed[:, -3:] == 0).all() and (fed[:, :-3] == obs[:, :-3]).all()
    assert (obs[:, -3:] != 0).all()  # the caller's observation is left as it was
    plain = make_env("g1-force", G1ForceConfig(), num_envs=2, seed=0)
    with pytest.raises(ValueError, match="actor_observes_force"):
        blinded(lambda obs: obs, plain)


def test_a_wander_run_reports_what_an_estimating_policy_estimates(tmp_path):
    """For a checkpoint with a state estimator, `estimates` holds per quantity the
    estimate's error and, along the push, estimate and truth (the force: the push)."""
    from simreal.cli import main

    out = tmp_path / "runs"
    args = ["train", "g1-force", "--envs", "4", "--steps", "100", "--out", str(out)]
    sets = ["--set", "task.actor_estimates_force=true", "--set", "task.actor_estimates_cop=true"]
    assert main([*args, *sets, "--set", "train.eval_episodes=2"]) == 0
    (run,) = (out / "g1-force").iterdir()
    (ckpt,) = sorted((run / "checkpoints").glob("model_*.pt"))[-1:]
    report = load_script(SCRIPT).wander(ckpt, 15.0, 4, 1.5, 0.5, True, 0.7, 0)
    force, cop = (
        report["estimates"]["torso_force_oracle (N)"],
        report["estimates"]["cop_offset (cm)"],
    )
    assert force["truth_along_push_mean"] == pytest.approx(
        15.0, abs=0.2
    )  # held at 15 N (turned each step)
    assert force["rmse"] >= 0 and cop["rmse"] >= 0
    assert cop["truth_along_push_mean"] > 0  # a push moves the centre of pressure its way
