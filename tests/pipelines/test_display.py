"""Display bytes of DALI's samples: the training tail's CHW floats shown as pictures, constant
tiles included, and the encoders' size rules."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.display import display_size, encode_image, to_display


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_constant_float_tile_is_black_without_warnings(dtype):
    """A constant tile (a normalised flat image) has hi == lo: in float16 the old 1e-12 guard
    vanished, so it divided 0 by 0 and cast NaN to uint8."""
    tile = np.full((3, 8, 6), 0.25, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shown = to_display(tile)
    assert shown.shape == (8, 6, 3) and shown.dtype == np.uint8
    assert not shown.any()


def test_float_tiles_are_stretched_to_the_full_range():
    ramp = np.linspace(-2.0, 3.0, 12, dtype=np.float16).reshape(1, 3, 4)
    shown = to_display(np.repeat(ramp, 3, axis=0))
    assert shown.min() == 0 and shown.max() == 255
    assert (np.diff(shown[..., 0].ravel().astype(int)) >= 0).all()  # order kept


def test_chw_and_hwc_sizes_and_grey_tiles():
    assert display_size(np.zeros((3, 20, 30), np.float32)) == (20, 30)
    assert display_size(np.zeros((20, 30, 3), np.uint8)) == (20, 30)
    grey = to_display(np.full((5, 7, 1), 9, np.uint8))
    assert grey.shape == (5, 7, 3) and (grey == 9).all()


def test_encoded_pictures_shrink_to_fit_and_never_grow():
    img = np.zeros((100, 200, 3), np.uint8)
    small = Image.open(io.BytesIO(encode_image(img, "png", fit=(50, 50))))
    assert small.size == (50, 25)
    same = Image.open(io.BytesIO(encode_image(img, "jpeg", fit=(400, 400))))
    assert same.size == (200, 100)
    with pytest.raises(ValueError, match="'gif' is not allowed"):
        encode_image(img, "gif")
