"""Processors of demoforge_replay: none (it reads raw observations and writes raw actions)."""

from __future__ import annotations

from lerobot.processor.factory import make_policy_processor_pipelines


def make_demoforge_replay_pre_post_processors(config, dataset_stats=None):
    return make_policy_processor_pipelines(input_steps=[], output_steps=[])
