"""Import generated source as a module: the preview's chain, an exported training module.

The source is written to a file and registered in ``sys.modules`` under its name: DALI's
conditionals (autograph) look the source of the functions up, and tracebacks quote its lines.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def import_source(code: str, folder: Path, name: str) -> ModuleType:
    """``code`` written to ``folder/<name>.py`` and imported as module ``name``."""
    path = folder / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import generated module {name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
