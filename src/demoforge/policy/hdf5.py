"""`rollout --output-format hdf5`: a roll-out's episodes in robomimic's HDF5 layout (`dataset.hdf5`).

The roll-out is recorded as always (OUT/dataset, LeRobot v3.0, which the summary, eval and relabel
read); its episodes are then written to OUT/dataset.hdf5, demo by demo in episode order:

- obs/joint_pos (N, n) arm joint positions [rad]; obs/gripper (N, 1) closedness [0 open .. 1 closed];
  obs/<camera>_image (N, H, W, 3) uint8 for each recorded camera;
- actions (N, n + 1): the commanded joint targets [rad] and gripper closedness, as the policy gave them;
- states (N, S): MuJoCo integration snapshots (mjSTATE_INTEGRATION: time, qpos, qvel, act, ...;
  demoforge's order, not robosuite's flattening);
- rewards (N,): 1 at the last step of a successful episode, else 0 (robomimic's sparse success
  reward); dones (N,): 1 at the last step;
- demo attrs: num_samples, task (the goal in words), outcome ("success" / "failure"), episode_index;
  data attrs: total and env_args {env_name: "demoforge", env_type: "demoforge", env_kwargs:
  {control_freq, robot_type, joint_names, cameras}}.

`convert.robomimic` reads this file back (bake takes it like any robomimic file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from demoforge.convert.episode import read_episode
from demoforge.dataset.hdf5 import IMAGE_SUFFIX, HDF5Writer, require_h5py
from demoforge.dataset.keys import camera_of
from demoforge.dataset.reader import open_dataset
from demoforge.errors import DemoforgeError

FORMATS = ("lerobot", "hdf5")  # rollout --output-format
HDF5_NAME = "dataset.hdf5"  # OUT/dataset.hdf5


def check_output_format(value: str, out: Path) -> str:
    """`value` if it is one of FORMATS and can be written (h5py installed), before any episode runs."""
    if value not in FORMATS:
        raise DemoforgeError(f"--output-format {value!r} is not one of {list(FORMATS)}")
    if value == "hdf5":
        require_h5py(Path(out) / HDF5_NAME)
    return value


def write_rollout_hdf5(dataset: str | Path, out: str | Path) -> Path:
    """Write the raw roll-out dataset at `dataset` to the new file `out` in robomimic's layout."""
    ds = open_dataset(dataset)
    cameras = ds.info.video_keys
    meta = {"env_name": "demoforge", "env_type": "demoforge",
            "env_kwargs": {"control_freq": ds.info.fps, "robot_type": ds.info.robot_type,
                           "joint_names": None, "cameras": [camera_of(k) for k in cameras]}}
    first = read_episode(ds, ds.episode_indices[0]) if ds.episode_indices else None
    if first is not None:
        meta["env_kwargs"]["joint_names"] = list(first.joint_names)
    with HDF5Writer(out, meta) as writer:
        for i in ds.episode_indices:
            ep = read_episode(ds, i)
            n = ep.length
            obs = {"joint_pos": ep.q, "gripper": ep.gripper[:, None]}
            for key in cameras:
                obs[camera_of(key) + IMAGE_SUFFIX] = ds.read_video(i, key)
            rewards = np.zeros(n)
            rewards[-1] = 1.0 if ep.outcome == "success" else 0.0
            dones = np.zeros(n, dtype=np.int64)
            dones[-1] = 1
            writer.add_demo(actions=ep.action, obs=obs, states=ep.sim_state, rewards=rewards, dones=dones,
                            attrs={"task": ep.task, "outcome": ep.outcome or "", "episode_index": i})
    return Path(out)
