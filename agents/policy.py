"""Permutation-invariant actor-critic policy for ``DynaSched/DFJSP-v0`` (sb3-contrib ``MaskablePPO``).

The observation is a ``Dict`` (docs/environments.md): ``candidates`` (K, F_c), ``machines``
(M, F_m), ``global`` (F_g,), ``action_mask`` (K,), and optionally ``forecasts`` (K, 2R), the
rollout forecasts of :class:`~dynasched_gym.envs.wrappers.ForecastFeatures`, appended to each
candidate row. Every input goes through ``symlog(x) = sign(x) log(1 + |x|)`` first (columns range
from 0/1 flags to clipped 1e6 times).

- **Context** ``c``: each machine row is embedded by a shared MLP, pooled (mean and max over the
  machines) and mixed with the global features by an MLP.
- **Slots**: each candidate row, with ``c`` appended, is embedded by a shared MLP into ``e_k``;
  one interaction round lets the slots see each other: ``interaction="deepsets"`` (default) adds
  ``MLP([e_k, mean e, max e])`` (pools over the valid slots); ``"attention"`` is a pre-norm
  transformer block instead (multi-head self-attention over the valid slots, then a feed-forward
  layer, each added to ``e_k``), so a slot's embedding can depend on each other slot, not only on pools.
- **Actor**: a shared head scores each slot, ``logit_k = head(e_k)``; padding slots are removed
  by the action mask (``MaskablePPO``).
- **Critic**: an MLP of the pooled slot embeddings (mean and max over valid slots) and ``c``. With
  ``critic_hindsight`` (an *asymmetric* critic) also of the pooled embeddings of ``hindsight_forecasts``
  (K, 2R), the same rollouts played in the instance's real future: privileged information that cuts
  the variance of the advantages in training. The actor never reads it, so the policy stays fair; a
  played policy gets zeros there (:class:`~dynasched_gym.agents.ppo.PPOAgent`).

Every slot is treated by the same weights and the pools are symmetric, so permuting the candidate
rows (with the mask) permutes the logits and leaves the value unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn

from dynasched_gym.checks import check_choice
from dynasched_gym.envs.wrappers import FORECASTS_KEY, HINDSIGHT_KEY

#: The slots' interaction round (:class:`SlotEncoder`): pooled DeepSets, or a self-attention block.
INTERACTIONS = ("deepsets", "attention")


def mlp(sizes: list[int], last_activation: bool = True) -> nn.Sequential:
    """Linear layers of ``sizes`` with ReLUs between them (and after the last one if asked)."""
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(fan_in, fan_out))
        if last_activation or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def symlog(x: th.Tensor) -> th.Tensor:
    """``sign(x) log(1 + |x|)``: keeps 0/1 flags near themselves and tames large times."""
    return th.sign(x) * th.log1p(th.abs(x))


def masked_pool(x: th.Tensor, mask: th.Tensor) -> th.Tensor:
    """Mean and max of ``x`` (B, N, H) over the rows where ``mask`` (B, N) is true -> (B, 2H); 0 if none."""
    weight = mask.unsqueeze(-1).to(x.dtype)
    count = weight.sum(dim=1).clamp(min=1.0)
    mean = (x * weight).sum(dim=1) / count
    highest = x.masked_fill(weight == 0, float("-inf")).amax(dim=1)
    return th.cat([mean, th.where(th.isinf(highest), th.zeros_like(highest), highest)], dim=-1)


class SlotEncoder(BaseFeaturesExtractor):
    """Embeds every candidate slot with shared weights (module docstring).

    Output (B, K*H + 3H), or (B, K*H + 5H) with ``hindsight_forecasts``: the slot embeddings row by row,
    then their pools (mean, max over valid slots), the context ``c`` and the pools of the hindsight rows'
    embeddings. :class:`SlotHeads` splits it again: the actor reads the slot embeddings only.
    """

    def __init__(self, observation_space: spaces.Dict, hidden: int = 64, interaction: str = "deepsets",
                 attention_heads: int = 4) -> None:
        num_slots, cand_dim = observation_space["candidates"].shape
        self.with_forecasts = FORECASTS_KEY in observation_space.spaces
        if self.with_forecasts:
            cand_dim += observation_space[FORECASTS_KEY].shape[1]
        machine_dim = observation_space["machines"].shape[1]
        global_dim = observation_space["global"].shape[0]
        self.with_hindsight = HINDSIGHT_KEY in observation_space.spaces
        pooled_blocks = 5 if self.with_hindsight else 3  # slot pools (2), context, hindsight pools (2)
        super().__init__(observation_space, features_dim=num_slots * hidden + pooled_blocks * hidden)
        self.num_slots, self.hidden = num_slots, hidden
        self.machine_net = mlp([machine_dim, hidden, hidden])
        self.context_net = mlp([2 * hidden + global_dim, hidden])
        self.slot_net = mlp([cand_dim + hidden, hidden, hidden])
        check_choice("interaction", interaction, INTERACTIONS)
        self.interaction = interaction
        if interaction == "deepsets":
            self.interact_net = mlp([3 * hidden, hidden, hidden])
        else:
            self.attention_norm, self.feedforward_norm = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.attention = nn.MultiheadAttention(hidden, attention_heads, batch_first=True)
            self.feedforward = mlp([hidden, 2 * hidden, hidden], last_activation=False)
        if self.with_hindsight:
            self.hindsight_net = mlp([observation_space[HINDSIGHT_KEY].shape[1], hidden, hidden])

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        slots, valid, context = self.embed(observations)
        features = [slots.flatten(1), masked_pool(slots, valid), context]
        if self.with_hindsight:
            features.append(masked_pool(self.hindsight_net(symlog(observations[HINDSIGHT_KEY])), valid))
        return th.cat(features, dim=-1)

    def embed(self, observations: dict[str, th.Tensor]) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """The slot embeddings after the interaction round (B, K, H), the valid slots (B, K) and the context (B, H):
        all the actor reads (:meth:`SlotPolicy.actor_logits`)."""
        candidates = observations["candidates"]
        if self.with_forecasts:
            candidates = th.cat([candidates, observations[FORECASTS_KEY]], dim=-1)
        candidates = symlog(candidates)
        machines = self.machine_net(symlog(observations["machines"]))
        valid = observations["action_mask"] > 0.5
        context = self.context_net(th.cat([machines.mean(dim=1), machines.amax(dim=1),
                                           symlog(observations["global"])], dim=-1))
        slots = self.slot_net(th.cat([candidates, context.unsqueeze(1).expand(-1, self.num_slots, -1)], dim=-1))
        return self.interact(slots, valid), valid, context

    def interact(self, slots: th.Tensor, valid: th.Tensor) -> th.Tensor:
        """One interaction round over the valid slots (module docstring); ``slots`` (B, K, H) -> (B, K, H)."""
        if self.interaction == "deepsets":
            pooled = masked_pool(slots, valid).unsqueeze(1).expand(-1, self.num_slots, -1)
            return slots + self.interact_net(th.cat([slots, pooled], dim=-1))
        # a final observation offers nothing: let its padding rows attend to each other rather than to none (NaN)
        ignored = ~valid & valid.any(dim=1, keepdim=True)
        queries = self.attention_norm(slots)
        attended, _ = self.attention(queries, queries, queries, key_padding_mask=ignored, need_weights=False)
        slots = slots + attended
        return slots + self.feedforward(self.feedforward_norm(slots))


class SlotHeads(nn.Module):
    """The ``mlp_extractor`` of :class:`SlotPolicy`: per-slot logits (actor) and a pooled latent (critic)."""

    def __init__(self, num_slots: int, hidden: int, critic_inputs: int) -> None:
        super().__init__()
        self.num_slots, self.hidden = num_slots, hidden
        self.latent_dim_pi, self.latent_dim_vf = num_slots, hidden
        self.score_net = mlp([hidden, hidden, 1], last_activation=False)
        self.value_net = mlp([critic_inputs, hidden, hidden])  # the encoder's features after the slot rows

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return self.score(features[:, : self.num_slots * self.hidden].reshape(-1, self.num_slots, self.hidden))

    def score(self, slots: th.Tensor) -> th.Tensor:
        """The logit of each slot embedding (B, K, H) -> (B, K)."""
        return self.score_net(slots).squeeze(-1)

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        return self.value_net(features[:, self.num_slots * self.hidden:])


class SlotPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` whose logits are the per-slot scores of :class:`SlotHeads`.

    ``hidden`` sets the width of every layer, ``interaction`` the slots' interaction round
    (``"deepsets"`` or ``"attention"``, module docstring). Use with ``MaskablePPO(SlotPolicy, venv,
    policy_kwargs={"hidden": 64})`` on the ``Dict`` observations (``make_sb3_vec_env(flatten=False)``).
    ``forecast_rules`` names the rollout rules of the ``forecasts`` block the policy was trained
    with (saved with the model, so that :class:`~dynasched_gym.agents.ppo.PPOAgent` can rebuild it),
    ``forecast_futures`` in how many futures sampled from the tier pool ``future_pool`` = (tier, size)
    they were rolled out (``0``: the future forgotten). ``critic_hindsight`` makes the critic asymmetric:
    it also reads ``hindsight_forecasts`` (the observations must carry them in training), the actor does not.
    ``feature_scales`` = (time_scale, ops_scale) records the feature units of the training env, so that the
    policy plays any instance in the same units (``None``: not recorded, as in older checkpoints).
    """

    def __init__(self, observation_space: spaces.Dict, action_space: spaces.Discrete, lr_schedule: Schedule,
                 hidden: int = 64, forecast_rules: Sequence[str] = (), forecast_futures: int = 0,
                 future_pool: Sequence[str] | None = None, critic_hindsight: bool = False,
                 interaction: str = "deepsets", feature_scales: Sequence[float] | None = None,
                 **kwargs: Any) -> None:
        self.hidden = hidden
        self.feature_scales = None if feature_scales is None else (float(feature_scales[0]), float(feature_scales[1]))
        self.interaction = interaction
        self.forecast_rules = tuple(forecast_rules)
        self.forecast_futures = forecast_futures
        self.future_pool = None if future_pool is None else (str(future_pool[0]), str(future_pool[1]))
        self.critic_hindsight = critic_hindsight
        columns = observation_space[FORECASTS_KEY].shape[1] if FORECASTS_KEY in observation_space.spaces else 0
        if columns != 2 * len(self.forecast_rules):
            raise ValueError(f"the observations have {columns} forecast columns but forecast_rules="
                             f"{list(self.forecast_rules)} gives {2 * len(self.forecast_rules)} (2 per rule)")
        if critic_hindsight != (HINDSIGHT_KEY in observation_space.spaces):
            raise ValueError(f"critic_hindsight={critic_hindsight} but the observations "
                             f"{'carry' if HINDSIGHT_KEY in observation_space.spaces else 'lack'} {HINDSIGHT_KEY!r}")
        super().__init__(observation_space, action_space, lr_schedule, features_extractor_class=SlotEncoder,
                         features_extractor_kwargs={"hidden": hidden, "interaction": interaction}, **kwargs)

    def _build_mlp_extractor(self) -> None:
        num_slots = self.observation_space["candidates"].shape[0]
        self.mlp_extractor = SlotHeads(num_slots, self.hidden, self.features_dim - num_slots * self.hidden)

    def _build(self, lr_schedule: Schedule) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the slot scores are the logits
        if self.ortho_init:  # near-uniform first policy, like SB3's 0.01 gain on action_net
            self.mlp_extractor.score_net[-1].apply(lambda m: self.init_weights(m, gain=0.01))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def actor_logits(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        """The (B, K) slot logits of preprocessed ``observations``, as ``forward`` gives them, bit for bit, but
        without the critic's inputs (the pools of the slots and the hindsight rows, their concatenation): what
        :class:`~dynasched_gym.agents.ppo.PPOAgent` plays."""
        slots, _, _ = self.pi_features_extractor.embed(observations)
        return self.action_net(self.mlp_extractor.score(slots))

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        for key in ("features_extractor_class", "features_extractor_kwargs"):
            data.pop(key)
        return {**data, "hidden": self.hidden, "forecast_rules": self.forecast_rules,
                "forecast_futures": self.forecast_futures, "future_pool": self.future_pool,
                "critic_hindsight": self.critic_hindsight, "interaction": self.interaction,
                "feature_scales": self.feature_scales}
