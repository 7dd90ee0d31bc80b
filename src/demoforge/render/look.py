"""Looks: what may vary in the pictures of an episode (never its physics), as a YAML file.

A look names ranges; `sample.draw_look` turns a look into one concrete draw per episode copy.
A range is `[low, high]` (uniform) or one number (fixed). A section that is absent keeps the
scene's own appearance, so the plain look is just a name and an image size:

    name: randomized
    split: train                 # which glyph and colour sets: train or test
    image: {width: 224, height: 224}
    shadow_map_px: 1024          # the key light casts shadows; 0 (default): none
    arm: mesh                    # the built-in Panda drawn with Franka's link meshes (default: primitives)
    lights: {count: [1, 3], azimuth_deg: [0, 360], elevation_deg: [35, 85], intensity: [0.3, 0.7],
             colour_jitter: 0.15, ambient: [0.15, 0.4], headlight: [0.1, 0.4]}
    background: {textures: [gradient, checker, noise, flat], value: [0.2, 0.9]}    # the sky box
    floor: {textures: [flat, checker], value: [0.2, 0.7]}
    table: {textures: [flat, checker, noise, gradient], value: [0.3, 0.9], specular: [0, 0.4]}
    blocks: {colours: {train: [red, green], test: [orange, purple]}, hue_jitter: 0.02, shade_jitter: 0.1,
             glyphs: {train: ABCDEFGHJKLM, test: NPQRSTUVWXYZ}, specular: [0, 0.6], shininess: [0.1, 0.8]}
    cameras: {default: {pos_m: 0.02, angle_deg: 3, fovy_deg: 3}, wrist: {pos_m: 0.004},
              front: {pos: [0.79, 0, 0.62], target: [0.24, 0, 0.4], fovy: 38, width: 320, height: 240}}

A surface (`background`, the sky box that forms the walls; `floor`; `table`) may draw photographs:
texture `image` with `images` per split, each entry an image file, a folder of them (relative to
the look file) or a shipped photograph `skimage:NAME` (demoforge.render.photos). The sky box
takes them as equirectangular panoramas (`projection: equirect`, the default) or one photo per
wall (`walls`). `LOOK:test` draws only test images, `LOOK:train` only train images:

    background: {images: {train: [skimage:coffee, photos/train], test: [photos/test]}, projection: walls}

A camera entry sets its pose (`pos` and `target` [m], in its parent frame: the world for
front and side, the hand for wrist), `fovy` [deg] and image `width`/`height` [px], and
jitters around that (`pos_m`, `angle_deg`, `fovy_deg` half-widths); "default" applies to
every camera without its own entry.

Unknown keys and every bad value are reported at once, naming the file and the key.
"""

from __future__ import annotations

import dataclasses

import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from demoforge.errors import DemoforgeError
from demoforge.render import photos
from demoforge.render.font import LETTERS
from demoforge.sim.arm_mesh import MeshArmError, panda_mesh_dir

Range = tuple[float, float]
TEXTURES = ("flat", "gradient", "checker", "noise", "wood", "cloth", "plastic", "painted", "image")
ARMS = ("primitives", "mesh")  # how the built-in Panda is drawn (demoforge.sim.arm_mesh)
PROJECTIONS = ("equirect", "walls")  # how the sky box shows a photograph (demoforge.render.photos.sky_image)
SPLITS = ("train", "test")
# Named colours a look may use for blocks [0..1 RGB]; a look may also give [r, g, b] triples.
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.85, 0.15, 0.15), "green": (0.15, 0.7, 0.2), "blue": (0.15, 0.3, 0.85),
    "yellow": (0.92, 0.85, 0.15), "orange": (0.95, 0.5, 0.1), "purple": (0.55, 0.2, 0.75),
    "cyan": (0.15, 0.8, 0.85), "magenta": (0.85, 0.2, 0.65), "white": (0.95, 0.95, 0.95),
    "black": (0.08, 0.08, 0.08), "brown": (0.5, 0.3, 0.15), "pink": (0.95, 0.6, 0.7),
    "grey": (0.5, 0.5, 0.5), "lime": (0.6, 0.9, 0.2), "teal": (0.1, 0.5, 0.5), "navy": (0.1, 0.15, 0.45),
}


