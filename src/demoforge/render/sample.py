"""Seeded draws of a look for one episode copy, as plain JSON that reproduces the pictures.

Each section draws from its own stream (`demoforge.randomize.sample.field_rng`: the spawn key
plus a stable hash of the section name), so adding or removing a section never changes the
others. The root of a copy's draw is `SeedSequence(seed, spawn_key=(hash(look name),
source episode, copy))`: the same run seed, look and episode always give the same draw,
whatever the worker count or the other looks of the run.

    {"schema": "demoforge.look/1", "look": "randomized", "split": "train", "seed": [0, [...]],
     "image": [224, 224], "shadow_map_px": 1024,                  # absent: no shadows
     "arm": "mesh",                                               # absent: the arm as built
     "lights": {"ambient": 0.2, "headlight": 0.3, "lights": [{"dir": [x, y, z], "diffuse": [r, g, b]}]},
     "background" / "floor" / "table": {"texture": "checker", "rgb1": [...], "rgb2": [...],
                                        "repeat": 3.0, "specular": 0.1, "shininess": 0.3,
                                        "seed": 123,    # seed: wood, cloth, plastic, painted only
                                        "image": "skimage:brick", "image_sha256": "...",  # image only
                                        "projection": "walls"},  # image on the sky box only
     "blocks": {"red": {"rgb": [r, g, b], "glyph": "K",            # glyph null: scene's faces
                        "specular": 0.3, "shininess": 0.6}},      # absent: MuJoCo's default finish
     "cameras": {"front": {"pos_offset_m": [...], "rot_offset_rad": [...], "fovy_offset_deg": 0.4,
                           "pos": [...], "target": [...], "fovy": 38.0, "image": [320, 240]}}}

A camera's `pos`/`target` [m], `fovy` [deg] and `image` [px] appear when the look sets them;
the offsets apply after them.

Absent sections keep the scene's appearance. Floats are rounded to 10 significant digits, so
`json.loads(json.dumps(d)) == d` and a recorded draw applies exactly as drawn.
"""

from __future__ import annotations

import colorsys
import json
from dataclasses import dataclass

import numpy as np

from demoforge.randomize.sample import _key, field_rng
from demoforge.render import photos, textures
from demoforge.render.look import Look, LookError, SurfaceLook

SCHEMA = "demoforge.look/1"
_FMT = "%.10g"


@dataclass(frozen=True)
class LookTargets:
    """What a draw refers to in one scene."""

    blocks: dict[str, tuple[float, float, float]]  # free prop name -> its built colour [0..1 RGB]
    cameras: tuple[str, ...]  # named cameras (fixed ones and the wrist camera)
    # Free props that are not boxes (a task package's cylinders and meshes): recoloured like the
    # blocks, but a glyph is drawn on a box's six faces only.
    no_glyphs: frozenset[str] = frozenset()


def _q(x: float) -> float:
    return float(_FMT % x) + 0.0


def _qs(values) -> list[float]:
    return [_q(float(v)) for v in values]


def look_seed(seed: int, look: str, episode: int, copy: int) -> np.random.SeedSequence:
    """The root of one copy's draw (see the module docstring)."""
    if not (isinstance(seed, int) and seed >= 0):
        raise LookError(f"seed {seed!r} must be a non-negative integer")
    return np.random.SeedSequence(seed, spawn_key=(_key(look), int(episode), int(copy)))


def _hsv(rng: np.random.Generator, s: SurfaceLook) -> list[float]:
    h, sat, v = rng.uniform(*s.hue), rng.uniform(*s.saturation), rng.uniform(*s.value)
    return _qs(colorsys.hsv_to_rgb(h, sat, v))


def _surface(rng: np.random.Generator, s: SurfaceLook, split: str, *, sky: bool = False) -> dict:
    texture = s.textures[int(rng.integers(len(s.textures)))]
    out = {"texture": texture, "rgb1": _hsv(rng, s), "rgb2": _hsv(rng, s), "repeat": _q(rng.uniform(*s.repeat)),
           "specular": _q(rng.uniform(*s.specular)), "shininess": _q(rng.uniform(*s.shininess))}
    if texture in textures.KINDS:  # drawn after the rest, so the builtin kinds' draws stay as they were
        if texture == "wood":
            out["rgb1"] = _qs(colorsys.hsv_to_rgb(*(rng.uniform(*r) for r in textures.WOOD_HSV)))
        out["rgb2"] = _qs(np.asarray(out["rgb1"]) * textures.SHADE[texture])
        out["seed"] = int(rng.integers(2 ** 31))  # the texture's own noise
    if texture == "image":  # only the split's images: a test draw never shows a train photograph
        refs = s.images[split]
        out["image"] = refs[int(rng.integers(len(refs)))]
        try:
            out["image_sha256"] = photos.digest(out["image"])
        except photos.PhotoError as exc:
            raise LookError(f"look image {out['image']!r}: {exc}") from None
        if sky:
            out["projection"] = s.projection
    return out


