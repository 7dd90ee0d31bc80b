"""Execution: VecSimEnv, the plan -> skill -> verify -> retry -> re-plan expert loop, the recorder.

    from demoforge.execute import generate
    summary = generate(["tasks/stack_three-all-0000.pddl"], "out/run", episodes_per_problem=20,
                       envs=8, workers="auto", seed=0)
    summary.successes, summary.failure_kinds(), summary.roots["success"]

Modules: `problems` (inputs, per-episode seeds and start states), `vecenv` (VecSimEnv,
SimTask), `expert_loop` (the expert's envs stepped together), `expert_episode` (one episode: plan,
skills, verify, recover), `seams` (what a caller plugs into the expert's episode: its planner,
goal source and hooks), `record` (the raw dataset rows, see `demoforge.raw.schema`),
`layout` (`RunLayout`: what a run's episodes share, and the meta files recording it),
`generate` (shards, workers, resume), `run_folder` (run.json, the summary), `shard_merge`
(the splits merged from the items' shards). Reading a raw dataset back (the typed episode
record, scene inputs) is `demoforge.raw`; replaying it in the simulator, `demoforge.replay`.
"""

from demoforge.execute.generate import ProblemTally, generate, resolve_workers
from demoforge.execute.problems import (
    EpisodeStart,
    ExecuteError,
    Problem,
    episode_rngs,
    episode_seed,
    load_problems,
    start_episode,
)
from demoforge.execute.record import EpisodeRecorder, RunLayout, goal_words, run_layout
from demoforge.execute.run_folder import GenerateSummary
from demoforge.execute.expert_episode import EpisodeResult, ExpertEpisode, ExpertSettings
from demoforge.execute.expert_loop import ExpertLoop
from demoforge.execute.seams import EpisodeHooks, GoalSource, ProblemGoal
from demoforge.execute.vecenv import PddlEpisode, SimTask, VecSimEnv, canonical_episodes, pddl_task

__all__ = [
    "EpisodeHooks", "EpisodeRecorder", "EpisodeResult", "EpisodeStart", "ExecuteError", "ExpertEpisode", "ExpertLoop",
    "GenerateSummary", "GoalSource", "ProblemGoal",
    "PddlEpisode", "Problem", "ProblemTally", "RunLayout", "ExpertSettings", "SimTask", "VecSimEnv",
    "canonical_episodes", "episode_rngs", "episode_seed", "generate", "goal_words",
    "load_problems", "pddl_task", "resolve_workers", "run_layout", "start_episode",
]