class LookError(DemoforgeError):
    """A look file is invalid or does not fit the scene it is applied to."""


@dataclass(frozen=True)
class LightsLook:
    """Directional lights replacing the scene's, and the headlight."""

    count: tuple[int, int] = (2, 2)  # number of lights, uniform integer in [low, high]
    azimuth_deg: Range = (0.0, 360.0)  # direction the light comes from, about world z [deg]
    elevation_deg: Range = (45.0, 80.0)  # height of the light above the horizon [deg]
    intensity: Range = (0.4, 0.6)  # diffuse strength per light [0..1]
    colour_jitter: float = 0.0  # per-channel tint: white times U[1 - j, 1] per channel [-]
    ambient: Range = (0.3, 0.3)  # headlight ambient [0..1]
    headlight: Range = (0.4, 0.4)  # headlight diffuse [0..1]


@dataclass(frozen=True)
class SurfaceLook:
    """A procedural or photographic texture and material for the sky box (the walls), floor or table
    top. Wood takes its colour from a natural range (textures.WOOD_HSV), not from hue/saturation/value;
    a grey photograph is tinted by the drawn colour, a colour one keeps its own."""

    textures: tuple[str, ...] = ("flat",)  # kinds drawn uniformly: MuJoCo's flat, gradient, checker, noise,
    #   demoforge.render.textures' wood, cloth, plastic, painted, or image (one of `images`)
    hue: Range = (0.0, 1.0)  # HSV hue of the two texture colours [0..1]
    saturation: Range = (0.0, 0.5)  # HSV saturation [0..1]
    value: Range = (0.3, 0.9)  # HSV value (brightness) [0..1]
    repeat: Range = (1.0, 6.0)  # texture repeats across the surface (table and floor) [-]
    specular: Range = (0.0, 0.3)  # material specular [0..1]
    shininess: Range = (0.0, 0.5)  # material shininess (1 - roughness) [0..1]
    images: dict[str, tuple[str, ...]] | None = None  # split -> image references (photos.resolve: "skimage:NAME"
    #   or absolute paths), the `image` texture's choices; None: no photographs
    projection: str = "equirect"  # sky box only: a photo as an equirectangular panorama, or on every wall


@dataclass(frozen=True)
class BlocksLook:
    """Block colours, letter glyphs and surface finish. Re-colouring renames nothing: task words
    name blocks by colour ("stack red on blue"), so they stay true only with `colours` absent;
    hue and shade jitter keep each block within its colour's name."""

    colours: dict[str, tuple[tuple[float, float, float], ...]] | None = None  # split -> colour set; None keeps
    hue_jitter: float = 0.0  # hue plus U[-j, j] turns of the colour wheel (0.025: 9 deg, red stays red) [-]
    shade_jitter: float = 0.0  # saturation and value each times U[1 - j, 1 + j], clipped to [0, 1] [-]
    glyphs: dict[str, str] | None = None  # split -> letters drawn onto the faces; None keeps the scene's faces
    specular: Range | None = None  # material specular [0..1]; None keeps MuJoCo's default (0.5)
    shininess: Range | None = None  # material shininess (1 - roughness) [0..1]; None keeps the default (0.5)


@dataclass(frozen=True)
class CameraLook:
    """A named camera under a look: where it is, its lens and image size, and how far a draw may
    move it. Unset fields keep the scene's camera (and the look's image size)."""

    pos: tuple[float, float, float] | None = None  # position in the camera's parent frame (the world for
    #   front and side, the hand for wrist) [m]; needs `target`
    target: tuple[float, float, float] | None = None  # point it looks at, same frame [m]; needs `pos`
    fovy: float | None = None  # vertical field of view [deg]
    width: int | None = None  # image width [px]; None: the look's image width
    height: int | None = None  # image height [px]; None: the look's image height
    pos_m: float = 0.0  # jitter: offset per axis, uniform in [-j, j], in the camera's parent frame [m]
    angle_deg: float = 0.0  # jitter: tilt about a uniform random axis, angle in [0, j] [deg]
    fovy_deg: float = 0.0  # jitter: vertical field of view offset, uniform in [-j, j] [deg]

    @property
    def jitters(self) -> bool:
        """Whether a draw moves this camera."""
        return bool(self.pos_m or self.angle_deg or self.fovy_deg)



