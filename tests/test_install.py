"""A regular (non-editable) install works: build the wheel, install it into a fresh virtual
environment, and use it from a folder that is not the repository.

The wheel is built from a copy of exactly what pyproject.toml packages (so the build leaves
nothing in the working tree), with this interpreter's setuptools (``--no-build-isolation``; the
``test`` extra brings it) and no index: no network. The virtual environment reuses this
interpreter's packages (``--system-site-packages``: DALI, Voilà, ...) and gets only the wheel
(``--no-deps``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.browser.conftest import (
    LOOPBACK,
    Server,
    descendants,
    find_free_port,
    jupyter_env,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``cmd``; a non-zero exit fails the test with its output."""
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def package_sources(dest: Path) -> Path:
    """A copy of what the wheel is built from: pyproject.toml, the readme and the folders
    mapped in [tool.setuptools.package-dir]."""
    dest.mkdir()
    for name in ("pyproject.toml", PYPROJECT["project"]["readme"]):
        shutil.copy2(REPO / name, dest / name)
    folders = {d.split("/")[0] for d in PYPROJECT["tool"]["setuptools"]["package-dir"].values()}
    for folder in folders:
        shutil.copytree(REPO / folder, dest / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    base = tmp_path_factory.mktemp("install")
    src = package_sources(base / "src")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", src, "-w", base / "wheels"], cwd=base)
    (wheel,) = (base / "wheels").glob("dali_gallery-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", venv], cwd=base)
    python = venv / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    cwd=base).stdout.strip())
    # When this interpreter is itself a virtual environment (scripts/test.sh makes a .venv on
    # an "externally managed" Python), --system-site-packages reaches the base Python, not the
    # packages installed here: add them, after the venv's own site-packages.
    outer = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    (site / "_dali_gallery_test_reuse.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in outer))
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel], cwd=base)
    return SimpleNamespace(base=base, wheel=wheel, venv=venv, python=python, site=site)


def test_the_wheel_is_one_namespace_with_the_notebook_and_the_samples(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"dali_gallery"}, top  # no top-level pipelines/, widgets/, gallery/
    assert "dali_gallery/gallery/voila/gallery.ipynb" in names
    assert [n for n in names if n.startswith("dali_gallery/gallery/voila/")] == [
        "dali_gallery/gallery/voila/gallery.ipynb"]  # alone: Voilà serves its folder
    template = "dali_gallery/gallery/page_template/voila/templates/dali-gallery/"
    assert {template + "conf.json", template + "index.html.j2"} <= set(names)  # the page
    samples = [n for n in names if n.startswith("dali_gallery/gallery/samples/")]
    assert sum(n.endswith(".jpg") for n in samples) >= 4
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/")]
    # every module of the repository's package folders is in the wheel (the package list in
    # pyproject.toml is explicit: a new subpackage left out of it would be missing)
    expected = {
        f"{package.replace('.', '/')}/{path.relative_to(REPO / folder).as_posix()}"
        for package, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items()
        for path in (REPO / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert not expected - set(names), sorted(expected - set(names))


def test_the_installed_copy_is_used_outside_the_repository(installed, tmp_path):
    """From a temporary folder that also has a user's own pipelines/ and widgets/ packages
    (first on sys.path, failing if imported), everything comes from the virtual environment."""
    for shadow in ("pipelines", "widgets", "gallery"):
        (tmp_path / shadow).mkdir()
        (tmp_path / shadow / "__init__.py").write_text(
            f"raise ImportError('the user\\'s own {shadow} package was imported')\n")
    probe = (
        "import json, sys\n"
        "import dali_gallery\n"
        "from dali_gallery.gallery.serve import DEFAULT_IMAGES_DIR, GALLERY_NOTEBOOK\n"
        "from dali_gallery.widgets.images_panel import SAMPLES_DIR\n"
        "print(json.dumps({'package': dali_gallery.__file__, 'notebook': str(GALLERY_NOTEBOOK),\n"
        "    'notebook_ok': GALLERY_NOTEBOOK.is_file(), 'samples': str(DEFAULT_IMAGES_DIR),\n"
        "    'panel_samples': str(SAMPLES_DIR.resolve()),\n"
        "    'jpgs': sorted(p.name for p in DEFAULT_IMAGES_DIR.glob('*.jpg')),\n"
        "    'shadowed': [m for m in ('pipelines', 'widgets', 'gallery') if m in sys.modules]}))\n"
    )
    out = json.loads(run([installed.python, "-c", probe], cwd=tmp_path).stdout)
    package_dir = (installed.site / "dali_gallery").resolve()
    for key in ("package", "notebook", "samples", "panel_samples"):
        path = Path(out[key]).resolve()
        assert package_dir in path.parents, (key, path)
        assert REPO not in path.parents, (key, path)
    assert out["notebook_ok"] and len(out["jpgs"]) >= 4
    assert Path(out["samples"]).resolve() == Path(out["panel_samples"])
    assert out["shadowed"] == []


def test_dali_gallery_ops_runs(installed, tmp_path):
    out = run([installed.venv / "bin" / "dali-gallery", "ops"], cwd=tmp_path).stdout
    assert "rotate" in out and "CPU" in out


def test_dali_gallery_serve_serves_the_page(installed, tmp_path):
    """The console script of the venv serves the notebook shipped in the wheel (before: "notebook
    not found" once installed without -e); its kernel runs the venv's Python; SIGTERM stops it
    and its kernel."""
    port = find_free_port()
    env = jupyter_env(tmp_path / "jupyter")
    # Voilà's templates and the widget manager are data files of the packages this venv reuses
    # from the base interpreter (a venv of its own would have them under its own prefix).
    env["JUPYTER_PATH"] = str(Path(sysconfig.get_path("data")) / "share" / "jupyter")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(installed.venv / "bin" / "dali-gallery"), "serve", "--port", str(port),
             "--cull-idle", "60"],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
    server = Server("serve", proc, port, LOOPBACK, log, env, [])
    try:
        deadline = time.monotonic() + 120
        while f"open http://{LOOPBACK}:{port}/" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.3)
        with urllib.request.urlopen(server.url, timeout=300) as resp:
            status, body = resp.status, resp.read().decode("utf-8", "replace")
        assert status == 200 and WIDGET_VIEW in body, log.read_text(errors="replace")
        kids = descendants(proc.pid)
        kernels = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in kids]
        kernels = [args for args in kernels if b"ipykernel_launcher" in args]
        # the page's kernel, plus any pre-started ones waiting for the next page
        assert kernels and all(k[0] == os.fsencode(installed.python) for k in kernels), kernels
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text(errors="replace")
    finally:
        server.stop()
    text = log.read_text(errors="replace")
    assert "notebook not found" not in text
    assert f"images from {(installed.site / 'dali_gallery' / 'gallery' / 'samples').resolve()}" \
        in text
