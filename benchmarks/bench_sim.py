"""Simulation core figures, side by side in one run.

1. Physics steps/s of the default scene (three 4 cm cubes, the arm holding one) through
   demoforge's stepping API (`control_step`: command -> controls -> 10 physics steps, i.e.
   60 Hz control) against raw `mj_step(model, data, 10)` on the same compiled model.
2. IK: median and 90th-percentile solve time over 200 random reachable poses.
3. Rendering frames/s at 224x224 for one and two cameras, demoforge's fast look against
   MuJoCo's default look (4096 shadow map, 4x MSAA, infinite floor).

The last line is the headline: demoforge's stepping overhead (time ratio, target <= 1.1x).
Run: python benchmarks/bench_sim.py [--quick]
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from demoforge.sim import (  # noqa: E402
    CameraRig, build_scene, control_step, default_scene, move_joints, restore, snapshot, solve_ik,
)
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path


def holding_scene():
    """The default scene with the arm holding the green cube 15 cm above the table."""
    scene = build_scene(default_scene())
    m, d, robot = scene.model, scene.data, scene.robot
    law = robot.card.controller
    down = np.zeros(4)
    mujoco.mju_mat2Quat(down, d.site_xmat[robot.tcp_site])
    scratch = mujoco.MjData(m)
    scratch.qpos[:] = d.qpos
    rng = np.random.default_rng(0)
    cube = d.body("green").xpos.copy()
    pre = solve_ik(m, scratch, robot, cube + [0, 0, 0.1], down, rng=rng).q
    grasp = solve_ik(m, scratch, robot, cube, down, rng=rng, q_init=pre).q
    lift = solve_ik(m, scratch, robot, cube + [0, 0, 0.15], down, rng=rng, q_init=grasp).q
    move_joints(scene, law, pre, 0.0, 1.0)
    move_joints(scene, law, grasp, 0.0, 1.0)
    move_joints(scene, law, grasp, 1.0, 0.5)
    move_joints(scene, law, lift, 1.0, 1.0)
    if d.body("green").xpos[2] < cube[2] + 0.1:
        raise SystemExit("benchmark setup failed: the cube was not lifted")
    return scene, lift


def bench_stepping(ticks: int, rounds: int) -> tuple[float, float]:
    scene, hold = holding_scene()
    m, d = scene.model, scene.data
    law = scene.robot.card.controller
    control_step(scene, law, hold, 1.0, 10)  # controls exactly as the API sets them
    start = snapshot(m, d)
    raw_times, api_times, finals = [], [], []
    def run_raw():
        for _ in range(ticks):
            mujoco.mj_step(m, d, 10)

    def run_api():
        for _ in range(ticks):
            control_step(scene, law, hold, 1.0, 10)

    for r in range(rounds):  # interleaved, alternating order, best of each: the machine is noisy
        for name in ("raw", "api") if r % 2 == 0 else ("api", "raw"):
            restore(m, d, start)
            t = time.perf_counter()
            run_raw() if name == "raw" else run_api()
            (raw_times if name == "raw" else api_times).append(time.perf_counter() - t)
            finals.append(snapshot(m, d))
    if any(f.tobytes() != finals[0].tobytes() for f in finals):
        raise SystemExit("benchmark invalid: the two loops did not compute the same physics")
    steps = ticks * 10
    raw, api = min(raw_times), min(api_times)
    print(f"physics, raw mj_step        : {steps / raw:10.0f} steps/s")
    print(f"physics, demoforge stepping : {steps / api:10.0f} steps/s")
    from demoforge.sim.controllers import apply_command

    t = time.perf_counter()
    for _ in range(ticks):
        apply_command(m, d, scene.robot, law, hold, 1.0)
    per_tick = (time.perf_counter() - t) / ticks
    print(f"demoforge work per control tick: {per_tick * 1e6:.1f} us "
          f"({per_tick / (raw / ticks):.2%} of the tick's 10 physics steps)")
    return raw, api


def bench_ik(n: int) -> None:
    scene = build_scene(default_scene(props=()))
    m, robot = scene.model, scene.robot
    rng = np.random.default_rng(1)
    data = mujoco.MjData(m)
    times, ok = [], 0
    for _ in range(n):
        data.qpos[robot.arm_qpos] = rng.uniform(robot.limits[:, 0], robot.limits[:, 1])
        mujoco.mj_kinematics(m, data)
        pos, quat = data.site_xpos[robot.tcp_site].copy(), np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[robot.tcp_site])
        t = time.perf_counter()
        ok += solve_ik(m, data, robot, pos, quat, rng=rng, q_init=np.array(robot.card.home)).success
        times.append(time.perf_counter() - t)
    ms = np.array(times) * 1e3
    print(f"IK, {n} random reachable poses: success {ok / n:.1%}, "
          f"median {np.median(ms):.2f} ms, p90 {np.percentile(ms, 90):.2f} ms")


def bench_render(frames_fast: int, frames_default: int) -> None:
    looks = {
        "fast look   ": (default_scene(), frames_fast),
        "MuJoCo look ": (default_scene(look="quality", floor_size=(0.0, 0.0)), frames_default),
    }
    for label, (spec, frames) in looks.items():
        scene, _ = build_scene(spec), None
        with CameraRig(scene.model, scene.cameras, width=224, height=224) as rig:
            for cams in (["front"], ["front", "wrist"]):
                for cam in cams:  # warm-up: first frames upload textures
                    rig.rgb(scene.data, cam)
                t = time.perf_counter()
                for _ in range(frames):
                    for cam in cams:
                        rig.rgb(scene.data, cam)
                fps = frames / (time.perf_counter() - t)
                print(f"render 224x224, {label}, {len(cams)} camera(s): {fps:8.1f} frames/s")


def main() -> None:
    print(describe(), flush=True)
    quick = "--quick" in sys.argv
    raw, api = bench_stepping(ticks=200 if quick else 1000, rounds=4 if quick else 10)
    bench_ik(50 if quick else 200)
    bench_render(frames_fast=30 if quick else 200, frames_default=3 if quick else 10)
    print(f"demoforge stepping overhead vs raw mj_step: {api / raw:.3f}x (target <= 1.1x)")


if __name__ == "__main__":
    main()
