"""A killed writer loses only the episode in progress; resume + finalize gives the same bytes."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from demoforge.dataset import DatasetWriter
from tests.dataset._synth import FEATURES, episode
from tests.dataset.test_writer import tree_digest

CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    from demoforge.dataset import DatasetWriter
    from tests.dataset._synth import FEATURES, episode
    w = DatasetWriter.create({root!r}, fps=30, features=FEATURES, robot_type="test_arm")
    for e in range(3):
        w.add_episode(episode(e, 20 + e), task=f"task {{e % 2}}", extra={{"seed": e}})
    cols = episode(3, 23)
    for t in range(10):  # a partial episode, then hang until killed
        w.add_frame({{k: v[t] for k, v in cols.items()}}, task="task 1")
    print("READY", flush=True)
    time.sleep(600)
""")


def finish(w, start):
    for e in range(start, 5):
        w.add_episode(episode(e, 20 + e), task=f"task {e % 2}", extra={"seed": e})
    w.finalize()


@pytest.mark.slow
def test_sigkill_mid_episode_then_resume(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    root = tmp_path / "crashed"
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(repo=repo, root=str(root))],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "READY"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (root / "meta/info.json").exists()

    w = DatasetWriter.resume(root)
    assert w.num_episodes == 3  # the partial 4th episode is gone
    finish(w, 3)

    clean = DatasetWriter.create(tmp_path / "clean", fps=30, features=FEATURES, robot_type="test_arm")
    finish(clean, 0)
    assert tree_digest(root) == tree_digest(tmp_path / "clean")
