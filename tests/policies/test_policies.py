"""The policy networks: the decoupled actor (one network per action group), its action stds,
the coupled arch, and observation normalization."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from _toy_actor import GROUPS, N_OBS, SMALL, observations

from simreal.policies.checkpoint import warm_start_state
from simreal.policies.config import ModelConfig
from simreal.policies.models import ActorCritic, GroupedActor
from simreal.policies.normalizer import EmpiricalNormalization

pytestmark = pytest.mark.usefixtures("work_in_tmp")


def grouped_actor(groups=GROUPS) -> GroupedActor:
    torch.manual_seed(0)
    return GroupedActor(N_OBS, groups, SMALL)


def test_decoupled_actor_has_one_unshared_network_per_group():
    actor = grouped_actor()
    assert list(actor.nets) == ["lower", "waist", "upper"]
    storages = {
        name: {p.untyped_storage().data_ptr() for p in net.parameters()}
        for name, net in actor.nets.items()
    }
    identities = {name: {id(p) for p in net.parameters()} for name, net in actor.nets.items()}
    names = list(GROUPS)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not identities[a] & identities[b], (a, b)
            assert not storages[a] & storages[b], (a, b)
    for name, idx in GROUPS.items():
        net = actor.nets[name]
        assert net[0].in_features == N_OBS  # every group sees the whole observation
        assert net[-1].out_features == len(idx)
        assert actor.log_std[name].shape == (len(idx),)
    # The actor's parameters are exactly the three networks and the three log-stds.
    owned = set().union(*identities.values()) | {id(p) for p in actor.log_std.values()}
    assert {id(p) for p in actor.parameters()} == owned


def test_perturbing_the_waist_network_moves_only_action_slot_3():
    actor = grouped_actor()
    obs = observations(7)
    with torch.no_grad():
        before = actor(obs)
        actor.nets["waist"][-1].bias += 0.5
        after = actor(obs)
    change = (after - before).abs()
    assert torch.all(change[:, 3] > 0.49)
    torch.testing.assert_close(
        after[:, [0, 1, 2, 4, 5]], before[:, [0, 1, 2, 4, 5]], rtol=0, atol=0
    )


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
"""Where the learner can run here: the CUDA cases run where a GPU is (bench/gpu_checks.sh
runs them on one); CI has none."""


@pytest.mark.parametrize("device", DEVICES)
def test_stacked_groups_give_the_per_group_networks_outputs_and_gradients(device):
    """The batched evaluation of the group MLPs (one product per layer over stacked
    weights, narrow groups padded) equals running each MLP on its own, forward and
    backward, with the actions in the environment's order."""
    groups = {"lower": (5, 0, 2), "waist": (3,), "upper": (4, 1)}  # interleaved slots
    actor = grouped_actor(groups).to(device)
    obs = observations(33).to(device)
    outputs, grads = {}, {}
    for stack in (False, True):
        actor.stack = stack
        actor.zero_grad()
        out = actor(obs)
        (out * torch.arange(1.0, 7.0, device=device)).sum().backward()
        outputs[stack] = out.detach()
        grads[stack] = {
            n: p.grad.clone() for n, p in actor.named_parameters() if p.grad is not None
        }
    torch.testing.assert_close(outputs[True], outputs[False], rtol=1e-6, atol=1e-6)
    assert grads[True].keys() == grads[False].keys() and len(grads[True]) > 6
    for name in grads[False]:
        torch.testing.assert_close(grads[True][name], grads[False][name], rtol=1e-5, atol=1e-6)
    assert actor.can_stack and actor.stack is True
    assert "stacked_slots" not in actor.state_dict()  # checkpoints keep their keys


def test_each_group_has_its_own_action_std():
    actor = grouped_actor()
    std = actor.std()
    torch.testing.assert_close(std, torch.full((6,), SMALL.init_std))
    with torch.no_grad():
        actor.log_std["waist"].fill_(float(np.log(3.0)))
    expected = torch.full((6,), SMALL.init_std)
    expected[3] = 3.0
    torch.testing.assert_close(actor.std(), expected)


def test_max_std_bounds_the_std_and_stops_its_gradient_above():
    cfg = ModelConfig(actor_hidden=(16, 16), critic_hidden=(16,), init_std=0.3, max_std=0.4)
    actor = GroupedActor(N_OBS, GROUPS, cfg)
    with torch.no_grad():
        actor.log_std["waist"].fill_(float(np.log(3.0)))
    std = actor.std()
    assert std[3].item() == pytest.approx(0.4) and std[0].item() == pytest.approx(0.3)
    std.sum().backward()
    assert actor.log_std["waist"].grad.abs().max() == 0.0
    assert actor.log_std["lower"].grad.abs().min() > 0.0
    with pytest.raises(ValueError, match="max_std"):
        ModelConfig(init_std=0.5, max_std=0.4).validate()


def test_non_contiguous_groups_land_in_their_slots():
    actor = grouped_actor({"a": (0, 2), "b": (1,)})
    with torch.no_grad():
        for name, bias in (("a", [10.0, 20.0]), ("b", [30.0])):
            actor.nets[name][-1].weight.zero_()
            actor.nets[name][-1].bias.copy_(torch.tensor(bias))
        actor.log_std["a"].copy_(torch.log(torch.tensor([2.0, 4.0])))
        actor.log_std["b"].copy_(torch.log(torch.tensor([3.0])))
        out = actor(observations(4))
    torch.testing.assert_close(out, torch.tensor([[10.0, 30.0, 20.0]]).expand(4, 3))
    torch.testing.assert_close(actor.std(), torch.tensor([2.0, 3.0, 4.0]))


