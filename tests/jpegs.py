"""A set of ordinary JPEGs of the kinds people train on, cut from the bundled sample photos:
odd sizes, 4:2:0 / 4:2:2 / 4:4:4 chroma, progressive, grayscale, EXIF orientation, and the
sample files themselves untouched. nvJPEG treats these differently (the hardware decoder takes
baseline files only), which is where GPU decoding can differ between batch sizes."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from tests.support import SAMPLES

#: (width, height, save options) cycled over the sample photos.
KINDS: list[tuple[int, int, dict]] = [
    (317, 211, {"quality": 90, "subsampling": 2}),               # 4:2:0, odd both ways
    (640, 427, {"quality": 85, "subsampling": 0}),               # 4:4:4
    (333, 500, {"quality": 92, "subsampling": 1}),               # 4:2:2, portrait
    (801, 599, {"quality": 88, "progressive": True}),            # progressive
    (257, 255, {"quality": 75, "subsampling": 2, "exif": 6}),    # EXIF orientation 6
    (1023, 767, {"quality": 95, "subsampling": 0, "progressive": True}),
    (129, 97, {"quality": 60, "subsampling": 2}),
    (480, 480, {"quality": 90, "gray": True}),                   # single-channel JPEG
]


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def varied_jpegs(folder: Path, count: int) -> list[Path]:
    """Write ``count`` JPEGs (sorted names = reader order) into ``folder``; the first files are
    the bundled samples as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    samples = sorted(SAMPLES.glob("*.jpg"))
    out: list[Path] = []
    for k, src in enumerate(samples[:count]):
        dst = folder / f"{k:03d}_{src.name}"
        dst.write_bytes(src.read_bytes())
        out.append(dst)
    photos = [Image.open(p).convert("RGB") for p in samples]
    k = len(out)
    while len(out) < count:
        w, h, opts = KINDS[k % len(KINDS)]
        photo = photos[k % len(photos)]
        x = (k * 37) % max(1, photo.width - min(w, photo.width) + 1)
        y = (k * 53) % max(1, photo.height - min(h, photo.height) + 1)
        img = photo.crop((x, y, x + min(w, photo.width), y + min(h, photo.height)))
        if img.size != (w, h):
            img = img.resize((w, h), Image.BICUBIC)
        opts = dict(opts)
        if opts.pop("gray", False):
            img = img.convert("L")
        orientation = opts.pop("exif", None)
        if orientation:
            opts["exif"] = _exif(orientation)
        buf = io.BytesIO()
        img.save(buf, "JPEG", **opts)
        dst = folder / f"{k:03d}_{w}x{h}.jpg"
        dst.write_bytes(buf.getvalue())
        out.append(dst)
        k += 1
    return out
