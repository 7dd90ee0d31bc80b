"""EGL device selection: MuJoCo's EGL draws on the first device that works (an NVIDIA GPU where its
driver is installed), or on the one MUJOCO_EGL_DEVICE_ID names; a named device that cannot render is
an error naming the variable, never a quiet fall back to the CPU. Each case runs in a fresh process:
EGL picks its display once per process."""

import os
import shutil
import subprocess
import sys

import pytest

RENDER = """
import mujoco
from OpenGL import GL
from demoforge.sim.cameras import open_renderer
from demoforge.errors import DemoforgeError
model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>")
try:
    renderer, backend = open_renderer(model, 32, 32)
except DemoforgeError as exc:
    print("ERROR", exc)
else:
    renderer.render()
    print(backend, GL.glGetString(GL.GL_RENDERER).decode())
"""


def render_with(**env) -> str:
    done = subprocess.run([sys.executable, "-c", RENDER], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MUJOCO_GL": "egl", **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_a_device_that_does_not_exist_is_an_error_not_the_cpu():
    line = render_with(MUJOCO_EGL_DEVICE_ID="97")
    assert line.startswith("ERROR") and "MUJOCO_EGL_DEVICE_ID='97'" in line and "Fix:" in line, line


def _nvidia_gpus() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines()) if done.returncode == 0 else 0


@pytest.mark.skipif(_nvidia_gpus() == 0, reason="no NVIDIA GPU here (nvidia-smi -L lists none)")
def test_egl_renders_on_the_nvidia_gpu():
    """Where an NVIDIA GPU is present the default EGL device is it, and device 0 names it too."""
    for env in ({}, {"MUJOCO_EGL_DEVICE_ID": "0"}):
        line = render_with(**env)
        assert line.startswith("egl ") and "NVIDIA" in line and "llvmpipe" not in line, (env, line)
