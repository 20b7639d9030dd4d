"""`simreal eval --video` films every registered task through its spec (tasks/video.py)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from _repo import REPO

from simreal import evaluation
from simreal.sim.render import VideoRecorder
from simreal.tasks import TASKS, make_env
from simreal.tasks import video as task_video

WIDTH, HEIGHT = 64, 48
FRAMES = 3
SMALL = {"dex-track": {"heldout_references": 1}, "lane-keep": {"eval_roads": 1}}
"""Evaluation sets cut to one item: the test films simulation 0 only."""


def film(name: str, markers: bool = True) -> list[np.ndarray]:
    spec = TASKS[name]
    cfg = dataclasses.replace(spec.config_cls(), evaluation=True, **SMALL.get(name, {}))
    env = make_env(name, cfg, 1)
    video = task_video.video_spec(name)
    if not markers:
        video = dataclasses.replace(video, markers=task_video.no_markers)
    camera = video.camera(cfg)
    with VideoRecorder(env.mjcf, width=WIDTH, height=HEIGHT, camera=camera) as recorder:
        evaluation.render_episode(env, env.zero_action_policy(), recorder, video, FRAMES)
        return recorder.frames


@pytest.fixture(scope="module")
def frames() -> dict[str, list[np.ndarray]]:
    return {name: film(name) for name in TASKS}


def test_every_registered_task_has_a_video_spec():
    assert set(task_video.VIDEO_SPECS) == set(TASKS)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_films_a_picture_not_a_blank(frames, name):
    shot = frames[name]
    assert len(shot) == FRAMES
    assert shot[0].shape == (HEIGHT, WIDTH, 3)
    assert all(frame.std() > 10.0 for frame in shot), "a frame is (nearly) one colour"


def test_tasks_are_filmed_differently(frames):
    for a, b in itertools.combinations(sorted(frames), 2):
        diff = np.abs(frames[a][0].astype(int) - frames[b][0].astype(int)).mean()
        assert diff > 3.0, f"{a} and {b} look alike (mean pixel difference {diff:.1f})"


@pytest.mark.parametrize(
    "name",
    sorted(n for n, s in task_video.VIDEO_SPECS.items() if s.markers is not task_video.no_markers),
)
def test_targets_and_references_are_in_the_picture(frames, name):
    bare = film(name, markers=False)
    changed = (np.abs(frames[name][0].astype(int) - bare[0].astype(int)).max(axis=2) > 20).sum()
    assert changed >= 4, f"{name}: its markers are out of the picture ({changed} pixels)"


def test_dex_video_shows_the_simulated_object_not_the_compiled_slots():
    """The object's slot geoms are sized per simulation; filmed without copying those
    model fields, the hand sits in a 20 cm block of all six slots."""
    spec = task_video.video_spec("dex-track")
    cut = dataclasses.replace(spec, model_fields=(), markers=task_video.no_markers)
    cfg = dataclasses.replace(
        TASKS["dex-track"].config_cls(), evaluation=True, heldout_references=1
    )
    shots = []
    for video in (dataclasses.replace(spec, markers=task_video.no_markers), cut):
        env = make_env("dex-track", cfg, 1)
        with VideoRecorder(env.mjcf, width=WIDTH, height=HEIGHT, camera=video.camera(cfg)) as rec:
            evaluation.render_episode(env, env.zero_action_policy(), rec, video, 1)
            shots.append(rec.frames[0].astype(int))
    assert np.abs(shots[0] - shots[1]).mean() > 3.0


def test_a_task_without_a_video_spec_is_refused_before_the_evaluation(monkeypatch, tmp_path):
    monkeypatch.delitem(task_video.VIDEO_SPECS, "quad-hover")

    def not_reached(*args, **kwargs):
        raise AssertionError("the evaluation ran before --video was refused")

    monkeypatch.setattr(evaluation, "make_eval_env", not_reached)
    with pytest.raises(ValueError, match="task 'quad-hover' has no video spec"):
        evaluation.evaluate_policy(
            REPO / "results/quad-hover/policy.onnx", episodes=1, video=tmp_path / "x.mp4"
        )
