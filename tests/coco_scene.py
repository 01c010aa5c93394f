"""A small COCO dataset made in a test's folder: JPEGs of filled rectangles at odd sizes, two
categories with ids 3 and 11 (keypoints on 11), polygon masks, one image without annotations,
and image ids out of file order (the reader reads by id)."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

SIZES = [(77, 53), (64, 91), (83, 67), (59, 49), (71, 45)]
IDS = [5, 2, 9, 7, 4]
EMPTY = 3
"""The image (by position in SIZES) without annotations."""
CATEGORIES = [{"id": 3, "name": "block"},
              {"id": 11, "name": "marker", "keypoints": ["top_left", "bottom_right"]}]


def _objects(w: int, h: int, k: int) -> list[tuple[int, tuple[int, int, int, int]]]:
    """(category, (left, top, right, bottom)) of image k's rectangles, in pixels."""
    return [(3, (3 + k, 4, 3 + k + w // 3, 4 + h // 2)),
            (11, (w // 2 - k, h // 3, w - 3, h - 2 - k))]


def make_coco(root: Path) -> tuple[Path, Path]:
    """(images folder, annotations file) of the dataset, written under ``root``."""
    images_dir = root / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for k, ((w, h), image_id) in enumerate(zip(SIZES, IDS, strict=True)):
        pic = Image.new("RGB", (w, h), (30 + 10 * k, 40, 50))
        draw = ImageDraw.Draw(pic)
        name = f"scene_{k}.jpg"
        images.append({"id": image_id, "file_name": name, "width": w, "height": h})
        if k != EMPTY:
            for n, (cat, (left, top, right, bottom)) in enumerate(_objects(w, h, k)):
                draw.rectangle([left, top, right - 1, bottom - 1],
                               fill=(220, 60 + 120 * n, 40 + 30 * k))
                ann = {"id": len(anns) + 1, "image_id": image_id, "category_id": cat,
                       "bbox": [left, top, right - left, bottom - top],
                       "area": (right - left) * (bottom - top), "iscrowd": 0,
                       "segmentation": [[left, top, right, top, right, bottom, left, bottom]]}
                if cat == 11:
                    ann["keypoints"] = [left + 1.5, top + 2.25, 2, right - 1, bottom - 1, 1]
                    ann["num_keypoints"] = 2
                anns.append(ann)
        pic.save(images_dir / name, quality=92)
    path = root / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": anns,
                                "categories": CATEGORIES}), encoding="utf-8")
    return images_dir, path
