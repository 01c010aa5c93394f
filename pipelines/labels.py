"""What an operator does to labels (boxes, masks, keypoints): declared once per catalog entry.

Each catalog entry's ``labels`` field holds one of these rules; the chain generator
(:mod:`pipelines.label_code`) turns it into the DALI lines that move the labels with the pixels,
the same lines in the preview and in the exported module:

* :class:`Keep`: the operator changes pixel values only (colour, noise, blur, erasing); labels
  stay where they are.
* :class:`Warp`: the operator moves pixels by a matrix it can state. ``matrix`` is a template
  (placeholders as in the entry's ``call``, plus ``{out}``: the images after the operator) of a
  2x3 forward map in pixel coordinates, input -> output (3x3 with ``homography``). Box corners
  and keypoints move through it, a box becomes the tight box of its moved corners, and masks
  are warped with that matrix and nearest-neighbour interpolation (or take the entry's own
  call: ``nearest``, below). ``frame`` says how the
  matrix is stated (each small DALI operator costs a preview ~0.1 ms, so a rule states it
  with as few as it can): ``pixels``, in pixel coordinates; ``centres``, about the image
  centres (the input's centre at the origin, the origin onto the output's centre), as a
  rotation states it in one ``fn.transforms`` operator; ``window``, the input's window
  (top, left, height, width) stretched onto the whole output, as a crop draws it. ``call``
  replaces the entry's own call when labels are in the chain, for an operator whose matrix
  DALI does not expose (a random window): it returns the images and the matrix (and, when
  it takes ``{masks}``, the masks cut and resized as the images, nearest neighbour).
  ``nearest`` moves masks through the entry's own call instead of the matrix's warp, with
  the parameters it names replaced (nearest-neighbour interpolation, fill 0): one DALI
  operator that resamples them exactly as the images, where the warp needs the pixel matrix
  made from the frame (a rotation's: ten small operators; the detection preview with masks
  took 5.8 ms instead of 4.7 on an H100).
* :class:`BoxCrop`: a detection crop whose window is drawn from the boxes; the DALI operator
  that draws it also crops and drops the boxes (``bbox_prune_threshold``), the classes and
  keypoints ride along as its label columns: no Python step in the graph.
* :class:`Scale`: the whole image resized; relative boxes and keypoints do not move, masks
  are resized (nearest neighbour: the entry's own call with ``nearest``'s parameters).
* :class:`Flip`: mirrors; boxes through ``fn.bb_flip``, keypoints through ``fn.coord_flip``,
  masks through the entry's own call. Flips and warps that follow each other with no condition
  between them move their labels in one shared Python step instead, in order, with the same
  arithmetic (:mod:`pipelines.label_chain_helpers`).
* :class:`Refuse`: the operator cannot move labels exactly (a non-rigid distortion, a policy of
  operations that are not label-aware, a user's Python function). With labels in the chain it is
  refused with ``reason``, never applied with stale boxes.

After a warp, boxes are clipped to the image and a box that keeps less than the chain's
threshold of its area is dropped with its keypoints (:data:`DEFAULT_MIN_KEPT`).
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MIN_KEPT = 0.25
"""A box that keeps less than this fraction of its area inside the image after a step is
dropped (the user's ``box_min_kept``; albumentations calls it ``min_visibility``)."""


Overrides = tuple[tuple[str, str], ...]
"""(parameter, source) pairs that replace an entry's parameters in its own call on masks."""

FRAMES = {
    "pixels": "{m}",
    "centres": "_centred({m}, {before}, {after})",
    "window": "_window_matrix({m}, {after})",
}
"""How a :class:`Warp` states its matrix, and the graph expression that makes the pixel
matrix of it (``{m}``, ``{before}``, ``{after}``: the matrix and the images), which a
mask's warp needs where the rule does not move masks otherwise (``nearest``, a ``call`` that
takes ``{masks}``: every catalog entry stated about centres or a window does); the label
step's Python handles every frame itself."""


@dataclass(frozen=True)
class LabelRule:
    """Base of the label rules: what the operator does to labels."""

    @property
    def moves(self) -> bool:
        """Whether labels change position (and so may be clipped or dropped)."""
        return False

    @property
    def templates(self) -> tuple[str, ...]:
        """The code templates the rule's label lines fill in (placeholders as in the entry's
        ``call``): the chain generator binds a fed value they use a second time."""
        return ()

    @property
    def nearest_masks(self) -> Overrides | None:
        """The overrides with which masks go through the entry's own call (None: they do
        not): that call then uses each of its parameters a second time."""
        return getattr(self, "nearest", None)

    def describe(self) -> str:
        """One line for the operator reference and the inspector."""
        raise NotImplementedError


@dataclass(frozen=True)
class Keep(LabelRule):
    """Pixel values change, positions do not."""

    def describe(self) -> str:
        return "labels unchanged (pixel values only)"


@dataclass(frozen=True)
class Warp(LabelRule):
    """Pixels move by a stated matrix (see the module's docstring)."""

    matrix: str = ""
    call: str = ""
    homography: bool = False
    frame: str = "pixels"
    nearest: Overrides | None = None
    """Masks through the entry's own call with these (parameter, source) pairs replaced;
    None: through the matrix (``_warp_mask``)."""

    def __post_init__(self) -> None:
        if bool(self.matrix) == bool(self.call):
            raise ValueError("Warp: give either matrix or call")
        if self.call and self.nearest is not None:
            raise ValueError("Warp: a call rule moves the masks itself ({masks})")
        if self.frame not in FRAMES:
            raise ValueError(f"Warp: frame {self.frame!r} is not one of {sorted(FRAMES)}")
        if self.homography and self.frame != "pixels":
            raise ValueError("Warp: a homography is stated in pixels")

    @property
    def moves(self) -> bool:
        return True

    @property
    def templates(self) -> tuple[str, ...]:
        return (self.matrix or self.call,)

    def describe(self) -> str:
        kind = "homography" if self.homography else "affine matrix"
        return f"boxes, keypoints and masks follow the {kind}; boxes clipped, small ones dropped"


@dataclass(frozen=True)
class BoxCrop(LabelRule):
    """A window drawn from the boxes themselves by a DALI operator that crops, clips and
    drops them too: ``call`` (placeholders as in the entry's ``call``, plus ``{min_kept}``
    and ``{masks}``) returns the cut images, boxes, classes, keypoints, the kept fraction of
    each box that entered, and the cut masks when ``{masks}`` is not None. No Python step."""

    call: str

    @property
    def moves(self) -> bool:
        return True

    @property
    def templates(self) -> tuple[str, ...]:
        return (self.call,)

    def describe(self) -> str:
        return ("a window the boxes overlap; DALI crops the boxes to it and drops small ones, "
                "keypoints and masks follow")


@dataclass(frozen=True)
class Scale(LabelRule):
    """The whole image scaled (a resize): boxes and keypoints, relative to the image, stay
    exactly where they are; masks are resized with nearest neighbour: the entry's own call
    with ``nearest``'s (parameter, source) pairs replaced, or (None) a warp through the
    scale's matrix."""

    nearest: Overrides | None = None

    def describe(self) -> str:
        return "boxes and keypoints unchanged (relative coordinates); masks resized"


@dataclass(frozen=True)
class Flip(LabelRule):
    """A mirror: ``horizontal`` / ``vertical`` are the parameters (placeholders) that say which."""

    horizontal: str = "{horizontal}"
    vertical: str = "{vertical}"

    @property
    def moves(self) -> bool:
        return True

    @property
    def templates(self) -> tuple[str, ...]:
        return (self.horizontal, self.vertical)

    def describe(self) -> str:
        return "boxes (fn.bb_flip), keypoints (fn.coord_flip) and masks mirrored"


@dataclass(frozen=True)
class Refuse(LabelRule):
    """Cannot move labels exactly: refused with labels in the chain."""

    reason: str

    def describe(self) -> str:
        return f"not label-aware: {self.reason}"


KEEP = Keep()
"""The rule of every operator that changes pixel values only."""
