"""Finding, listing and creating profiles: explicit path, ./profiles/, then the user config dir."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tui.core import paths
from tui.core.config import Profile, demo_profile, load_profile_file, profile_problems
from tui.core.errors import ProfileError, UsageError

_STARTER = """\
# servedeck profile "{name}".
# Every key is optional unless marked; unknown keys are reported as errors.
# Check it with:  servedeck profiles check {path}

description = "vLLM on my GPU box"
# read_only = true      # disable start/stop/kill from this profile

[host]
kind = "local"          # "local", "ssh" or "demo"
# hostname = "gpu-box.example"   # required for kind = "ssh"
# port = 22
# user = "root"
# identity_file = "~/.ssh/id_ed25519"
# known_hosts = "~/.ssh/known_hosts"
# A jump chain, outermost first (e.g. a Proxmox host in front of an LXC container):
# [[host.jump]]
# hostname = "pve.example"
# user = "root"

[service]
engine = "vllm"         # "vllm" or "sglang"
unit = "vllm.service"   # the systemd unit; or log_file = "/var/log/vllm.log"
base_url = "http://127.0.0.1:8000"
# api_key_env = "VLLM_API_KEY"   # the NAME of the env var holding the key, never the key
# python = "/opt/vllm/venv/bin/python"  # the serving venv's interpreter (versions for the summary)
# process_patterns = ["VLLM::*", "*vllm serve*"]
# use_sudo = false      # run systemctl through `sudo -n`

[model]
name = "my-org/my-model"
# path = "/models/my-model"
tp = 1
# ep = false
# max_model_len = 32768

[gpu]
refresh_s = 1.0

[benchmark]
default_preset = "quick"
# [benchmark.presets.sweep]
# concurrency = [1, 8, 32, 64]
# input_tokens = 1024
# output_tokens = 256

[handoff]
goal = ""
instructions = ""
lessons = []
next_steps = []
"""


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    name: str
    path: Path
    where: str  # "project" | "user"


def search_dirs() -> list[tuple[str, Path]]:
    """Where profiles are looked up by name, in order."""
    return [("project", Path.cwd() / "profiles"), ("user", paths.user_profiles_dir())]


def looks_like_path(name_or_path: str) -> bool:
    """A path (a separator, a .toml ending or a leading dot) rather than a bare name."""
    return os.sep in name_or_path or name_or_path.endswith(".toml") or name_or_path.startswith(".")


def find_toml(name_or_path: str, kind: str, folders: list[tuple[str, Path]]) -> Path:
    """An explicit path, else NAME.toml in the first folder that has it (profiles and groups).

    `kind` names the file in the one-line error ("profile", "group").
    """
    if looks_like_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.exists():
            raise ProfileError(f"{path}: no such {kind} file")
        return path
    tried = []
    for _, folder in folders:
        candidate = folder / f"{name_or_path}.toml"
        if candidate.is_file():
            return candidate
        tried.append(str(candidate))
    raise ProfileError(f"{kind} {name_or_path!r} not found (looked in {', '.join(tried)})")


def resolve_profile_path(name_or_path: str) -> Path:
    """An explicit path, then ./profiles/NAME.toml, then the user config dir."""
    return find_toml(name_or_path, "profile", search_dirs())


def load_profile(name_or_path: str | None, demo: bool = False, read_only: bool = False) -> Profile:
    """The profile the command line asked for; `--demo` without a profile is the simulator."""
    if name_or_path is None:
        if demo:
            return demo_profile(read_only=read_only)
        return _with_read_only(Profile(name="local"), read_only)
    profile = load_profile_file(resolve_profile_path(name_or_path))
    if demo and not profile.is_demo:
        raise UsageError(f"--demo given with profile {profile.name!r}, which is not a demo profile")
    return _with_read_only(profile, read_only)


def _with_read_only(profile: Profile, read_only: bool) -> Profile:
    if not read_only or profile.read_only:
        return profile
    from dataclasses import replace

    return replace(profile, read_only=True)


def list_profiles() -> list[ProfileEntry]:
    """Every profile file found, project ones first; a name found twice shows both."""
    entries: list[ProfileEntry] = []
    for where, folder in search_dirs():
        if folder.is_dir():
            entries.extend(
                ProfileEntry(path.stem, path, where) for path in sorted(folder.glob("*.toml"))
            )
    return entries


def check_profiles(targets: list[str]) -> list[str]:
    """Every problem in every target (paths or names), one line each; empty when all valid."""
    problems = []
    for target in targets:
        try:
            path = resolve_profile_path(target)
        except ProfileError as error:
            problems.append(str(error))
            continue
        problems.extend(profile_problems(path)[1])
    return problems


def init_profile(name: str, folder: Path | None = None) -> Path:
    """Write a commented starter profile; never overwrite an existing file."""
    if not name or looks_like_path(name) or not name.replace("-", "").replace("_", "").isalnum():
        raise UsageError(f"profile name {name!r}: use letters, digits, '-' and '_' only")
    target_dir = folder or paths.user_profiles_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{name}.toml"
    text = _STARTER.format(name=name, path=path)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise UsageError(f"{path}: already exists; not overwriting it") from None
    return path
