"""Closing the loop: demoforge demos -> stock `lerobot-train` -> `lerobot-eval` in the demoforge env.

Per family (--families) and demo count (--demos), side by side in one run:
1. `tasks gen FAMILY --split train --problems demos/5 --task-seed SEED`, `generate --episodes-per-problem 5
   --seed SEED` (--seed, default 0; the training's seed is 1000 + SEED, lerobot's default at 0;
   with several, `--seed 0,1,2`, steps 1-4 run per seed and each point's mean is printed: one
   seed's success on stack_three moved between 16% and 62%, BENCHMARKS.md, seventh round);
2. `bake --control-freq RATE --environment-state` (joint_target labels, object poses);
3. `lerobot-train` a state-based ACT (small: see POLICY below and BENCHMARKS.md for why) on CPU
   up to each step count of --steps in turn (the first run fresh, each later one resumed from the
   previous checkpoint with `--resume=true`, as a user extends a run), timed in CPU-minutes of
   the training processes (user + system, data-loader workers included), summed over the runs;
4. after each, `lerobot-eval` of that checkpoint in the demoforge env on the TEST split
   (problems and placements no demo had), --episodes episodes, acting under the dataset's
   bake.json.

From pixels (`--obs pixels`): the demos are rendered with the cameras of --camera (default front;
several comma-separated, e.g. front,wrist: one image feature each) at
--image-size under the training look (--train-look, default randomized, its train split), baked
with the goal-only environment state (`bake --environment-state-kind goal`: the target region,
no object pose, so the policy must find the block in the image), and a pixel ACT is trained
from scratch (nothing can be downloaded: `--policy.pretrained_backbone_weights=null`);
each checkpoint is evaluated under every look of --eval-looks (default plain,
randomized:train, randomized:test: the last two's gap is what visual randomization buys).

Run with the Python 3.12 venv that holds demoforge, the plugin and lerobot (`make lerobot-dev`):
    .venv-lerobot/bin/python benchmarks/bench_train_eval.py --families pnp --demos 100 --steps 3000,6000
    .venv-lerobot/bin/python benchmarks/bench_train_eval.py --obs pixels --families pnp --demos 200 --steps 3000
A family of a task package of your own: `--task-package examples/tasks/kitchen/kitchen_task.py
--families cup_in_bowl` (the training and evaluation processes load it too).
`--policy-type diffusion` trains a small diffusion policy instead of ACT (from state; it needs
diffusers, which `make lerobot-dev` installs through lerobot's diffusion extra). The same checkpoints
evaluated another way: `--eval-arg=--policy.n_action_steps=1
--eval-arg=--policy.temporal_ensemble_coeff=0.01 --eval-variant te` (ACT's temporal ensembling).
`--std-floor 0.1 --variant NAME` floors the std (and min-max half range) the policy normalizes each
non-image observation by (`bake --std-floor`: meta/stats.json floored, the exact stats in stats.exact.json):
unstack's block quaternions barely move in the demos, and without it a small tilt blows up.
Work folders are kept: a rerun reuses finished data, checkpoints and evaluations. A killed run
takes its lerobot-train or lerobot-eval with it (on Linux), so nothing is left training.
The last line is the headline: the best test success per family (the mean over the seeds) and
what it took.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from _machine import describe  # benchmarks/_machine.py: this script's folder is on sys.path

os.environ.setdefault("MUJOCO_GL", "egl")

EPISODES_PER_PROBLEM = 5
TRAIN_SEED = 1000  # lerobot-train's default --seed (model initialisation, shuffling); the run's --seed is added
# A small ACT: on a state-only dataset (8 + 7k inputs) the default ACT (dim 512, ff 3200, 4+1
# layers, chunk 100) trains ~20x slower on CPU; chunks of 20 actions at 15 Hz span 1.3 s and the
# policy re-plans every 10 (0.67 s). No VAE: the demos of one family are unimodal enough.
# ENV normalized: ACT's default mapping leaves observation.environment_state raw, and block
# positions that vary by centimetres are then nearly invisible next to the arm state.
POLICY = ["--policy.type=act",
          '--policy.normalization_mapping={"VISUAL": "IDENTITY", "STATE": "MEAN_STD", "ENV": "MEAN_STD", '
          '"ACTION": "MEAN_STD"}', "--policy.dim_model=128", "--policy.dim_feedforward=512",
          "--policy.n_encoder_layers=2", "--policy.n_decoder_layers=1", "--policy.chunk_size=20",
          "--policy.n_action_steps=10", "--policy.use_vae=false"]


# From pixels (one 96x96 camera, from scratch): ~0.7 s per step on an idle 2-core machine
# (shared/reference); a wider model than the state one, the ResNet-18 backbone trained too.
PIXEL_POLICY = ["--policy.type=act", "--policy.pretrained_backbone_weights=null", "--policy.dim_model=256",
                "--policy.dim_feedforward=1024", "--policy.n_encoder_layers=2", "--policy.n_decoder_layers=1",
                "--policy.chunk_size=20", "--policy.n_action_steps=10", "--policy.use_vae=false",
                '--policy.normalization_mapping={"VISUAL": "MEAN_STD", "STATE": "MEAN_STD", "ENV": "MEAN_STD", '
                '"ACTION": "MEAN_STD"}']


# A small diffusion policy (`--policy-type diffusion`), the other policy type lerobot trains from
# state: ACT regresses one chunk and averages the demos' modes (flip's pushes in four directions,
# unstack's put-down spots) into a stall; diffusion samples one mode. Two observations, a 16-step
# horizon (1.1 s at 15 Hz) of which 8 are executed, a narrow U-Net (128-256-512 instead of
# 512-1024-2048), and DDIM with 10 steps at inference so that evaluation stays cheap on CPU.
# MIN_MAX for the state, the objects and the action: the sampler clips to [-1, 1].
DIFFUSION_POLICY = ["--policy.type=diffusion",
                    '--policy.normalization_mapping={"VISUAL": "MEAN_STD", "STATE": "MIN_MAX", "ENV": "MIN_MAX", '
                    '"ACTION": "MIN_MAX"}', "--policy.n_obs_steps=2", "--policy.horizon=16",
                    "--policy.n_action_steps=8", "--policy.drop_n_last_frames=7", "--policy.down_dims=[128,256,512]",
                    "--policy.noise_scheduler_type=DDIM", "--policy.num_inference_steps=10"]


def look_file(spec: str, size: int, folder: Path) -> Path:
    """A look YAML for `spec` (a shipped look's name, `:train` or `:test` for its split) at
    `size` x `size` pixels, written under `folder`."""
    import yaml

    from demoforge.render import look as looks

    name, _, split = spec.partition(":")
    raw = yaml.safe_load((Path(looks.__file__).parent / "looks" / f"{name}.yaml").read_text(encoding="utf-8"))
    raw["image"] = {"width": size, "height": size}
    if split:
        raw["split"] = split
    raw["name"] = f"{name}-{split or raw.get('split', 'train')}-{size}"
    out = folder / f"{raw['name']}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return out


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: on Linux, have the kernel send it SIGTERM when this driver
    dies, however it dies (a SIGKILL included), so a killed benchmark leaves no training or
    evaluation behind holding the cores; a rerun resumes from the checkpoints instead."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG, kept across exec
        if os.getppid() != parent:  # the driver died before the line above took effect
            os._exit(1)


def run(cmd: list[str], log: Path, nice: int = 0, threads: int = 1) -> float:
    """Run `cmd` with its output to `log` and `threads` torch threads; returns the CPU seconds it used
    (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    parent = os.getpid()
    with log.open("w") as out:
        proc = subprocess.run(["nice", "-n", str(nice), *cmd], stdout=out, stderr=subprocess.STDOUT, env=env,
                              preexec_fn=lambda: _die_with_parent(parent))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{cmd[2:4]} failed ({proc.returncode}); see {log}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def make_data(family: str, demos: int, rate: int, work: Path, seed: int,
              args: argparse.Namespace | None = None) -> tuple[Path, int]:
    """Generate and bake `demos` episodes (demos/5 train problems x 5 episodes, problems and run
    seeded with `seed`; from pixels, rendered first); returns (root, episodes)."""
    from demoforge.convert import BakeConfig, bake
    from demoforge.dataset import open_dataset
    from demoforge.execute import generate
    from demoforge.replay import EPISODE_MODELS
    from demoforge.tasks import generate_family, write_tasks
    from demoforge.tasks.package import owner

    baked = work / "baked"
    floor = 0.0 if args is None else args.std_floor  # bake --std-floor: the exact stats in stats.exact.json
    if not (baked / "meta" / "info.json").is_file():
        problems = max(1, demos // EPISODES_PER_PROBLEM)
        paths = write_tasks(generate_family(family, count=problems, seed=seed, split="train"), work / "tasks")
        pddl = sorted(p for p in paths if p.suffix == ".pddl" and p.with_suffix(".scene.json").is_file())
        per_problem = min(EPISODES_PER_PROBLEM, demos)
        if not (work / "gen" / "success" / "meta" / "info.json").is_file():
            from demoforge.execute import ExpertSettings

            spot = "uniform" if args is None else args.put_down_spot
            flip_mode = "topple" if args is None else args.flip_mode
            generate(pddl, work / "gen", episodes_per_problem=per_problem, workers=2, seed=seed,
                     domain=owner("families", family).name,
                     settings=ExpertSettings(put_down_spot=spot, flip_mode=flip_mode))
        if args is None or args.obs == "state":
            bake([work / "gen"], baked, BakeConfig(control_freq=rate, environment_state=True, std_floor=floor),
                 models=EPISODE_MODELS)
        else:
            from demoforge.render import RenderConfig, parse_look_arg, render_dataset

            look = look_file(args.train_look, args.image_size, work / "looks")
            if not (work / "rendered" / "meta" / "info.json").is_file():
                render_dataset(work / "gen" / "success", work / "rendered",
                               RenderConfig(looks=(parse_look_arg(str(look)),), cameras=cameras(args)), workers=2)
            bake([work / "rendered"], baked, BakeConfig(control_freq=rate, environment_state=True,
                                                        environment_state_kind="goal", cams=cameras(args),
                                                        std_floor=floor),
                 models=EPISODE_MODELS)
    return baked, open_dataset(baked).num_episodes


def cameras(args: argparse.Namespace) -> tuple[str, ...]:
    """The --camera list (pixels): each camera is rendered, baked and observed."""
    return tuple(c.strip() for c in args.camera.split(",") if c.strip())


def checkpoint(train: Path, steps: int) -> Path:
    """The pretrained_model folder lerobot-train writes at `steps` (saved at the run's last step)."""
    return train / "checkpoints" / f"{steps:06d}" / "pretrained_model"


def train_to(py: str, family: str, demos: int, baked: Path, train: Path, steps: int, previous: int | None,
             args: argparse.Namespace, seed: int) -> float:
    """Train (fresh, or resumed from the checkpoint at `previous`) up to `steps`; returns CPU seconds."""
    common = [f"--steps={steps}", f"--save_freq={steps}", "--log_freq=100", "--num_workers=1"]
    log = train.parent / f"train-to-{steps}.log"
    if args.obs == "pixels":
        common[-1] = "--num_workers=0"  # decoding in the main process: a worker costs more than it saves on 2 cores
    if args.policy_type == "diffusion":
        if args.obs == "pixels":
            sys.exit("--policy-type diffusion: the recipe is from state only (--obs state)")
        policy = DIFFUSION_POLICY + list(args.policy_arg)
        import importlib.util

        if importlib.util.find_spec("diffusers") is None:  # lerobot's diffusion policy imports it in training
            sys.exit("--policy-type diffusion needs diffusers in this venv: rebuild it with `make lerobot-dev` "
                     "(scripts/lerobot-venv.sh adds lerobot's diffusion extra), or pip install "
                     "'lerobot[diffusion]==0.6.1'")
    else:
        policy = (POLICY if args.obs == "state" else PIXEL_POLICY) + list(args.policy_arg)
    if previous is None:
        return run([py, "-m", "lerobot.scripts.lerobot_train", f"--dataset.repo_id=local/{family}{demos}",
                    f"--dataset.root={baked}", *policy, f"--policy.optimizer_lr={args.lr}", "--policy.device=cpu",
                    "--policy.push_to_hub=false", f"--batch_size={args.batch_size}", f"--seed={TRAIN_SEED + seed}",
                    *common, "--wandb.enable=false", f"--output_dir={train}"], log, args.nice, args.threads)
    config = checkpoint(train, previous) / "train_config.json"
    return run([py, "-m", "lerobot.scripts.lerobot_train", f"--config_path={config}", "--resume=true", *common],
               log, args.nice, args.threads)


EVAL_SEED = 1000  # lerobot-eval's default --seed: episode i of an evaluation is reset with seed 1000 + i
START_BINS = (0.30, 0.38, 0.46)  # [m] edges of the start-distance bins below


def disturbed_note(eval_info: dict) -> str:
    """How many episodes reached every goal atom yet failed: the env ends an episode the tick its goal
    holds, as a success or, with a block knocked over onto another face, as disturbed (FamilyEnv.info)."""
    n = sum(1 for task in eval_info["per_task"]
            for ok, best in zip(task["metrics"]["successes"], task["metrics"]["max_rewards"], strict=True)
            if best >= 1.0 and not ok)
    return f"; {n} disturbed (the goal reached by knocking a block over)" if n else ""


def success_by_start(family: str, eval_info: dict) -> str:
    """Test success by how far the first task object (environment state object 0) starts from the
    robot base, each evaluation episode's start rebuilt by resetting the env with its seed."""
    import numpy as np

    from demoforge.gym.family import FamilyEnv, FamilyEnvConfig

    successes = [bool(x) for task in eval_info["per_task"] for x in task["metrics"]["successes"]]
    env = FamilyEnv(FamilyEnvConfig(task=family, split="test"))
    dist = np.array([float(np.hypot(*env.reset(seed=EVAL_SEED + i)[0]["environment_state"][:2]))
                     for i in range(len(successes))])
    bins = np.digitize(dist, START_BINS)
    edges = ("0", *(f"{e:.2f}" for e in START_BINS), "")
    parts = []
    for k in range(len(START_BINS) + 1):
        hit = [s for s, b in zip(successes, bins, strict=True) if b == k]
        if hit:
            parts.append(f"{edges[k]}-{edges[k + 1]} m: {sum(hit)}/{len(hit)}")
    return "by start distance from the base: " + ", ".join(parts)


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="pnp,stack_three")
    ap.add_argument("--demos", default="50,100,200", help="comma-separated demo counts")
    ap.add_argument("--steps", default="3000,6000", help="comma-separated, increasing: evaluate at each")
    ap.add_argument("--batch-size", type=int, default=None, help="default 64 from state, 32 from pixels")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--rate", type=int, default=15, help="bake and control rate [Hz]")
    ap.add_argument("--episodes", type=int, default=50, help="evaluation episodes per checkpoint (test split)")
    ap.add_argument("--episode-length", type=int, default=None,
                    help="evaluation steps before truncation (default: the env's 40 s)")
    ap.add_argument("--nice", type=int, default=0, help="nice level of the training and evaluation processes")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads of the training and evaluation processes (OMP_NUM_THREADS). 1, the "
                         "recorded figures' setting, suits a 2-core machine shared with other work (the small "
                         "state ACT thrashes at 2 there); on more cores, or from pixels on an idle machine, more "
                         "threads shorten the run (a trained policy is then not bit-identical to a 1-thread run's)")
    ap.add_argument("--seed", default="0",
                    help="seed of the train problems, the generate run and the training; comma-separated, each "
                         "point is measured per seed and their mean is printed and taken for the headline")
    ap.add_argument("--obs", choices=("state", "pixels"), default="state",
                    help="what the policy observes: arm state and object poses, or one camera, arm state and the "
                         "goal (its target region)")
    ap.add_argument("--camera", default="front", help="--obs pixels: the camera(s) rendered and trained on, "
                                                      "comma-separated (front, wrist, side)")
    ap.add_argument("--image-size", type=int, default=96, help="--obs pixels: image height and width [px]")
    ap.add_argument("--train-look", default="randomized:train", help="--obs pixels: the look the demos are "
                    "rendered under (a shipped look, :train or :test for its split)")
    ap.add_argument("--eval-looks", default="plain,randomized:train,randomized:test",
                    help="--obs pixels: the looks each checkpoint is evaluated under, comma-separated")
    ap.add_argument("--put-down-spot", choices=("uniform", "nearest"), default="uniform",
                    help="where the expert's put-down sets a block (generate --put-down-spot): drawn from the whole "
                         "workspace, or the first free spot of a fixed scan beside where it was picked")
    ap.add_argument("--flip-mode", choices=("topple", "in_hand"), default="topple",
                    help="how the expert's flip tips a block (generate --flip-mode): pushed over where it has room, "
                         "or always turned in the hand")
    ap.add_argument("--policy-type", choices=("act", "diffusion"), default="act",
                    help="the policy trained: the small ACT (the recipe) or a small diffusion policy (from state)")
    ap.add_argument("--policy-arg", action="append", default=[],
                    help="an extra lerobot-train argument after the recipe's, e.g. --policy-arg=--policy.use_vae=true "
                         "(repeatable; give --variant too, so the run gets a work folder of its own)")
    ap.add_argument("--std-floor", type=float, default=0.0,
                    help="widen every non-image feature's std (and half min-max range) to at least this before "
                         "training (a variant: give --variant): near-constant inputs such as unstack's block "
                         "quaternions otherwise blow up on a small tilt")
    ap.add_argument("--variant", default="", help="a name for a changed recipe: its work folder's suffix")
    ap.add_argument("--eval-arg", action="append", default=[],
                    help="an extra lerobot-eval argument, e.g. ACT's temporal ensembling: "
                         "--eval-arg=--policy.n_action_steps=1 --eval-arg=--policy.temporal_ensemble_coeff=0.01 "
                         "(repeatable; give --eval-variant too: the same checkpoints, evaluated again)")
    ap.add_argument("--eval-variant", default="", help="a name for changed evaluation arguments: the evaluation "
                                                       "folders' suffix")
    ap.add_argument("--task-package", action="append", default=[],
                    help="a task package bringing --families of its own (a .py file or a module, repeatable); "
                         "training and evaluation processes load it too")
    ap.add_argument("--work", type=Path, default=Path("/tmp/demoforge-bench-train-eval"))
    args = ap.parse_args()
    if args.threads < 1:
        ap.error(f"--threads {args.threads}: give 1 or more")
    from demoforge.tasks.package import load_package

    for spec in args.task_package:  # also named in DEMOFORGE_TASK_PACKAGES, which the subprocesses inherit
        load_package(spec)
    if args.batch_size is None:
        args.batch_size = 64 if args.obs == "state" else 32
    targets = [int(x) for x in args.steps.split(",")]
    seeds = [int(x) for x in args.seed.split(",")]
    best: dict[str, tuple[float, int, int, float]] = {}
    for family in args.families.split(","):
        for demos in (int(d) for d in args.demos.split(",")):
            runs = [measure(family, demos, seed, targets, args, label=len(seeds) > 1) for seed in seeds]
            for i, steps in enumerate(targets):
                points = [r[i] for r in runs]  # ({label: success [%]}, demos made, training CPU-min) per seed
                n, cpu_min = min(p[1] for p in points), sum(p[2] for p in points) / len(points)
                for key in points[0][0]:
                    values = [p[0][key] for p in points]
                    success = sum(values) / len(values)
                    if len(seeds) > 1:
                        print(f"{key:12s} demos {demos:4d}  steps {steps:6d}  mean of {len(seeds)} seeds: test "
                              f"success {success:5.1f}% ({', '.join(f'{v:.0f}' for v in values)}), train "
                              f"{cpu_min:5.1f} CPU-min", flush=True)
                    if success > best.get(key, (-1.0,))[0]:
                        best[key] = (success, n, steps, cpu_min)
    over = f", mean of {len(seeds)} seeds" if len(seeds) > 1 else ""
    print("headline: " + ", ".join(f"{f} {s:.0f}% test success ({n} demos, {k} steps, {c:.0f} CPU-min of "
                                   f"training{over})" for f, (s, n, k, c) in best.items()))


def evaluate(py: str, family: str, model: Path, baked: Path, out: Path, log: Path, args: argparse.Namespace,
             look: Path | None) -> dict:
    """lerobot-eval of `model` on the family's test split (from pixels: under `look`); eval_info.json."""
    if not (out / "eval_info.json").is_file():
        pixels = [] if look is None else [f"--env.cameras={','.join(cameras(args))}", f"--env.look={look}",
                                          f"--env.observation_height={args.image_size}",
                                          f"--env.observation_width={args.image_size}"]
        length = [] if args.episode_length is None else [f"--env.episode_length={args.episode_length}"]
        run([py, "-m", "lerobot.scripts.lerobot_eval", f"--policy.path={model}", "--policy.device=cpu",
             "--env.type=demoforge", f"--env.task={family}", "--env.split=test", f"--env.dataset={baked}",
             *pixels, *length, *args.eval_arg, f"--eval.n_episodes={args.episodes}",
             f"--eval.batch_size={min(10, args.episodes)}",
             f"--output_dir={out}"], log, args.nice, args.threads)
    return json.loads((out / "eval_info.json").read_text())


def measure(family: str, demos: int, seed: int, targets: list[int], args: argparse.Namespace, *,
            label: bool) -> list[tuple[dict[str, float], int, float]]:
    """Data, training to each of `targets` steps and evaluation for one seed, each point printed
    (with its seed when `label`); returns ({label: test success [%]}, demos made, training CPU-min)
    per target: one label from state (the family), one per evaluation look from pixels."""
    py = sys.executable
    name = f"{family}-{demos}"
    if args.obs == "pixels":
        name += f"-pixels-{'+'.join(cameras(args))}{args.image_size}-{args.train_look.replace(':', '-')}"
    if (args.policy_arg or args.std_floor) and not args.variant:
        sys.exit("--policy-arg and --std-floor change the recipe: give --variant NAME so its run does not reuse "
                 "another's checkpoints")
    if args.put_down_spot != "uniform":
        name += f"-{args.put_down_spot}"
    if args.flip_mode != "topple":
        name += f"-{args.flip_mode.replace('_', '')}"
    if args.policy_type != "act":
        name += f"-{args.policy_type}"
    if args.variant:
        name += f"-{args.variant}"
    if args.eval_arg and not args.eval_variant:
        sys.exit("--eval-arg changes the evaluation: give --eval-variant NAME so it does not reuse another's results")
    work = args.work / (name if seed == 0 else f"{name}-seed{seed}")
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    baked, n = make_data(family, demos, args.rate, work, seed, args)
    data_s = time.time() - t0
    train = work / "train"
    cpu_file = work / "train-cpu.json"  # CPU seconds per finished run, kept for reruns
    cpu = json.loads(cpu_file.read_text()) if cpu_file.is_file() else {}
    looks = {family: None} if args.obs == "state" else {
        f"{family}[{spec}]": look_file(spec, args.image_size, work / "looks") for spec in args.eval_looks.split(",")}
    previous = None
    out_points = []
    for steps in targets:
        if not (checkpoint(train, steps) / "model.safetensors").is_file():
            cpu[str(steps)] = train_to(py, family, demos, baked, train, steps, previous, args, seed)
            cpu_file.write_text(json.dumps(cpu))
        previous = steps
        train_cpu = sum(v for k, v in cpu.items() if int(k) <= steps)
        successes = {}
        for key, look in looks.items():
            tag = ("" if look is None else f"-{look.stem}") + (f"-{args.eval_variant}" if args.eval_variant else "")
            out = work / f"eval-{steps}-{args.episodes}{tag}"
            t0 = time.time()
            info = evaluate(py, family, checkpoint(train, steps), baked, out, work / f"{out.name}.log", args, look)
            eval_s = time.time() - t0
            overall = info["overall"]
            successes[key] = float(overall["pc_success"])
            where = success_by_start(family, info) if look is None else f"look {look.stem}"
            print(f"{key:12s} demos {n:4d}  steps {steps:6d}  " + (f"seed {seed}  " if label else "")
                  + f"train {train_cpu / 60:5.1f} CPU-min  test success {successes[key]:5.1f}% of "
                  f"{overall['n_episodes']}  (data {data_s:.0f} s, eval {eval_s:.0f} s); {where}{disturbed_note(info)}",
                  flush=True)
        out_points.append((successes, n, train_cpu / 60))
    return out_points


if __name__ == "__main__":
    main()
