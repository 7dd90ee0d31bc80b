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
from dataclasses import dataclass, field

from demoforge.errors import DemoforgeError

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
