"""DALI knowledge of dali-gallery: operator catalog, presets, preview engine and code export.

Imports no widgets and works without a GPU.
"""

__version__ = "0.1.0"
