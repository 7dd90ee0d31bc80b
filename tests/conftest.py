import os

# Offscreen rendering must be chosen before mujoco is imported anywhere.
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("SVT_LOG", "1")
