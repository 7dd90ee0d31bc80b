"""Reading a look: a YAML file, a shipped look's name or a mapping -> `Look`, every problem of it
reported at once. The YAML form is described in `demoforge.render.look`."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import fields
from pathlib import Path

import yaml

from demoforge.render import photos
from demoforge.render.font import LETTERS
from demoforge.render.look import (
    ARMS, COLOURS, PROJECTIONS, SPLITS, TEXTURES, BlocksLook, CameraLook, LightsLook, Look, LookError, SurfaceLook,
)
from demoforge.sim.arm_mesh import MeshArmError, panda_mesh_dir


def _num(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(float(x))


def _range(value: object, where: str, problems: list[str], *, lo: float | None = None,
           hi: float | None = None, integer: bool = False) -> tuple:
    pair = [value, value] if _num(value) else value
    if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(_num(v) for v in pair)):
        problems.append(f"{where}: {value!r} must be a number or a [low, high] pair of numbers")
        return (0, 0)
    a, b = pair
    if integer and not all(float(v).is_integer() for v in pair):
        problems.append(f"{where}: {value!r} must be whole numbers")
    if a > b:
        problems.append(f"{where}: low {a} > high {b}; swap them")
    if lo is not None and a < lo or hi is not None and b > hi:
        problems.append(f"{where}: {list(pair)} must lie within [{lo}, {hi}]")
    return (int(a), int(b)) if integer else (float(a), float(b))


def _half_width(value: object, where: str, problems: list[str], *, hi: float | None = None) -> float:
    if not _num(value) or value < 0 or (hi is not None and value > hi):
        bound = f" and <= {hi}" if hi is not None else ""
        problems.append(f"{where}: {value!r} must be a number >= 0{bound} (a half-width)")
        return 0.0
    return float(value)


def _mapping(raw: object, where: str, known: list[str], problems: list[str]) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be a mapping with keys {known}, got {type(raw).__name__}")
        return {}
    for key in sorted(map(str, set(raw) - set(known))):
        problems.append(f"{where}: unknown key {key!r}; known keys: {', '.join(known)}")
    return raw


def _lights(raw: object, where: str, problems: list[str]) -> LightsLook:
    raw = _mapping(raw, where, [f.name for f in fields(LightsLook)], problems)
    d = LightsLook()
    unit = {"lo": 0.0, "hi": 1.0}
    return LightsLook(
        count=_range(raw.get("count", d.count), f"{where}.count", problems, lo=1, hi=8, integer=True),
        azimuth_deg=_range(raw.get("azimuth_deg", d.azimuth_deg), f"{where}.azimuth_deg", problems),
        elevation_deg=_range(raw.get("elevation_deg", d.elevation_deg), f"{where}.elevation_deg", problems,
                             lo=5.0, hi=90.0),
        intensity=_range(raw.get("intensity", d.intensity), f"{where}.intensity", problems, **unit),
        colour_jitter=_half_width(raw.get("colour_jitter", d.colour_jitter), f"{where}.colour_jitter", problems,
                                  hi=1.0),
        ambient=_range(raw.get("ambient", d.ambient), f"{where}.ambient", problems, **unit),
        headlight=_range(raw.get("headlight", d.headlight), f"{where}.headlight", problems, **unit),
    )


def _images(raw: object, where: str, base: Path | None, problems: list[str]) -> dict[str, tuple[str, ...]]:
    out = {}
    for split, entries in _per_split(raw, where, problems).items():
        entries = [entries] if isinstance(entries, str) else entries
        if not (isinstance(entries, list) and entries and all(isinstance(e, str) and e for e in entries)):
            problems.append(f"{where}.{split}: {entries!r} must be a non-empty list of image files, folders or "
                            f"{photos.PREFIX}NAME (shipped: {', '.join(photos.SKIMAGE)})")
            continue
        refs: list[str] = []
        for i, entry in enumerate(entries):
            try:
                found = photos.resolve(entry, base)
                for ref in found:
                    photos.load_image(ref)  # an unreadable image is reported now, not mid-render
            except photos.PhotoError as exc:
                problems.append(f"{where}.{split}[{i}]: {entry!r}: {exc}")
                continue
            refs += [r for r in found if r not in refs]
        out[split] = tuple(refs)
    if all(out.get(s) for s in SPLITS):
        shared = sorted(set(out["train"]) & set(out["test"]))
        if shared:
            problems.append(f"{where}: train and test share {shared}; a test image must be unseen in training, "
                            "so name each image in one split only")
    return out


def _surface(raw: object, where: str, problems: list[str], *, base: Path | None = None,
             sky: bool = False) -> SurfaceLook:
    raw = _mapping(raw, where, [f.name for f in fields(SurfaceLook)], problems)
    d = SurfaceLook()
    images = None if raw.get("images") is None else _images(raw["images"], f"{where}.images", base, problems)
    textures = raw.get("textures", ["image"] if images is not None else list(d.textures))
    textures = [textures] if isinstance(textures, str) else textures
    if not (isinstance(textures, list) and textures and all(t in TEXTURES for t in textures)):
        problems.append(f"{where}.textures: {textures!r} must be a non-empty list drawn from {list(TEXTURES)}")
        textures = list(d.textures)
    if ("image" in textures) != (images is not None):
        problems.append(f"{where}: texture 'image' draws from `images`; give both (images: {{train: [...], "
                        f"test: [...]}} and 'image' in textures) or neither")
    projection = raw.get("projection", d.projection)
    if projection not in PROJECTIONS:
        problems.append(f"{where}.projection: {projection!r} is not one of {list(PROJECTIONS)}")
        projection = d.projection
    if not sky and projection != d.projection:
        problems.append(f"{where}.projection: {projection!r}: a projection applies to the sky box (background) only")
    unit = {"lo": 0.0, "hi": 1.0}
    return SurfaceLook(
        textures=tuple(textures),
        hue=_range(raw.get("hue", d.hue), f"{where}.hue", problems, **unit),
        saturation=_range(raw.get("saturation", d.saturation), f"{where}.saturation", problems, **unit),
        value=_range(raw.get("value", d.value), f"{where}.value", problems, **unit),
        repeat=_range(raw.get("repeat", d.repeat), f"{where}.repeat", problems, lo=0.1, hi=100.0),
        specular=_range(raw.get("specular", d.specular), f"{where}.specular", problems, **unit),
        shininess=_range(raw.get("shininess", d.shininess), f"{where}.shininess", problems, **unit),
        images=images, projection=projection,
    )


def _colour(value: object, where: str, problems: list[str]) -> tuple[float, float, float]:
    if isinstance(value, str):
        if value not in COLOURS:
            problems.append(f"{where}: unknown colour {value!r}; named colours: {', '.join(COLOURS)}")
            return (0.0, 0.0, 0.0)
        return COLOURS[value]
    if isinstance(value, list | tuple) and len(value) == 3 and all(_num(v) and 0 <= v <= 1 for v in value):
        return tuple(float(v) for v in value)  # type: ignore[return-value]
    problems.append(f"{where}: {value!r} must be a colour name or [r, g, b] in [0, 1]")
    return (0.0, 0.0, 0.0)


def _per_split(raw: object, where: str, problems: list[str]) -> dict:
    if not isinstance(raw, dict) or sorted(raw) != sorted(SPLITS):
        problems.append(f"{where}: must map both splits {list(SPLITS)} to their sets, got {raw!r}")
        return {}
    return raw


def _blocks(raw: object, where: str, problems: list[str]) -> BlocksLook:
    raw = _mapping(raw, where, [f.name for f in fields(BlocksLook)], problems)
    colours = glyphs = None
    if raw.get("colours") is not None:
        colours = {}
        for split, values in _per_split(raw["colours"], f"{where}.colours", problems).items():
            if not (isinstance(values, list) and values):
                problems.append(f"{where}.colours.{split}: must be a non-empty list of colours")
                continue
            colours[split] = tuple(_colour(v, f"{where}.colours.{split}[{i}]", problems) for i, v in enumerate(values))
    if raw.get("glyphs") is not None:
        glyphs = {}
        for split, letters in _per_split(raw["glyphs"], f"{where}.glyphs", problems).items():
            bad = sorted(set(str(letters)) - set(LETTERS)) if isinstance(letters, str) else None
            if not isinstance(letters, str) or not letters or bad or len(set(letters)) != len(letters):
                problems.append(f"{where}.glyphs.{split}: {letters!r} must be distinct letters from {LETTERS}")
                continue
            glyphs[split] = letters
    unit = {"lo": 0.0, "hi": 1.0}
    finish = {key: None if raw.get(key) is None else _range(raw[key], f"{where}.{key}", problems, **unit)
              for key in ("specular", "shininess")}
    if (finish["specular"] is None) != (finish["shininess"] is None):
        problems.append(f"{where}: give specular and shininess together (the blocks' surface finish)")
    return BlocksLook(colours=colours, glyphs=glyphs, **finish,
                      hue_jitter=_half_width(raw.get("hue_jitter", 0.0), f"{where}.hue_jitter", problems, hi=0.5),
                      shade_jitter=_half_width(raw.get("shade_jitter", 0.0), f"{where}.shade_jitter", problems,
                                               hi=1.0))


def _point(value: object, where: str, problems: list[str]) -> tuple[float, float, float] | None:
    if value is None:
        return None
    if isinstance(value, list | tuple) and len(value) == 3 and all(_num(v) for v in value):
        return tuple(float(v) for v in value)  # type: ignore[return-value]
    problems.append(f"{where}: {value!r} must be [x, y, z] in metres")
    return None


def _pixels(value: object, where: str, problems: list[str]) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 16 <= value <= 4096 and value % 2 == 0:
        return value
    problems.append(f"{where}: {value!r} must be an even whole number of pixels in [16, 4096]")
    return None


def _cameras(raw: object, where: str, problems: list[str]) -> dict[str, CameraLook]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{where}: must map camera names (or 'default') to camera settings, got {type(raw).__name__}")
        return {}
    out = {}
    for name in sorted(map(str, raw)):
        w = f"{where}.{name}"
        item = _mapping(raw[name], w, [f.name for f in fields(CameraLook)], problems)
        pos, target = _point(item.get("pos"), f"{w}.pos", problems), _point(item.get("target"), f"{w}.target", problems)
        if (item.get("pos") is None) != (item.get("target") is None):
            problems.append(f"{w}: give pos and target together (the camera looks from pos at target)")
        elif pos is not None and target is not None and pos == target:
            problems.append(f"{w}: pos and target are the same point {list(pos)}; the camera needs a view direction")
        fovy = item.get("fovy")
        if fovy is not None and not (_num(fovy) and 1.0 <= fovy <= 170.0):
            problems.append(f"{w}.fovy: {fovy!r} must be a vertical field of view in [1, 170] degrees")
            fovy = None
        out[name] = CameraLook(
            pos=pos, target=target, fovy=None if fovy is None else float(fovy),
            width=_pixels(item.get("width"), f"{w}.width", problems),
            height=_pixels(item.get("height"), f"{w}.height", problems),
            pos_m=_half_width(item.get("pos_m", 0.0), f"{w}.pos_m", problems, hi=0.5),
            angle_deg=_half_width(item.get("angle_deg", 0.0), f"{w}.angle_deg", problems, hi=45.0),
            fovy_deg=_half_width(item.get("fovy_deg", 0.0), f"{w}.fovy_deg", problems, hi=30.0),
        )
    return out


TOP_KEYS = ("name", "split", "image", "shadow_map_px", "arm", "lights", "background", "floor", "table", "blocks",
            "cameras")


def look_from_dict(raw: object, *, where: str = "look", base: str | Path | None = None) -> Look:
    """A look from a YAML/JSON mapping; every problem reported at once. Relative image paths are
    taken from `base` (the look file's folder; None: the working directory)."""
    problems: list[str] = []
    raw = _mapping(raw, where, list(TOP_KEYS), problems) if raw is not None else None
    if raw is None:
        raise LookError(f"{where}: empty; a look needs at least a name")
    base = None if base is None else Path(base)
    name = raw.get("name")
    if not (isinstance(name, str) and name and name.replace("_", "").replace("-", "").isalnum()):
        problems.append(f"{where}.name: {name!r} must be a non-empty word (letters, digits, '-', '_')")
    split = raw.get("split", "train")
    if split not in SPLITS:
        problems.append(f"{where}.split: {split!r} is not one of {list(SPLITS)}")
    image = _mapping(raw.get("image"), f"{where}.image", ["width", "height"], problems)
    size = {}
    for key in ("width", "height"):
        v = image.get(key, 224)
        if not (isinstance(v, int) and not isinstance(v, bool) and 16 <= v <= 4096 and v % 2 == 0):
            problems.append(f"{where}.image.{key}: {v!r} must be an even whole number of pixels in [16, 4096]")
            v = 224
        size[key] = v
    shadow = raw.get("shadow_map_px", 0)
    if not (isinstance(shadow, int) and not isinstance(shadow, bool) and (shadow == 0 or 256 <= shadow <= 8192)):
        problems.append(f"{where}.shadow_map_px: {shadow!r} must be 0 (no shadows) or a whole number of pixels "
                        "in [256, 8192]")
        shadow = 0
    arm = raw.get("arm", "primitives")
    if arm not in ARMS:
        problems.append(f"{where}.arm: {arm!r} is not one of {list(ARMS)}")
        arm = "primitives"
    elif arm == "mesh":
        try:
            panda_mesh_dir()
        except MeshArmError as exc:
            problems.append(f"{where}.arm: 'mesh': {exc}; or `arm: primitives`")
    section = lambda key, parse: None if raw.get(key) is None else parse(raw[key], f"{where}.{key}", problems)  # noqa: E731
    look = Look(
        name=str(name), split=str(split), width=size["width"], height=size["height"], shadow_map_px=shadow, arm=arm,
        lights=section("lights", _lights),
        background=section("background", lambda r, w, p: _surface(r, w, p, base=base, sky=True)),
        floor=section("floor", lambda r, w, p: _surface(r, w, p, base=base)),
        table=section("table", lambda r, w, p: _surface(r, w, p, base=base)), blocks=section("blocks", _blocks),
        cameras=_cameras(raw.get("cameras"), f"{where}.cameras", problems),
    )
    if problems:
        raise LookError(f"{where}: invalid look:\n  " + "\n  ".join(problems))
    return look


def load_look(path: str | Path) -> Look:
    """A look from a YAML file, or the name of a shipped look ('plain', 'randomized'); either
    may end in `:train` or `:test` to take that split of its glyph and colour sets."""
    head, sep, split = str(path).rpartition(":")
    if sep and split in SPLITS and head:
        return dataclasses.replace(load_look(head), split=split)
    path = Path(path)
    if not path.suffix and not path.exists():
        shipped = Path(__file__).parent / "looks" / f"{path.name}.yaml"
        if not shipped.is_file():
            raise LookError(f"{path}: no such look file, and not a shipped look; shipped looks: {shipped_looks()}")
        path = shipped
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LookError(f"cannot read look {path}: {exc}") from None
    return look_from_dict(raw, where=str(path), base=path.parent)


def shipped_looks() -> list[str]:
    """Names of the looks that ship with demoforge."""
    return sorted(p.stem for p in (Path(__file__).parent / "looks").glob("*.yaml"))
