"""Policy adapters and `load_policy(spec)`.

Specs:

| spec                     | policy |
|--------------------------|--------|
| `expert`                 | the planner + skills (`ExpertPolicy`), no snapshot retries (it acts in the loop) |
| `PATH.onnx`, `onnx:PATH` | an ONNX model run with onnxruntime on CPU (`OnnxPolicy`) |
| `replay:DATASET`         | open-loop replay of a dataset's actions, matched by (problem, episode) (`ReplayPolicy`) |
| `module:factory`, `file.py:factory` | a Python entry point; `factory(**kwargs)` returns a Policy |

A baked dataset's actions replay only under `--like DATASET` (its convention and rate). An
exception from importing a user's module, its factory, or its reset/act is a PolicyError
naming the user's file and line (`policy.blame`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import STATE, row_extra
from demoforge.errors import DemoforgeError
from demoforge.execute import ExpertEpisode, ExpertSettings
from demoforge.gym.convention import BAKE_JSON, from_bake
from demoforge.policy.blame import user_error
from demoforge.policy.protocol import NATIVE, EpisodeStartInfo, Policy, PolicyError, PolicySpaces
from demoforge.raw import schema
from demoforge.sim import IKOptions, solve_ik


class OnnxPolicy:
    """An ONNX model: one input per observation key (named as the key, shape (batch, *shape)),
    its first output the actions (batch, *action)."""

    def __init__(self, path: str | Path):
        try:
            import onnxruntime as ort
        except ImportError:
            raise PolicyError("ONNX policies need onnxruntime: pip install 'demoforge[onnx]'") from None
        path = Path(path)
        if not path.is_file():
            raise PolicyError(f"{path}: no such ONNX model file")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # one thread per process: roll-outs scale by processes
        opts.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise PolicyError(f"{path}: onnxruntime cannot load it: {exc}") from None
        problems, obs = [], {}
        for inp in self.session.get_inputs():
            shape = inp.shape[1:]
            if not all(isinstance(d, int) for d in shape):
                problems.append(f"input {inp.name!r}: shape {inp.shape} must be fixed after the batch axis")
            obs[inp.name] = tuple(shape)
            if inp.type != "tensor(float)":
                problems.append(f"input {inp.name!r}: type {inp.type}, expected tensor(float)")
        out = self.session.get_outputs()[0]
        if not all(isinstance(d, int) for d in out.shape[1:]):
            problems.append(f"output {out.name!r}: shape {out.shape} must be fixed after the batch axis")
        if problems:
            raise PolicyError(f"{path}: unusable ONNX policy:\n  " + "\n  ".join(problems))
        self.path = path
        self.output = out.name
        self.spaces = PolicySpaces(obs, tuple(out.shape[1:]))

    def reset(self, slot: int, start: EpisodeStartInfo) -> None:
        pass  # stateless

    def act(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        feeds = {k: np.nan_to_num(np.asarray(observations[k], np.float32)) for k in self.spaces.observation}
        return self.session.run([self.output], feeds)[0].astype(np.float64)


class ReplayPolicy:
    """Open-loop replay: slot i plays the recorded actions of the dataset episode with the same
    (problem, episode index), one row per call on which its observation row is live, then holds
    the last one. A raw dataset's `raw_command` rows are native commands at its rate; a baked
    dataset's `action` rows are its convention's at its rate (run them with --like DATASET)."""

    def __init__(self, root: str | Path, n_action: int | None = None):
        self.root = Path(root)
        self.reader = open_dataset(self.root)
        if (self.root / BAKE_JSON).is_file():
            self.column = "action"
            self.action_convention = from_bake(self.root)
            self.action_source = str(self.root / BAKE_JSON)
        else:
            self.column = schema.RAW_COMMAND
            self.action_convention = NATIVE
            self.action_hz = self.reader.info.fps
            self.action_source = f"{self.root}/meta/info.json fps"
        self.index: dict[tuple[str, int], int] = {}
        for row in self.reader.iter_episodes():
            problem = row_extra(row, "problem")
            seed = row_extra(row, "seed", {})
            if problem is None or "episode" not in seed:
                raise PolicyError(f"{self.root} episode {row['episode_index']}: no demoforge/problem or seed record; "
                                  "replay needs a demoforge dataset")
            self.index[(problem, int(seed["episode"]))] = int(row["episode_index"])
        if self.column not in self.reader.info.features:
            raise PolicyError(f"{self.root}: no {self.column!r} column to replay; replay needs a demoforge dataset")
        width = self.reader.info.features[self.column].shape[0]
        self.spaces = PolicySpaces({}, (width,))
        self._rows: dict[int, np.ndarray] = {}
        self._t: dict[int, int] = {}

    def episode_of(self, problem: str, episode: int) -> int:
        key = (problem, episode)
        if key not in self.index:
            raise PolicyError(f"{self.root}: no recorded episode of problem {problem!r} index {episode}; it holds "
                              f"{sorted(self.index)[:6]}")
        return self.index[key]

    def reset(self, slot: int, start: EpisodeStartInfo) -> None:
        k = self.episode_of(start.problem.name, start.episode)
        self._rows[slot] = self.reader.read_episode(k, [self.column])[self.column]
        self._t[slot] = 0

    def act(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        state = np.asarray(observations[STATE])
        n = len(state)
        live = np.isfinite(state.reshape(n, -1)).all(axis=1)  # idle slots (NaN rows) do not move on
        out = np.zeros((n, *self.spaces.action))
        for slot, rows in self._rows.items():
            if slot < n and live[slot]:
                out[slot] = rows[min(self._t[slot], len(rows) - 1)]
                self._t[slot] += 1
        return out


class ExpertPolicy:
    """The planner + skills as a policy. It acts only through actions: snapshot retries are
    off (max_retries=0); a failed step re-plans from the current state.

    An episode may start anywhere in a recorded one (`eval --start random|every:K`): mid-grasp,
    mid-topple, a block leaning on an open finger. Such a state is not one the symbolic model
    describes (no face up, the hand neither empty nor holding), so planning from it, or the
    first skill, fails. Then the expert backs off, as a person would: it opens the hand, lifts
    the tool `BackOff.LIFT_M` straight up, waits for what it let go to settle, and plans again
    from what the simulator then says (at most `max_backoffs` times an episode)."""

    def __init__(self, n_arm: int | None = None, *, max_replans: int = 2, control_hz: float = 60.0,
                 max_backoffs: int = 2):
        self.settings = ExpertSettings(max_retries=0, max_replans=max_replans, control_hz=control_hz)
        self.action_convention = NATIVE
        self.n_arm = n_arm
        self.max_backoffs = max_backoffs
        self.spaces = PolicySpaces({}, (n_arm + 1,) if n_arm else ())
        self._slots: dict[int, object] = {}  # slot -> its ExpertEpisode, or its BackOff while backing off
        self._starts: dict[int, EpisodeStartInfo] = {}
        self._backoffs: dict[int, int] = {}  # slot -> back-offs made this episode
        self._stepped: set[int] = set()

    def bind_action_width(self, width: int) -> None:
        """The expert fits any arm: rollout tells it the width before checking spaces."""
        self.n_arm = width - 1
        self.spaces = PolicySpaces({}, (width,))

    def reset(self, slot: int, start: EpisodeStartInfo) -> None:
        self._starts[slot], self._backoffs[slot] = start, 0
        self._slots[slot] = self._episode(slot)
        self._stepped.discard(slot)

    def _episode(self, slot: int):
        start = self._starts[slot]
        return ExpertEpisode(start.env, slot, start.problem, start.layout, self.settings)

    def act(self, observations: Mapping[str, np.ndarray]) -> np.ndarray:
        n = len(observations[STATE])
        out = np.zeros((n, self.n_arm + 1))
        for i in list(self._slots):
            if i >= n:
                continue
            s = self._slots[i]
            if i in self._stepped and (isinstance(s, BackOff) or s.outcome is None):
                s.advance()
            if isinstance(s, BackOff) and s.done:
                s = self._slots[i] = self._episode(i)
            elif not isinstance(s, BackOff) and s.outcome is not None and not s.outcome[0] \
                    and self._backoffs[i] < self.max_backoffs:
                self._backoffs[i] += 1
                s = self._slots[i] = BackOff(s)
            q, g, _, _ = s.command()
            out[i, :-1], out[i, -1] = q, g
            self._stepped.add(i)
        return out


class BackOff:
    """The expert's back-off after a failure (see `ExpertPolicy`): the hand opens at once, the
    tool rises `LIFT_M` straight up over `MOVE_TICKS` (joint targets from IK at the present
    pose, eased), then holds for `SETTLE_TICKS` while released objects come to rest. Commands
    go through the failed episode's law, so it acts in any control convention."""

    LIFT_M = 0.08
    MOVE_TICKS = 40
    SETTLE_TICKS = 30

    def __init__(self, episode):
        import mujoco


        scene, self.episode = episode.scene, episode
        robot, data = scene.robot, scene.data
        q0 = data.qpos[robot.arm_qpos].astype(np.float64)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[robot.tcp_site])
        scratch = mujoco.MjData(scene.model)
        scratch.qpos[:] = data.qpos
        target = data.site_xpos[robot.tcp_site] + np.array([0.0, 0.0, self.LIFT_M])
        ik = solve_ik(scene.model, scratch, robot, target, quat, rng=np.random.default_rng(0), q_init=q0,
                      options=IKOptions(restarts=0))
        q1 = ik.q if ik.success else q0  # no lift within reach: open and wait in place
        s = np.linspace(0.0, 1.0, self.MOVE_TICKS)
        ease = s * s * (3.0 - 2.0 * s)
        self.path = q0 + ease[:, None] * (q1 - q0)
        self.t = 0

    @property
    def done(self) -> bool:
        return self.t >= self.MOVE_TICKS + self.SETTLE_TICKS

    def advance(self) -> None:
        self.t += 1

    def command(self) -> tuple[np.ndarray, float, int, int]:
        q = self.path[min(self.t, self.MOVE_TICKS - 1)]
        return self.episode.arm_command(q), 0.0, -1, -1


