"""Roll-outs of a scripted and an ONNX policy: recorded episodes, metrics as episode columns,
summary files, determinism across env counts, assist recorded and applied as stated."""

import json

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.policy import Assist, RolloutSettings, load_policy, rollout
from demoforge.policy.settings import free_bodies
from demoforge.sim import restore


def col(reader, k, name):
    raw = reader.episode(k)[f"demoforge/{name}"]
    return json.loads(raw) if isinstance(raw, str) else raw


def tiny_onnx(path, n=8, bias=0.0):
    """action = observation.state + bias on the arm, gripper = sigmoid(-10) (open): a weak policy."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.eye(n, dtype=np.float32)
    w[-1, -1] = 0.0
    b = np.full(n, bias, np.float32)
    b[-1] = -10.0
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["observation.state", "W"], ["h"]), helper.make_node("Add", ["h", "B"], ["z"]),
         helper.make_node("Split", ["z", "sizes"], ["arm", "g"], axis=1),
         helper.make_node("Sigmoid", ["g"], ["gs"]), helper.make_node("Concat", ["arm", "gs"], ["action"], axis=1)],
        "tiny", [helper.make_tensor_value_info("observation.state", TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", n])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
         numpy_helper.from_array(np.array([n - 1, 1], np.int64), "sizes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    path.write_bytes(model.SerializeToString())
    return path


def test_a_scripted_policy_records_failures_with_hand_checked_metrics(pnp, tmp_path):
    summary = rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=2, envs=2,
                      settings=RolloutSettings(max_ticks=30, warmup_ticks=5), spec="hold")
    reader = open_dataset(tmp_path / "r" / "dataset")
    assert check_dataset(tmp_path / "r" / "dataset") == []
    assert reader.num_episodes == 2
    for k in range(2):
        assert reader.episode(k)["length"] == 30
        assert col(reader, k, "success") is False
        assert col(reader, k, "partial_success") == 0.0  # (in_region white left) is false at the start
        assert col(reader, k, "end") == "truncated"
        assert col(reader, k, "completion_ratio") == 0.0  # holding still achieves nothing
        assert col(reader, k, "full_completion") is False
        assert col(reader, k, "alive_ratio") == 1.0  # alive to the horizon, nothing dropped
        assert col(reader, k, "outcome") == "failure"
    assert summary["overall"]["success_rate"] == 0.0
    assert summary["warmup_ticks"] == 5
    md = (tmp_path / "r" / "SUMMARY.md").read_text()
    assert "| pnp-all-0000 | 2 | 0.000 | 0.000 | 0.000 | 0.000 | 1.000 |" in md
    assert json.loads((tmp_path / "r" / "summary.json").read_text()) == summary


def test_replaying_expert_actions_succeeds_and_the_output_does_not_depend_on_envs(pnp, expert_data, tmp_path):
    a = rollout(load_policy(f"replay:{expert_data}"), [pnp], tmp_path / "a", episodes=2, envs=1, spec="r")
    b = rollout(load_policy(f"replay:{expert_data}"), [pnp], tmp_path / "b", episodes=2, envs=2, spec="r")
    assert a["overall"] == b["overall"]
    assert a["overall"]["success_rate"] == 1.0 and a["overall"]["partial_success"] == 1.0
    ra, rb = open_dataset(tmp_path / "a" / "dataset"), open_dataset(tmp_path / "b" / "dataset")
    for k in range(2):
        assert col(ra, k, "end") == "success"
        x, y = ra.read_episode(k), rb.read_episode(k)
        assert all(np.array_equal(x[c], y[c]) for c in x)


def test_an_onnx_policy_rolls_out_and_records_what_it_commanded(pnp, tmp_path):
    pytest.importorskip("onnxruntime", reason="the onnx extra (onnxruntime, onnx) is not installed")
    pytest.importorskip("onnx", reason="the onnx extra (onnxruntime, onnx) is not installed")
    path = tiny_onnx(tmp_path / "tiny.onnx", bias=0.01)
    policy = load_policy(str(path))
    assert dict(policy.spaces.observation) == {"observation.state": (8,)} and policy.spaces.action == (8,)
    summary = rollout(policy, [pnp], tmp_path / "r", episodes=1, envs=1,
                      settings=RolloutSettings(max_ticks=20), spec=str(path))
    assert summary["overall"]["episodes"] == 1 and summary["overall"]["success_rate"] == 0.0
    cols = open_dataset(tmp_path / "r" / "dataset").read_episode(0, ["observation.state", "action"])
    obs, act = cols["observation.state"], cols["action"]
    np.testing.assert_allclose(act[:, :-1], obs[:, :-1] + 0.01, atol=1e-6)
    np.testing.assert_allclose(act[:, -1], 1 / (1 + np.exp(10)), rtol=1e-3)  # onnxruntime float32 sigmoid


def test_assist_is_applied_as_stated_and_recorded(pnp, tmp_path):
    assist = Assist(floor=0.25, steps=6)
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=1,
            settings=RolloutSettings(max_ticks=12, assist=assist), spec="hold")
    root = tmp_path / "r" / "dataset"
    reader = open_dataset(root)
    assert col(reader, 0, "assist") == {"floor": 0.25, "steps": 6}
    from demoforge.replay import episode_scene

    scene = episode_scene(root, 0)
    bodies, _, weight = free_bodies(scene.model)
    states = reader.read_episode(0, ["sim.state"])["sim.state"]
    seen = []
    for row in states[1:]:  # row t + 1 holds the force applied during tick t
        restore(scene.model, scene.data, row)
        seen.append(round(float(scene.data.xfrc_applied[bodies[0], 2] / weight[0]), 6))
    assert seen == [1.0] * 6 + [0.25] * 5
    assert summary_warmup(tmp_path / "r") == 6  # the assisted ticks are the completion warm-up


def summary_warmup(out):
    return json.loads((out / "summary.json").read_text())["warmup_ticks"]


def test_an_out_folder_in_use_is_refused(pnp, tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x").write_text("")
    from demoforge.policy import PolicyError

    with pytest.raises(PolicyError, match="not empty"):
        rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=1)


def test_episodes_stream_to_the_writer_as_they_end(pnp, tmp_path, monkeypatch):
    from demoforge.dataset import DatasetWriter

    events = []
    add = DatasetWriter.add_episode

    def logged(self, columns, **kw):
        events.append("write")
        return add(self, columns, **kw)

    monkeypatch.setattr(DatasetWriter, "add_episode", logged)
    policy = load_policy("tests.policy.scripted:hold")
    reset = policy.reset
    policy.reset = lambda slot, start: (events.append("start"), reset(slot, start))
    rollout(policy, [pnp], tmp_path / "r", episodes=5, envs=2, settings=RolloutSettings(max_ticks=4), spec="hold")
    held = 0
    for e in events:  # episodes started but not yet written never exceed the env count
        held += 1 if e == "start" else -1
        assert held <= 2
    assert events.count("write") == 5


def test_a_policy_that_needs_images_gets_them_rendered_inline_and_recorded(pnp, tmp_path):
    policy = load_policy("tests.policy.scripted:seeing")
    rollout(policy, [pnp], tmp_path / "r", episodes=1, settings=RolloutSettings(max_ticks=6), spec="seeing")
    assert len(policy.seen) == 6 and policy.seen[0].shape == (24, 32, 3) and policy.seen[0].std() > 5
    reader = open_dataset(tmp_path / "r" / "dataset")
    assert reader.info.features["observation.images.front"].dtype == "video"
    frames = reader.read_video(0, "observation.images.front")
    assert frames.shape == (6, 24, 32, 3)
    assert np.abs(frames[3].astype(int) - policy.seen[3].astype(int)).mean() < 12  # lossy video of what it saw


def test_an_image_size_the_env_cannot_give_is_refused_up_front(pnp, tmp_path):
    from demoforge.policy import PolicyError

    with pytest.raises(PolicyError, match=r"observation.images.front.*\(23, 32, 3\)"):
        rollout(load_policy("tests.policy.scripted:seeing", height=23), [pnp], tmp_path / "r", episodes=1)
