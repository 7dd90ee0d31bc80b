"""Loading policies and checking their spaces against the env before any episode runs."""

import numpy as np
import pytest

from demoforge.policy import PolicyError, PolicySpaces, check_spaces, env_spaces, load_policy, rollout
from demoforge.policy.protocol import check_actions


def test_every_space_mismatch_is_reported_at_once():
    policy = PolicySpaces({"observation.state": (4,), "observation.images.front": (3, 64, 64)}, (4,))
    with pytest.raises(PolicyError) as exc:
        check_spaces(policy, env_spaces(7))
    msg = str(exc.value)
    assert "'observation.state': policy expects shape (4,), env gives (8,)" in msg
    assert "'observation.images.front': the env offers no such observation" in msg
    assert "action: policy writes shape (4,), env takes (8,)" in msg


def test_a_mismatched_policy_is_refused_before_any_episode(pnp, tmp_path):
    policy = load_policy("tests.policy.scripted:wrong_width")
    with pytest.raises(PolicyError, match="does not fit the env"):
        rollout(policy, [pnp], tmp_path / "out", episodes=1)
    assert not (tmp_path / "out" / "dataset").exists()
    assert policy.resets == []


def test_entry_points_by_module_and_by_file(tmp_path):
    assert load_policy("tests.policy.scripted:hold").spaces.action == (8,)
    file = tmp_path / "mine.py"
    file.write_text("from tests.policy.scripted import Hold\ndef make(n_arm=7):\n    return Hold(n_arm)\n")
    assert load_policy(f"{file}:make", n_arm=5).spaces.action == (6,)


@pytest.mark.parametrize("spec, match", [
    ("nonsense", "not a spec"),
    ("tests.policy.scripted:nope", "no callable 'nope'"),
    ("no_such_module_xyz:make", "cannot import module"),
    ("tests.policy.scripted:not_a_policy", "lacks"),
    ("missing.onnx", "no such ONNX model"),
])
def test_bad_specs_say_what_is_wrong(spec, match):
    with pytest.raises(PolicyError, match=match):
        load_policy(spec)


def test_invalid_actions_are_errors_not_clamped():
    active = np.array([True, True, False])
    ok = np.zeros((3, 8))
    ok[2] = np.nan  # idle slot: ignored
    assert check_actions(ok, active, (8,)).shape == (3, 8)
    bad = np.zeros((3, 8))
    bad[1, -1] = 1.5
    with pytest.raises(PolicyError, match=r"outside \[0, 1\] in slots \[1\]"):
        check_actions(bad, active, (8,))
    bad[1, -1], bad[0, 2] = 0.5, np.inf
    with pytest.raises(PolicyError, match=r"non-finite in slots \[0\]"):
        check_actions(bad, active, (8,))
    with pytest.raises(PolicyError, match="returned shape"):
        check_actions(np.zeros((3, 7)), active, (8,))
