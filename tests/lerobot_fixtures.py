"""Datasets written by the real lerobot library, committed with the tests so a clone needs
nothing beside it: `tests/fixtures/lerobot/` holds three small LeRobot v3 datasets
(3 episodes x 100 frames of a synthetic 8-dof "probe_bot", two tasks), written by lerobot
0.6.1 (state only, and with one 96x96 AV1 camera) and by lerobot 0.4.4 (with the camera).
`tests/fixtures/lerobot/make_fixtures.py` is the script that writes them; the conformance
suite runs it with the cached real-lerobot venv and compares its output with these files.
Tests read them only; a test that changes one copies it first."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lerobot"
NAMES = ("lerobot061_state_only", "lerobot061_video", "lerobot044_video")
