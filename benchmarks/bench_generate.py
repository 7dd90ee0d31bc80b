"""Execution throughput: successful stack_three episodes per core-minute, and the cost of
everything around the physics, side by side in one run.

One worker process runs `generate` over stack_three problems (plan, skills with IK and
collision checks, per-tick recording with the full physics state and the symbolic state,
per-skill verification, shard writing and the merge). The physics-only limit is then
measured in the same process: every recorded episode of both splits is stepped again with
raw `mj_step` calls on its own rebuilt model, from its recorded first state, with each
tick's recorded controls, so the very same physics steps run (the same contacts, bit for
bit; tests/execute/test_runner.py checks that replay) and only the `mj_step` calls are
timed. The ratio wall(generate) / that time says what planning, IK, control, verification
and recording cost on top of the physics itself (target <= 2.0). Also printed: the same
steps on a resting scene (the first problem's reset state: fewer contacts, cheaper steps;
this was the reference before the replay), the ratio for the execution phase alone, and the
ratio in CPU time, which other processes on a shared machine disturb less than wall time.

The last line is the headline ratio.
Run: python benchmarks/bench_generate.py [--problems 3] [--episodes 4] [--envs 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from demoforge.dataset import open_dataset  # noqa: E402
from demoforge.execute import generate, load_problems, start_episode  # noqa: E402
from demoforge.replay import episode_scene  # noqa: E402
from demoforge.sim import restore  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path


def _instrument() -> dict[str, float]:
    """Wrap the main costs around the physics with wall-clock accumulators (breakdown line)."""
    from demoforge.dataset import writer as writer_mod

    spent: dict[str, float] = {}
    targets = [
        ("symbolic sample per tick (poses, contacts)", sys.modules["demoforge.execute.record"], "sample"),
        ("symbolic state, one batch per episode", sys.modules["demoforge.execute.record"], "truth_of_samples"),
        ("abstraction on demand (verify, plan)", sys.modules["demoforge.execute.vecenv"], "abstract"),
        ("episode start (scene draw, build, reset state)", sys.modules["demoforge.execute.vecenv"], "start_episode"),
        ("skill planning (IK, collision checks)", sys.modules["demoforge.execute.expert_episode"], "plan_skill"),
        ("task planning", sys.modules["demoforge.tasks.planning"].FallbackPlanner, "plan"),
        ("recording rows (with the sample)", sys.modules["demoforge.execute.record"].EpisodeRecorder, "record"),
        ("DatasetWriter.add_episode (shards, then merge)", writer_mod.DatasetWriter, "add_episode"),
        ("DatasetWriter.finalize (shards, then merge)", writer_mod.DatasetWriter, "finalize"),
    ]
    for label, owner, name in targets:
        fn = getattr(owner, name)
        spent[label] = 0.0

        def wrapped(*a, _fn=fn, _label=label, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                spent[_label] += time.perf_counter() - t

        setattr(owner, name, wrapped)
    return spent


def replayed_physics(roots: list[Path]) -> tuple[float, float, int]:
    """Step every recorded episode again with raw mj_step and its recorded controls;
    (wall, cpu) of the mj_step calls alone, and the number of ticks."""
    wall = cpu = 0.0
    ticks = 0
    for root in roots:
        reader = open_dataset(root)
        for i in range(reader.num_episodes):
            scene = episode_scene(root, i)
            m, d = scene.model, scene.data
            substeps = round(1 / (60 * m.opt.timestep))
            states = reader.read_episode(i, ["sim.state"])["sim.state"]
            ctrl = np.empty((len(states), m.nu))
            for t, row in enumerate(states):  # each tick's controls, as recorded in the next state
                restore(m, d, row)
                ctrl[t - 1 if t else 0] = d.ctrl
            ctrl[-1] = d.ctrl
            restore(m, d, states[0])
            for t in range(len(states)):
                d.ctrl[:] = ctrl[t]
                w, c = time.perf_counter(), time.process_time()
                mujoco.mj_step(m, d, substeps)
                wall, cpu = wall + time.perf_counter() - w, cpu + time.process_time() - c
            ticks += len(states)
    return wall, cpu, ticks


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=4, help="episodes per problem")
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_generate-"))
    try:
        paths = [p for p in write_tasks(generate_family("stack_three", count=args.problems, seed=args.seed), tmp / "tasks")
                 if p.suffix == ".pddl" and p.name != "blocks.pddl"]
        gen = sys.modules["demoforge.execute.shard_merge"]
        finish, marks = gen.ShardMerge.finish, {}

        def timed_finish(self):  # the merge after the last item (earlier items merge as they finish)
            marks["merge_start"] = time.perf_counter()
            return finish(self)

        gen.ShardMerge.finish = timed_finish
        spent = _instrument()
        cpu0, t0 = time.process_time(), time.perf_counter()
        summary = generate(paths, tmp / "run", episodes_per_problem=args.episodes, envs=args.envs, workers=1,
                           seed=args.seed)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        exec_wall = marks["merge_start"] - t0

        frames = sum(open_dataset(r).num_frames for r in summary.roots.values() if r is not None)
        problem = load_problems(paths[:1])[0]
        scene = start_episode(problem, args.seed, 0).scene
        substeps = round(1 / (60 * scene.model.opt.timestep))
        steps = frames * substeps
        t, c = time.perf_counter(), time.process_time()
        for _ in range(frames):
            mujoco.mj_step(scene.model, scene.data, substeps)
        rest, rest_cpu = time.perf_counter() - t, time.process_time() - c
        raw, raw_cpu, replayed = replayed_physics([r for r in summary.roots.values() if r is not None])
        assert replayed == frames

        print(f"stack_three: {summary.successes}/{summary.episodes} episodes succeeded "
              f"({args.problems} problems x {args.episodes}, {args.envs} envs, 1 worker); failures by kind "
              f"{summary.failure_kinds() or 'none'}")
        print(f"recorded ticks {frames} = {steps} physics steps; raw mj_step replaying them: {raw:.2f} s wall, "
              f"{raw_cpu:.2f} s cpu; the same number of steps on a resting scene: {rest:.2f} s wall, "
              f"{rest_cpu:.2f} s cpu (generate / resting-scene steps: wall {wall / rest:.2f})")
        print(f"generate wall {wall:.2f} s (execution into shards, each item merged when done {exec_wall:.2f} s, "
              f"merge finish {wall - exec_wall:.2f} s); "
              f"cpu {cpu:.2f} s")
        parts = ", ".join(f"{k} {v:.2f} s" for k, v in spent.items())
        print(f"inside generate (wall): {parts}")
        print(f"successful episodes per core-minute: {summary.successes / (cpu / 60):.1f}")
        print(f"execution phase (into shards) / raw mj_step: wall {exec_wall / raw:.2f}")
        print(f"generate / raw mj_step, cpu time (robust to other load on the machine): {cpu / raw_cpu:.2f}")
        print(f"generate wall / raw mj_step wall for the same physics steps: {wall / raw:.2f} (target <= 2.0)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
