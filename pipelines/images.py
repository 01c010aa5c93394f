"""Loading the user's images for previews: the public names, from the modules that hold them.

* :mod:`.image_files`: which files are images, folder listing exactly like ``readers.file``,
  printable file names;
* :mod:`.image_collect`: gathering encoded files safely inside an allowed folder, and uploads;
* :mod:`.image_headers`: an image's size from its header, the check before any decode;
* :mod:`.dali_errors`: stderr capture and DALI's error text turned into reasons;
* :mod:`.image_decode`: DALI decoding within the pixel budgets (:mod:`.budget`).
"""

from __future__ import annotations

from .budget import IMAGE_PIXELS
from .dali_errors import (
    Captured,
    captured_stderr,
    dali_error_text,
    decode_failure_reason,
    error_text,
    garbage_reason,
    garbage_warning,
)
from .image_collect import EncodedImage, ImageProblem, Source, collect
from .image_decode import (
    BATCH_PIXELS,
    BATCH_SIZE,
    HUGE_PIXELS,
    ORIGINAL_SIZE,
    PREVIEW_SIZES,
    clear_pipeline_cache,
    decode,
    decoded_size,
    peek_shapes,
)
from .image_files import (
    DALI_FILE_FILTERS,
    IMAGE_EXTENSIONS,
    SUPPORTED_EXTENSIONS,
    FolderScan,
    os_error_reason,
    readable,
    reader_order,
    scan_folder,
)
from .image_headers import (
    HeaderLimitError,
    HeaderSize,
    SizeCheck,
    check_size,
    header_size,
    pixel_limit_reason,
    read_size,
)

MAX_PIXELS = IMAGE_PIXELS
"""Largest image decoded (W x H): the budget's per-image pixels (:data:`.budget.IMAGE_PIXELS`)."""

__all__ = [
    "BATCH_PIXELS", "BATCH_SIZE", "DALI_FILE_FILTERS", "HUGE_PIXELS", "IMAGE_EXTENSIONS",
    "MAX_PIXELS", "ORIGINAL_SIZE", "PREVIEW_SIZES", "SUPPORTED_EXTENSIONS", "Captured",
    "EncodedImage", "FolderScan", "HeaderLimitError", "HeaderSize", "ImageProblem", "Source",
    "captured_stderr", "clear_pipeline_cache", "collect", "dali_error_text", "decode",
    "decode_failure_reason", "decoded_size", "error_text", "garbage_reason", "garbage_warning",
    "header_size", "os_error_reason", "peek_shapes", "pixel_limit_reason", "read_size",
    "readable", "reader_order", "scan_folder", "SizeCheck", "check_size",
]
