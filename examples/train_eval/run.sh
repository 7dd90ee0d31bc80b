#!/usr/bin/env bash
# Close the loop on one task family: demoforge demos -> stock lerobot-train -> lerobot-eval in the
# demoforge env on the test split. Needs the Python 3.12 venv with demoforge, the plugin and
# lerobot (`make lerobot-dev` builds .venv-lerobot). Sizes are environment variables:
#   FAMILY=pnp PROBLEMS=40 EPISODES=5 STEPS=2000 EVAL=50 RATE=15 OUT=out/train_eval bash examples/train_eval/run.sh
# STEPS defaults to 2000 for pnp (80% test success on 200 demos, about 6 CPU-minutes) and 6000 for
# the other families (stack_three: 62% on 200 demos, about 18 CPU-minutes; BENCHMARKS.md, "Closing
# the loop", fifth round).
set -euo pipefail
cd "$(dirname "$0")/../.."
FAMILY="${FAMILY:-pnp}"; PROBLEMS="${PROBLEMS:-40}"; EPISODES="${EPISODES:-5}"
STEPS="${STEPS:-$([ "$FAMILY" = pnp ] && echo 2000 || echo 6000)}"; EVAL="${EVAL:-50}"; RATE="${RATE:-15}"; OUT="${OUT:-out/train_eval}/$FAMILY"
BIN="${BIN:-.venv-lerobot/bin}"  # demoforge, lerobot-train and lerobot-eval side by side
export MUJOCO_GL="${MUJOCO_GL:-egl}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" HF_HUB_OFFLINE=1
export PATH="$BIN:$PATH"

# 1. demos: PROBLEMS train-split problems x EPISODES episodes each
demoforge tasks gen "$FAMILY" --problems "$PROBLEMS" --task-seed 0 --split train --out "$OUT/tasks"
demoforge generate "$OUT"/tasks/"$FAMILY"-train-*.pddl --episodes-per-problem "$EPISODES" --seed 0 \
  --workers auto --out "$OUT/gen"
# 2. training labels: joint targets at RATE Hz, plus the object poses a state-based policy needs
demoforge bake "$OUT/gen" --out "$OUT/baked" --control-freq "$RATE" --environment-state
# 3. stock lerobot-train: a small state-based ACT on CPU (see README "Closing the loop")
lerobot-train --dataset.repo_id="local/$FAMILY" --dataset.root="$OUT/baked" \
  --policy.type=act --policy.device=cpu --policy.push_to_hub=false \
  --policy.dim_model=128 --policy.dim_feedforward=512 --policy.n_encoder_layers=2 --policy.n_decoder_layers=1 \
  --policy.chunk_size=20 --policy.n_action_steps=10 --policy.use_vae=false --policy.optimizer_lr=1e-4 \
  --policy.normalization_mapping='{"VISUAL": "IDENTITY", "STATE": "MEAN_STD", "ENV": "MEAN_STD", "ACTION": "MEAN_STD"}' \
  --batch_size=64 --steps="$STEPS" --save_freq="$STEPS" --log_freq=100 --num_workers=1 --wandb.enable=false \
  --output_dir="$OUT/train"
# 4. stock lerobot-eval in the demoforge env, on problems and placements no demo had
lerobot-eval --policy.path="$OUT/train/checkpoints/last/pretrained_model" \
  --policy.device=cpu --env.type=demoforge --env.task="$FAMILY" --env.split=test --env.dataset="$OUT/baked" \
  --eval.n_episodes="$EVAL" --eval.batch_size=10 --output_dir="$OUT/eval"
python -c "import json,sys; o=json.load(open(sys.argv[1]))['overall']; print(f\"$FAMILY: {o['pc_success']:.1f}% success over {o['n_episodes']} test episodes\")" "$OUT/eval/eval_info.json"
