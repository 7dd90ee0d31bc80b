"""Policies in the loop: the policy protocol and adapters, roll-outs with metrics,
closed-loop evaluation from recorded initial states, replay checks and relabeling.

    from demoforge.policy import load_policy, rollout
    summary = rollout(load_policy("model.onnx"), ["tasks/pnp-all-0000.pddl"], "out/run", episodes=10, envs=4)

Modules: `protocol` (Policy, PolicySpaces, check_spaces), `adapters` (ONNX, Python entry
point, expert, open-loop dataset replay; `load_policy`), `metrics` (success, partial
success, completion), `rollout`, `evaluate` (eval --from-dataset), `replay` (divergence
report), `relabel` (failed roll-outs -> expert demonstrations).
"""

from demoforge.policy.adapters import ExpertPolicy, OnnxPolicy, ReplayPolicy, load_policy
from demoforge.policy.metrics import alive_ratio, completion_ratio, partial_success
from demoforge.policy.protocol import EpisodeStartInfo, Policy, PolicyError, PolicySpaces, check_spaces, env_spaces
from demoforge.policy.rollout import rollout
from demoforge.policy.settings import Assist, RolloutSettings

__all__ = [
    "Assist", "EpisodeStartInfo", "alive_ratio", "ExpertPolicy", "OnnxPolicy", "Policy", "PolicyError", "PolicySpaces",
    "ReplayPolicy", "RolloutSettings", "check_spaces", "completion_ratio", "env_spaces", "load_policy",
    "partial_success", "rollout",
]
