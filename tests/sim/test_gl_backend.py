import ctypes.util
import os
import sys

import pytest

from demoforge.sim import gl_backend


@pytest.mark.parametrize(
    ("requested", "present", "chosen"),
    [
        ("", {"EGL", "OSMesa"}, "egl"),
        ("egl", {"OSMesa"}, "osmesa"),  # the fallback
        ("osmesa", {"EGL"}, "disable"),  # asked for OSMesa only
        ("egl", set(), "disable"),
        ("glfw", set(), "glfw"),  # the user's explicit other choice is left alone
    ],
)
def test_backend_choice(monkeypatch, requested, present, chosen):
    monkeypatch.delitem(sys.modules, "mujoco")  # as if mujoco were not imported yet
    monkeypatch.setattr(gl_backend, "disabled_because", "")
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: f"lib{name}.so" if name in present else None)
    monkeypatch.setenv("MUJOCO_GL", requested)
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)
    assert gl_backend.choose_gl_backend() == chosen
    assert os.environ["MUJOCO_GL"] == chosen or chosen == "glfw"
    if chosen == "disable":
        assert "was found" in gl_backend.disabled_because
