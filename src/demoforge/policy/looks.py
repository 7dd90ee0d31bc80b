"""What a policy's cameras see in a roll-out or an evaluation.

    look = eval_look("randomized:test", seed=0)               # rollout/eval --look
    look = eval_look("recorded", source=Path("out/rendered"))  # eval --look recorded

- no look (None): the scene's own appearance, at the size the policy asks for;
- a named look (`plain`, `randomized`, `randomized:train|test`, or a look YAML): one draw per
  episode, seeded by the run seed, the problem and the episode (as the family env draws it),
  at the look's image size (or `--image-size`);
- `recorded` (eval only): each source episode's own recorded look draw (`demoforge/look`, as the
  render stage wrote it), so the policy sees at its start tick the frame the dataset holds.

Each episode's draw is recorded with it (`demoforge/look`), so its frames can be rendered again.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import camera_of
from demoforge.policy.protocol import PolicyError
from demoforge.render import LOOK_EXTRA, draw_look, load_look, loads_look_draw, look_seed, look_targets
from demoforge.render.look import sized_look

RECORDED = "recorded"


@dataclass(frozen=True)
class EvalLook:
    """A named look (`look`) or the source episodes' recorded draws (`source`)."""

    look: object | None = None  # a demoforge.render.Look; None with `source`
    seed: int = 0  # root of a named look's draws
    source: Path | None = None  # the dataset whose episodes' draws `recorded` takes
    image_size: tuple[int, int] | None = None  # (width, height) [px] replacing a recorded draw's size

    @property
    def label(self) -> str:
        return RECORDED if self.source is not None else self.look.name

    def size(self, key: str) -> tuple[int, int]:
        """(height, width) [px] of image key `key` under this look (a recorded source: its video)."""
        if self.source is None:
            w, h = self.look.image_size(camera_of(key))
            return h, w

        feature = open_dataset(self.source).info.features.get(key)
        if feature is None:
            raise PolicyError(f"--look recorded: {self.source} has no {key} video to reproduce; render it with that "
                              "camera first, or give a named look")
        return tuple(feature.shape[:2]) if self.image_size is None else (self.image_size[1], self.image_size[0])

    def _recorded(self, source: dict | None) -> dict:
        """The recorded draw of an evaluation's source episode (`source`: {root, episode})."""
        if source is None:
            raise PolicyError("--look recorded needs recorded episodes: use it with eval --from-dataset")

        row = open_dataset(source["root"]).episode(int(source["episode"]))
        text = row.get(f"demoforge/{LOOK_EXTRA}")
        if text is None:
            raise PolicyError(f"--look recorded: episode {source['episode']} of {source['root']} records no look "
                              "draw (demoforge/look); evaluate from a dataset made by `demoforge render`")
        draw = loads_look_draw(text, where=f"{source['root']} episode {source['episode']}")
        if self.image_size is not None:
            draw = {**draw, "image": list(self.image_size),
                    "cameras": {c: {k: v for k, v in d.items() if k != "image"}
                                for c, d in draw.get("cameras", {}).items()}}
        return draw

    def scene_draw(self, scene, problem: str, episode: int, source: dict | None) -> dict:
        """The draw for an episode running in `scene`."""
        if self.source is not None:
            return self._recorded(source)

        seed = int(self.seed) ^ zlib.crc32(problem.encode())
        return draw_look(self.look, look_seed(seed, self.look.name, int(episode), 0), look_targets(scene))


def eval_look(spec: str | None, *, seed: int = 0, source: Path | None = None,
              image_size: tuple[int, int] | None = None) -> EvalLook | None:
    """The EvalLook of --look `spec` (None: none) at --image-size `image_size` (width, height)."""
    if spec is None:
        if image_size is not None:
            raise PolicyError("--image-size needs --look (the scene's own appearance is rendered at the size the "
                              "policy asks for)")
        return None
    if spec == RECORDED:
        if source is None:
            raise PolicyError("--look recorded reproduces each source episode's look: it works with eval "
                              "--from-dataset, not with rollout")
        return EvalLook(source=Path(source), image_size=image_size)

    return EvalLook(look=sized_look(load_look(spec), image_size), seed=seed)