@dataclass(frozen=True)
class Look:
    """A look; see the module docstring for the YAML form."""

    name: str  # recorded with every draw; a look's draws are keyed by it
    split: str = "train"  # which glyph, colour and image sets: train or test
    width: int = 224  # image width [px]
    height: int = 224  # image height [px]
    shadow_map_px: int = 0  # the key light (the scene's first light, or the first drawn one) casts shadows
    #   from a square map of this side [px]; 0: no shadows (each costs a depth pass per frame)
    lights: LightsLook | None = None  # None keeps the scene's lights
    background: SurfaceLook | None = None  # sky box; None keeps MuJoCo's (black) background
    floor: SurfaceLook | None = None  # None keeps the scene's floor
    table: SurfaceLook | None = None  # None keeps the scene's table colour
    blocks: BlocksLook | None = None  # None keeps the blocks as built
    cameras: dict[str, CameraLook] = field(default_factory=dict)  # camera name or "default" -> its look
    arm: str = "primitives"  # the built-in Panda as built, or "mesh": drawn with Franka's link meshes (pictures
    #   only: the physics, contacts and recorded states are the primitive arm's; needs demoforge[mesh-arm])

    def camera(self, name: str) -> CameraLook | None:
        """The look of camera `name`: its own entry, else the "default" entry, else None."""
        return self.cameras.get(name, self.cameras.get("default"))

    def image_size(self, camera: str) -> tuple[int, int]:
        """(width, height) [px] of camera `camera`'s images under this look."""
        cam = self.camera(camera)
        width = cam.width if cam is not None and cam.width is not None else self.width
        height = cam.height if cam is not None and cam.height is not None else self.height
        return width, height


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


def _even(size: tuple[int, int], what: str) -> tuple[int, int]:
    width, height = (int(v) for v in size)
    if width < 2 or height < 2 or width % 2 or height % 2:
        raise LookError(f"{what}: image size {width}x{height}: width and height must be even numbers >= 2 (video)")
    return width, height


def sized_look(look: Look, size: tuple[int, int] | None, cameras: dict[str, tuple[int, int]] | None = None) -> Look:
    """`look` with every camera's images at `size` (width, height) [px] (None keeps the look's),
    then the cameras named in `cameras` at their own sizes."""
    if size is not None:
        width, height = _even(size, "--image-size")
        look = dataclasses.replace(look, width=width, height=height, cameras={
            k: dataclasses.replace(c, width=None, height=None) for k, c in look.cameras.items()})
    for name, own in (cameras or {}).items():
        width, height = _even(own, f"--image-size {name}")
        base = look.camera(name) or CameraLook()  # a camera under the look's "default" entry keeps its other fields
        look = dataclasses.replace(look, cameras={**look.cameras, name: dataclasses.replace(base, width=width,
                                                                                           height=height)})
    return look


def parse_image_size(text: str) -> tuple[int, int]:
    """'96' or '128x96' (WIDTHxHEIGHT) -> (width, height) [px], even numbers."""
    w, sep, h = text.strip().lower().partition("x")
    try:
        size = (int(w), int(h if sep else w))
    except ValueError:
        raise LookError(f"image size {text!r}: give WIDTHxHEIGHT in pixels (e.g. 96x96) or one number") from None
    return _even(size, "--image-size")


def parse_image_sizes(text: str) -> tuple[tuple[int, int] | None, dict[str, tuple[int, int]]]:
    """'96', '128x96', 'front=224x224,wrist=96' or both ('96,front=224') -> (the size of every
    camera or None, {camera: its own size})."""
    every, own = None, {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, size = part.rpartition("=")
        if sep:
            own[name.strip()] = parse_image_size(size)
        elif every is None:
            every = parse_image_size(part)
        else:
            raise LookError(f"image size {text!r}: one size for every camera, then CAMERA=WxH for single ones")
    return every, own


def shipped_looks() -> list[str]:
    """Names of the looks that ship with demoforge."""
    return sorted(p.stem for p in (Path(__file__).parent / "looks").glob("*.yaml"))