def _lights(rng: np.random.Generator, look: Look) -> dict:
    spec = look.lights
    n = int(rng.integers(spec.count[0], spec.count[1] + 1))
    lights = []
    for _ in range(n):
        az, el = np.deg2rad(rng.uniform(*spec.azimuth_deg)), np.deg2rad(rng.uniform(*spec.elevation_deg))
        towards = -np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
        tint = rng.uniform(1.0 - spec.colour_jitter, 1.0, size=3)
        lights.append({"dir": _qs(towards), "diffuse": _qs(rng.uniform(*spec.intensity) * tint)})
    return {"ambient": _q(rng.uniform(*spec.ambient)), "headlight": _q(rng.uniform(*spec.headlight)),
            "lights": lights}


def _blocks(rng: np.random.Generator, look: Look, targets: LookTargets) -> dict:
    spec, names = look.blocks, sorted(targets.blocks)
    colours = [targets.blocks[n] for n in names]
    if spec.colours is not None:
        palette = spec.colours[look.split]
        # distinct colours while the set has enough of them
        picks = rng.permutation(len(palette)) if len(palette) >= len(names) else rng.integers(len(palette), size=len(names))
        colours = [palette[int(i)] for i in picks[:len(names)]]
    glyphs: list[str | None] = [None] * len(names)
    if spec.glyphs is not None:
        letters = spec.glyphs[look.split]
        if len(letters) < len(names):
            raise LookError(f"look {look.name!r}: blocks.glyphs.{look.split} has {len(letters)} letters for "
                            f"{len(names)} blocks {names}; give at least {len(names)} distinct letters")
        faced = [n for n in names if n not in targets.no_glyphs]
        drawn = dict(zip(faced, (letters[int(i)] for i in rng.permutation(len(letters))[:len(faced)]), strict=True))
        glyphs = [drawn.get(n) for n in names]
    out = {}
    for name, rgb, glyph in zip(names, colours, glyphs, strict=True):
        h, s, v = colorsys.rgb_to_hsv(*rgb)
        j = spec.shade_jitter
        s, v = (float(np.clip(x * rng.uniform(1.0 - j, 1.0 + j), 0.0, 1.0)) for x in (s, v))
        out[name] = {"rgb": _qs(colorsys.hsv_to_rgb(h, s, v)), "glyph": glyph}
    # drawn after the rest, so looks without them draw as before
    for name in names if spec.hue_jitter else ():
        h, s, v = colorsys.rgb_to_hsv(*out[name]["rgb"])
        out[name]["rgb"] = _qs(colorsys.hsv_to_rgb((h + rng.uniform(-spec.hue_jitter, spec.hue_jitter)) % 1.0, s, v))
    for name in names if spec.specular is not None else ():
        out[name]["specular"] = _q(rng.uniform(*spec.specular))
        out[name]["shininess"] = _q(rng.uniform(*spec.shininess))
    return out


def _cameras(rng: np.random.Generator, look: Look, targets: LookTargets) -> dict:
    unknown = sorted(set(look.cameras) - set(targets.cameras) - {"default"})
    if unknown:
        raise LookError(f"look {look.name!r}: cameras {unknown} are not in the scene; cameras: "
                        f"{list(targets.cameras)} (or 'default')")
    out = {}
    for name in targets.cameras:
        cam = look.camera(name)
        if cam is None:
            continue
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = np.deg2rad(rng.uniform(0.0, cam.angle_deg))
        item = {"pos_offset_m": _qs(rng.uniform(-cam.pos_m, cam.pos_m, size=3)),
                "rot_offset_rad": _qs(axis * angle),
                "fovy_offset_deg": _q(rng.uniform(-cam.fovy_deg, cam.fovy_deg))}
        if cam.pos is not None:
            item["pos"], item["target"] = _qs(cam.pos), _qs(cam.target)
        if cam.fovy is not None:
            item["fovy"] = _q(cam.fovy)
        if (cam.width, cam.height) != (None, None):
            item["image"] = list(look.image_size(name))
        out[name] = item
    return out


def draw_look(look: Look, seq: np.random.SeedSequence, targets: LookTargets) -> dict:
    """One draw of `look` for the scene described by `targets`."""
    rng = lambda section: field_rng(seq, section)  # noqa: E731
    draw: dict = {"schema": SCHEMA, "look": look.name, "split": look.split,
                  "seed": [int(seq.entropy), [int(k) for k in seq.spawn_key]],
                  "image": [look.width, look.height]}
    if look.shadow_map_px:
        draw["shadow_map_px"] = look.shadow_map_px
    if look.arm != "primitives":
        draw["arm"] = look.arm
    if look.lights is not None:
        draw["lights"] = _lights(rng("lights"), look)
    for section in ("background", "floor", "table"):
        if getattr(look, section) is not None:
            draw[section] = _surface(rng(section), getattr(look, section), look.split, sky=section == "background")
    if look.blocks is not None:
        draw["blocks"] = _blocks(rng("blocks"), look, targets)
    if look.cameras:
        draw["cameras"] = _cameras(rng("cameras"), look, targets)
    return draw


def dumps_look_draw(draw: dict) -> str:
    """Stable JSON text of a draw (sorted keys)."""
    return json.dumps(draw, sort_keys=True)


def loads_look_draw(text: str | dict, *, where: str = "<look draw>") -> dict:
    """A draw from its JSON text (or an already parsed mapping), schema checked."""
    try:
        draw = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as exc:
        raise LookError(f"{where}: not JSON: {exc.msg}") from None
    if not isinstance(draw, dict) or draw.get("schema") != SCHEMA:
        raise LookError(f"{where}: not a look draw (schema {SCHEMA!r} expected)")
    return draw
