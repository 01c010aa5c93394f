"""An ML repository's own ``pipelines/``, ``widgets/`` or ``gallery/`` package cannot shadow
the installed code: everything is imported as ``dali_gallery.*``.

The user's folder comes first on ``sys.path`` (a script run from it, a notebook kernel started
in it); its packages raise ImportError when imported, so any import of a bare ``pipelines`` /
``widgets`` / ``gallery`` by dali_gallery fails the test. A Builder then renders a real preview.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SHADOWS = ("pipelines", "widgets", "gallery")

#: Builds a Builder on the bundled samples, adds a rotation and checks that the preview tiles
#: are DALI's output (rotated, so unlike the originals); prints a JSON report.
PROBE = """\
import json, sys
from dali_gallery import Builder

b = Builder(device="cpu", sync=True, size=128, draws=2, max_images=2, thumbnails=False)
b.add_step("rotate", angle=40.0)
assert b.wait_idle(120)
n, k = b.preview.shape
tiles = [b.tile_bytes(i, d) for i in range(n) for d in range(k)]
originals = [bytes(img.value) for img in b.preview.originals]
report = {
    "shape": [n, k],
    "rendered": b.last_result is not None and b.last_error is None,
    "tiles_differ": all(t and t not in originals for t in tiles),
    "module": sys.modules["dali_gallery"].__file__,
    "shadowed": [m for m in ("pipelines", "widgets", "gallery") if m in sys.modules],
    "first_on_path": sys.path[0],
}
b.close()
print("REPORT " + json.dumps(report))
"""


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A folder like an ML repository's, with its own pipelines/, widgets/ and gallery/."""
    for name in SHADOWS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ImportError('the user\\'s own {name} package was imported')\n")
    return tmp_path


def check(report: dict) -> None:
    assert report["rendered"], report
    assert report["shape"] == [2, 2] and report["tiles_differ"], report
    assert report["shadowed"] == [], report
    assert Path(report["module"]).parent.name == "dali_gallery"


def parse(output: str) -> dict:
    line = next(ln for ln in output.splitlines() if ln.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


def test_a_script_run_from_a_repository_with_its_own_packages(user_repo):
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=user_repo, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    report = parse(done.stdout)
    assert report["first_on_path"] == ""  # the user's folder (cwd) is searched first
    check(report)


def test_a_notebook_kernel_started_in_that_repository(user_repo):
    nb = new_notebook(cells=[new_code_cell("import sys, os; print(os.getcwd())"),
                             new_code_cell(PROBE)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(user_repo)}}).execute()
    outputs = ["".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells]
    assert Path(outputs[0].strip()).resolve() == user_repo.resolve()
    check(parse(outputs[1]))
    nbformat.validate(nb)
