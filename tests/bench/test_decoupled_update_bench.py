"""bench/decoupled_update.py: the multiply-adds it prints beside the times, counted by
hand for the G1 networks, and a tiny side-by-side run that returns every field."""

from __future__ import annotations

from _repo import load_script

decoupled_update = load_script("bench/decoupled_update.py")


def test_the_arithmetic_counts_every_linear_layer_of_actors_and_critic():
    ppo = decoupled_update.variant("decoupled", False, 48, "cpu")
    # g1-pull: 99 policy and 159 critic inputs, 256-128 hidden, groups 12 / 3 / 14
    actor_hidden = 99 * 256 + 256 * 128
    critic = 159 * 256 + 256 * 128 + 128
    expected = 3 * actor_hidden + 128 * (12 + 3 + 14) + critic
    assert decoupled_update.multiply_adds(ppo.model) == expected
    coupled = decoupled_update.variant("coupled", None, 48, "cpu")
    assert decoupled_update.multiply_adds(coupled.model) == actor_hidden + 128 * 29 + critic


def test_a_tiny_run_reports_times_ratios_and_arithmetic():
    out = decoupled_update.run(samples=48, threads=1, rounds=1)
    assert set(out["ratio_to_coupled"]) == {"coupled", "decoupled_per_group", "decoupled_stacked"}
    assert out["ratio_to_coupled"]["coupled"] == 1.0
    ratio = out["arithmetic_ratio_to_coupled"]
    assert ratio["decoupled_stacked"] == ratio["decoupled_per_group"] > 1.8
