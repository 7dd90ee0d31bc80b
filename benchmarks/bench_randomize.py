"""Reset cost per environment under physics randomization, side by side in one run.

Three ways to reset one environment of a tabletop scene (table, three 4 cm cubes, two world
cameras, the built-in arm under the robot prefix):

  none      mj_resetData, the home pose written, mj_forward
  runtime   + a draw of gains, camera pose and start-pose jitter, applied in place (`apply_to_env`)
  model     + a draw of mass/inertia, damping, frictionloss and gravity too, applied by editing a
            copy of the MjSpec and recompiling (`apply_to_model`), with a fresh MjData

Each mode runs N resets per round, rounds interleaved; the median round is reported, next to
the time of one simulated second of physics for scale. The last line is the headline: the cost of each mode relative to a plain reset.
Run: python benchmarks/bench_randomize.py [--quick]
"""

from __future__ import annotations

import statistics
import sys
import time

import mujoco
import numpy as np

from demoforge.randomize import RandomizationSpec, apply_to_env, apply_to_model, draw_targets, env_handle, sample
from demoforge.sim import ROBOT_PREFIX, bind_robot, panda_card, robot_spec
from _machine import describe  # benchmarks/_machine.py: this script's folder is on sys.path

RUNTIME = RandomizationSpec(kp_scale=(0.9, 1.1), kd_scale=(0.9, 1.1), camera_pos_jitter_m=0.01,
                            camera_rot_jitter_rad=0.02, spawn_jitter=0.05)
MODEL = RandomizationSpec(mass_scale=(0.9, 1.1), damping_scale=(0.8, 1.25), frictionloss_scale=(0.8, 1.25),
                          gravity_jitter_mps2=0.05, **{k: getattr(RUNTIME, k) for k in
                                                       ("kp_scale", "kd_scale", "camera_pos_jitter_m",
                                                        "camera_rot_jitter_rad", "spawn_jitter")})


def tabletop_mjspec() -> mujoco.MjSpec:
    mj = mujoco.MjSpec()
    mj.compiler.degree = False
    mj.option.timestep = 1.0 / 600.0
    mj.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    mj.option.impratio = 10.0
    mj.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    world = mj.worldbody
    world.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.5])
    table = world.add_body(name="table", pos=[0.35, 0.0, 0.38])
    table.add_geom(name="table_top", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.5, 0.6, 0.02])
    for name, y in (("red", -0.12), ("green", 0.0), ("blue", 0.12)):
        cube = world.add_body(name=name, pos=[0.5, y, 0.42])
        cube.add_freejoint(name=name)
        cube.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.02] * 3, density=600, condim=4)
    world.add_camera(name="front", pos=[1.35, 0.0, 1.05], quat=[0.6, 0.37, 0.37, 0.6])
    world.add_camera(name="side", pos=[0.5, -0.95, 0.85], quat=[0.82, 0.57, 0.0, 0.0])
    robot = robot_spec(panda_card())
    for name in ("timestep", "cone", "impratio", "integrator"):
        setattr(robot.option, name, getattr(mj.option, name))
    mj.attach(robot, frame=world.add_frame(pos=[0.0, 0.0, 0.4]), prefix=ROBOT_PREFIX)
    return mj


def reset_home(m: mujoco.MjModel, d: mujoco.MjData, robot) -> None:
    mujoco.mj_resetData(m, d)
    d.qpos[robot.arm_qpos] = robot.card.home
    d.qpos[robot.finger_qpos] = robot.finger_open
    d.ctrl[robot.arm_actuators] = robot.card.home
    d.ctrl[robot.gripper_actuator] = robot.gripper_ctrl[0]
    mujoco.mj_forward(m, d)


def main(quick: bool) -> None:
    print(describe(), flush=True)
    mj = tabletop_mjspec()
    model = mj.compile()
    robot = bind_robot(model, panda_card(), ROBOT_PREFIX)
    targets = draw_targets(model, robot)
    data = mujoco.MjData(model)
    env = env_handle(model, data, robot)
    n, rounds = (50, 3) if quick else (200, 7)

    def none(k: int) -> None:
        reset_home(model, data, robot)

    def runtime(k: int) -> None:
        reset_home(model, data, robot)
        apply_to_env(sample(RUNTIME, np.random.SeedSequence(0, spawn_key=(k,)), targets), env)

    def model_level(k: int) -> None:
        draw = sample(MODEL, np.random.SeedSequence(0, spawn_key=(k,)), targets)
        m = apply_to_model(draw, mj, nominal=model)
        d = mujoco.MjData(m)
        reset_home(m, d, robot)
        apply_to_env(draw, env_handle(m, d, robot))

    modes = {"none": none, "runtime": runtime, "model": model_level}
    times: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(rounds):
        for name, fn in modes.items():
            start = time.perf_counter()
            for k in range(n):
                fn(k)
            times[name].append((time.perf_counter() - start) / n)
    per_reset = {name: statistics.median(t) for name, t in times.items()}
    def each(fn) -> float:
        start = time.perf_counter()
        for k in range(n):
            fn(k)
        return (time.perf_counter() - start) / n

    draw = sample(MODEL, 0, targets)
    t_sample = each(lambda k: sample(MODEL, np.random.SeedSequence(0, spawn_key=(k,)), targets))
    t_recompile = each(lambda k: apply_to_model(draw, mj, nominal=model))
    t_data = each(lambda k: mujoco.MjData(model))
    print(f"scene: {model.nbody} bodies, {model.njnt} joints, {model.ncam} cameras; {n} resets x {rounds} rounds (median)")
    for name, label in (("none", "no randomization"), ("runtime", "runtime-only (gains, cameras, spawn)"),
                        ("model", "model-level (recompile) + runtime")):
        print(f"{label:40s} {per_reset[name] * 1e6:9.1f} us/reset  {per_reset[name] / per_reset['none']:6.2f}x none")
    print(f"{'  sample() of all fields':40s} {t_sample * 1e6:9.1f} us")
    print(f"{'  apply_to_model() (copy, edit, compile)':40s} {t_recompile * 1e6:9.1f} us")
    print(f"{'  MjData of the new model':40s} {t_data * 1e6:9.1f} us "
          f"(arena {model.narena / 2**20:.0f} MiB; <size memory=...> shrinks it)")
    # For scale: one simulated second of physics of the same scene at its 1/600 s step.
    seconds = []
    for _ in range(rounds):
        reset_home(model, data, robot)
        t0 = time.perf_counter()
        mujoco.mj_step(model, data, 600)
        seconds.append(time.perf_counter() - t0)
    t_second = statistics.median(seconds)
    print(f"{'1 s of simulated physics (600 mj_step)':40s} {t_second * 1e6:9.1f} us; a model-level reset costs "
          f"{per_reset['model'] / t_second * 100:.1f}% of it")
    print(f"model-level / runtime-only: {per_reset['model'] / per_reset['runtime']:.1f}x")
    print(f"reset cost ratio model-level : runtime-only : none = {per_reset['model'] / per_reset['none']:.1f} : "
          f"{per_reset['runtime'] / per_reset['none']:.2f} : 1")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