def test_groups_must_cover_every_action_once():
    with pytest.raises(ValueError, match="exactly once"):
        GroupedActor(N_OBS, {"a": (0, 1), "b": (1, 2)}, SMALL)
    with pytest.raises(ValueError, match="exactly once"):
        GroupedActor(N_OBS, {"a": (0,), "b": (2,)}, SMALL)


def test_coupled_arch_builds_one_network_for_all_actions():
    coupled = ActorCritic(N_OBS, 12, GROUPS, ModelConfig(arch="coupled"))
    assert list(coupled.actor.nets) == ["all"]
    assert coupled.actor.nets["all"][-1].out_features == 6
    assert coupled.actor.std().shape == (6,)
    assert coupled.act_inference(observations(3)).shape == (3, 6)
    decoupled = ActorCritic(N_OBS, 12, GROUPS, ModelConfig(arch="decoupled"))
    assert list(decoupled.actor.nets) == list(GROUPS)


def test_a_loss_on_slot_3_only_reaches_the_waist_network():
    torch.manual_seed(0)
    model = ActorCritic(N_OBS, 12, GROUPS, SMALL)
    obs = observations(8)
    dist = model.distribution(obs)
    actions = dist.mean.detach() + 0.3
    loss = -dist.log_prob(actions)[:, 3].sum()
    loss.backward()
    for name, net in model.actor.nets.items():
        grads = [p.grad for p in net.parameters()]
        if name == "waist":
            assert all(g is not None and g.abs().sum() > 0 for g in grads)
        else:
            assert all(g is None or torch.all(g == 0) for g in grads), name
    assert model.actor.log_std["waist"].grad.abs().sum() > 0
    for name in ("lower", "upper"):
        grad = model.actor.log_std[name].grad
        assert grad is None or torch.all(grad == 0)


def test_empirical_normalization_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    batches = [
        rng.normal(loc=[1.0, -3.0, 100.0], scale=[0.5, 2.0, 10.0], size=(n, 3)).astype(np.float32)
        for n in (5, 64, 1, 200, 17)
    ]
    norm = EmpiricalNormalization(3)
    for batch in batches:
        norm.update(torch.from_numpy(batch))
    seen = np.concatenate(batches).astype(np.float64)
    np.testing.assert_allclose(norm.mean.numpy(), seen.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), seen.var(axis=0), rtol=1e-4)
    assert float(norm.count) == len(seen)
    x = torch.from_numpy(batches[1])
    expected = (seen[5:69] - seen.mean(0)) / np.sqrt(seen.var(0) + norm.eps)
    np.testing.assert_allclose(norm(x).numpy(), np.clip(expected, -10, 10), rtol=1e-4, atol=1e-4)


def test_the_normalizer_variance_floor_comes_from_the_model_config():
    """model.normalizer_var_floor reaches both normalizers; at 1.0 a near-constant column
    (a mostly-zero contact force) is never amplified, where the default floor swings it
    by up to 10; a floor <= 0 is refused naming the field."""
    sparse = torch.zeros(1000, N_OBS)
    sparse[::50, 0] = 1.0  # on 2 % of the steps
    outputs = {}
    for floor in (0.01, 1.0):
        model = ActorCritic(N_OBS, 12, GROUPS, ModelConfig(normalizer_var_floor=floor))
        assert model.obs_normalizer.eps == model.critic_obs_normalizer.eps == floor
        model.obs_normalizer.update(sparse)
        outputs[floor] = float(
            model.obs_normalizer(sparse[:1])[0, 0] - model.obs_normalizer(sparse[1:2])[0, 0]
        )
    assert outputs[0.01] > 5.0 and outputs[1.0] <= 1.0
    with pytest.raises(ValueError, match="normalizer_var_floor"):
        ModelConfig(normalizer_var_floor=0.0).validate()


def test_a_warm_start_folds_dropped_columns_under_the_source_models_variance_floor():
    """Dropping observation columns folds what they fed the first layer at 0 into its
    bias, normalized as the source normalized them (its own floor, here 1.0)."""
    torch.manual_seed(0)
    cfg = dataclasses.replace(SMALL, normalizer_var_floor=1.0)
    source = ActorCritic(N_OBS + 2, 14, GROUPS, cfg)
    source.obs_normalizer.update(torch.randn(64, N_OBS + 2) * 0.3 + 0.5)
    source.critic_obs_normalizer.update(torch.randn(64, 14) * 0.3 + 0.5)
    target = ActorCritic(N_OBS, 12, GROUPS, cfg)
    state = warm_start_state(
        target.state_dict(), source.state_dict(), (N_OBS + 2, N_OBS), (14, 12),
        source_var_floor=1.0,
    )  # fmt: skip
    target.load_state_dict(state)
    x = torch.randn(5, N_OBS)
    with torch.no_grad():
        got = target.distribution(x).mean
        want = source.distribution(torch.cat([x, torch.zeros(5, 2)], dim=1)).mean
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
