"""A cleaned COCO document's segmentations as DALI 2.4's ``pixelwise_masks`` can draw them.

``COCOReader::PixelwiseMasks`` (``coco_reader_op.cc``) starts an image's mask from the mask
of the *lowest* category id among the image's boxes and merges the others into it. When that
category has no segmentation there (a box-only annotation: a detector's box added to a
segmentation set, or a YOLO box line beside polygon lines), it starts from an encoding of no
runs, and every merge stops at once: the whole mask comes out as background, silently, in the
preview and in training alike. :func:`drawable_masks` gives the first annotation of that
category an all-background RLE, so the image's other segmentations are drawn; nothing else
changes (the box, its order, an image without any segmentation). Embedded verbatim in the
exported module (no type hints), which reads the same cleaned document.
"""

from __future__ import annotations


def drawable_masks(images, annotations):
    """The cleaned annotations, where an image has a segmentation but its lowest
    category id has none: the first annotation of that id given an empty RLE (all
    background) of the image's size, else DALI draws the image's mask empty. In
    place; returns annotations."""

    sizes = {img["id"]: (img["width"], img["height"]) for img in images}
    per_image = {}
    for ann in annotations:
        per_image.setdefault(ann["image_id"], []).append(ann)
    for image_id, anns in per_image.items():
        segmented = {
            a["category_id"]
            for a in anns
            if isinstance(a["segmentation"], dict) or a["segmentation"]
        }
        lowest = min(a["category_id"] for a in anns)
        if segmented and lowest not in segmented:
            first = next(a for a in anns if a["category_id"] == lowest)
            width, height = sizes[image_id]
            size = [height, width]
            first["segmentation"] = {"size": size, "counts": [height * width]}
    return annotations