def _import(spec: str, target: str):
    """The module `target` (a dotted name or a .py file) of `spec`; anything it raises while
    loading, sys.exit included, is the user's (PolicyError naming its line)."""
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise PolicyError(f"policy {spec!r}: no such file {path}")
        mod_name = f"_demoforge_policy_{abs(hash(str(path.resolve())))}"
        mspec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(mspec)
        sys.modules[mod_name] = module
        cache, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ beside the user's file
        try:
            mspec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:
            sys.modules.pop(mod_name, None)
            if isinstance(exc, DemoforgeError):
                raise
            raise user_error(spec, "importing it", exc, roots=(path.resolve().parent,), always=True) from exc
        finally:
            sys.dont_write_bytecode = cache
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (target == exc.name or target.startswith(exc.name + ".")):
            raise PolicyError(f"policy {spec!r}: cannot import module {target!r}: {exc}") from None
        raise user_error(spec, f"importing {target}", exc, always=True) from exc
    except DemoforgeError:
        raise
    except (Exception, SystemExit) as exc:
        raise user_error(spec, f"importing {target}", exc, always=True) from exc


def _entry_point(spec: str, kwargs: dict) -> Policy:
    target, _, name = spec.rpartition(":")
    module = _import(spec, target)
    factory = getattr(module, name, None)
    if factory is None or not callable(factory):
        raise PolicyError(f"policy {spec!r}: module {target!r} has no callable {name!r}")
    roots = (Path(module.__file__).resolve().parent,) if getattr(module, "__file__", None) else ()
    try:
        policy = factory(**kwargs)
    except DemoforgeError:
        raise
    except (Exception, SystemExit) as exc:
        raise user_error(spec, f"{name}({', '.join(f'{k}=...' for k in kwargs)})", exc, roots=roots,
                         always=True) from exc
    missing = [a for a in ("spaces", "reset", "act") if not hasattr(policy, a)]
    if missing:
        raise PolicyError(f"policy {spec!r}: {name}() returned {type(policy).__name__}, which lacks {missing} "
                          "(see demoforge.policy.Policy)")
    return policy


def load_policy(spec: str, **kwargs) -> Policy:
    """A policy from a spec string (see the module docstring); kwargs go to an entry point's factory."""
    if spec == "expert":
        return ExpertPolicy(**kwargs)
    if kwargs and (spec.startswith(("onnx:", "replay:")) or spec.endswith(".onnx")):
        raise PolicyError(f"policy {spec!r}: takes no arguments, got {sorted(kwargs)}")
    if spec.startswith("onnx:"):
        return OnnxPolicy(spec[len("onnx:"):])
    if spec.endswith(".onnx"):
        return OnnxPolicy(spec)
    if spec.startswith("replay:"):
        return ReplayPolicy(spec[len("replay:"):])
    if ":" in spec:
        return _entry_point(spec, kwargs)
    raise PolicyError(f"policy {spec!r}: not a spec; use expert, PATH.onnx, onnx:PATH, replay:DATASET, "
                      "module:factory or file.py:factory")


__all__ = ["ExpertPolicy", "OnnxPolicy", "ReplayPolicy", "load_policy"]
