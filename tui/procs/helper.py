"""The process helper: list, classify and kill GPU processes on the machine it runs on.

This file is self-contained (standard library only). On this machine the console
imports it and calls handle() in-process; on a remote host its source goes once to
a long-lived `python3 -c BOOTSTRAP` (tui/procs/remote.py), which answers one JSON
request per stdin line (serve()); `python3 - REQUEST` (main()) is the fallback for
hosts without such a session. Tests import it as a module to drive the kill state
machine with an injected process table.

Where it lives on (in-process, serve()), the full read of a process (status,
cmdline, cgroup) is cached by identity (pid, start ticks, comm) for CACHE_TTL_S:
a refresh reads only /proc/PID/stat of a process it has seen, in full only new ones.
A kill re-reads its targets in full. Listening sockets come from the kernel's sock_diag
netlink (the listening table only), not /proc/net/tcp, whose read walks every bucket of
the connection table (~1.3 ms for an empty table on a small VM, more on a big host).

Identity of a process is (boot_id, pid, start time in clock ticks); a pid alone
is never trusted. Signals go through a pidfd when the kernel has them (Linux
>= 5.3), so a pid reused after the identity check cannot be hit.
"""

from __future__ import annotations

import fnmatch
import json
import os
import select
import signal
import socket
import struct
import sys
import time

PROC = "/proc"
SERVE_MAX_REQUESTS = 2000  # a long-lived helper's requests before it ends (~6 h at 10 s)
KNOWN_SUBREAPERS = ("systemd", "tini", "docker-init", "dumb-init", "catatonit", "s6-svscan")
KTHREAD_FLAG = 0x00200000  # PF_KTHREAD in /proc/PID/stat field 9
# An engine's API server: while one lives above a process, that tree is a running service.
ENTRY_POINTS = ("*vllm serve*", "*vllm.entrypoints*", "*sglang.launch_server*", "*sglang serve*")
# Classes signalled only after the operator typed the pid: not the service's, or not proven so.
CONFIRM_CLASSES = ("foreign", "suspect")


# ----------------------------------------------------------------- /proc reading


def _read(path, binary=False):
    try:
        with open(path, "rb" if binary else "r") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def boot_id(proc=PROC):
    return (_read(proc + "/sys/kernel/random/boot_id") or "").strip()


def boot_time_s(proc=PROC):
    for line in (_read(proc + "/stat") or "").splitlines():
        if line.startswith("btime "):
            return int(line.split()[1])
    return 0


def parse_stat(text):
    """(comm, state, ppid, session, flags, start_ticks) from /proc/PID/stat.

    comm may hold spaces and parentheses, so it is cut at the last ')'."""
    left, right = text.find("("), text.rfind(")")
    comm = text[left + 1 : right]
    fields = text[right + 2 :].split()
    # fields[0] is field 3 (state); field N is fields[N - 3]
    return comm, fields[0], int(fields[1]), int(fields[3]), int(fields[6]), int(fields[19])


def _status_fields(text):
    fields = {}
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _user_name(uid):
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return str(uid)


# pid -> (start_ticks, comm, read_at_monotonic_s, the fields that stay for a process's
# life); None: no cache (one-shot runs, and every tree but the real /proc, which tests fake).
_FULL_READS = None  # type: dict | None
# A cmdline, cgroup or uid that changes without a new comm is seen at most this late. Longer
# than the recorder's steady listing (30 s), so a steady listing reads no process in full.
CACHE_TTL_S = 120.0
CACHE_MAX_ENTRIES = 65536


def enable_cache():
    """Keep full reads between requests (a long-lived helper or the console itself)."""
    global _FULL_READS
    if _FULL_READS is None:
        _FULL_READS = {}


def forget_gone(live_pids):
    """Drop cached reads of pids no longer in /proc: the cache stays as big as the table."""
    if _FULL_READS:
        for pid in set(_FULL_READS) - set(live_pids):
            _FULL_READS.pop(pid, None)  # a listing and a kill may both be pruning


def read_process(pid, proc=PROC, fresh=False):
    """Everything servedeck needs about one pid, or None when it is gone.

    `fresh`: read in full whatever the cache holds (a kill checks what it signals)."""
    base = f"{proc}/{pid}"
    stat = _read(base + "/stat")
    if not stat:
        return None
    try:
        comm, state, ppid, sid, flags, start_ticks = parse_stat(stat)
    except (ValueError, IndexError):
        return None
    changing = {
        "pid": pid,
        "comm": comm,
        "state": state,
        "ppid": ppid,
        "kthread": bool(flags & KTHREAD_FLAG),
        "start_ticks": start_ticks,
        "sid": sid,
    }
    cache = _FULL_READS if proc == PROC else None
    now = time.monotonic()
    if cache is not None and not fresh:
        kept = cache.get(pid)
        if kept and kept[0] == start_ticks and kept[1] == comm and now - kept[2] < CACHE_TTL_S:
            return {**changing, **kept[3]}
    status = _status_fields(_read(base + "/status"))
    uid_text = (status.get("Uid") or "-1").split()[0]
    uid = int(uid_text) if uid_text.lstrip("-").isdigit() else -1
    raw_cmdline = _read(base + "/cmdline", binary=True) or b""
    cmdline = [part.decode(errors="replace") for part in raw_cmdline.split(b"\0") if part]
    cgroup = ""
    for line in (_read(base + "/cgroup") or "").splitlines():
        # cgroup v2 line "0::/path" wins; v1 keeps the name=systemd hierarchy
        parts = line.split(":", 2)
        if len(parts) == 3 and (parts[0] == "0" or parts[1] == "name=systemd"):
            cgroup = parts[2]
            if parts[0] == "0":
                break
    nspid = [int(value) for value in status.get("NSpid", str(pid)).split() if value.isdigit()]
    lasting = {
        "uid": uid,
        "user": _user_name(uid) if uid >= 0 else "?",
        "cmdline": cmdline,
        "cgroup": cgroup,
        "nspid": nspid,
    }
    if cache is not None:
        if len(cache) >= CACHE_MAX_ENTRIES:
            cache.clear()
        cache[pid] = (start_ticks, comm, now, lasting)
    return {**changing, **lasting}


def all_pids(proc=PROC):
    try:
        pids = sorted(int(name) for name in os.listdir(proc) if name.isdigit())
    except OSError:
        return []
    if proc == PROC:
        forget_gone(pids)
    return pids


def nvidia_device_holders(proc=PROC, prefix="/dev/nvidia"):
    """Pids holding /dev/nvidia* open, and whether every fd table could be read."""
    holders, complete = set(), True
    for pid in all_pids(proc):
        fd_dir = f"{proc}/{pid}/fd"
        try:
            names = os.listdir(fd_dir)
        except PermissionError:
            complete = False
            continue
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(f"{fd_dir}/{name}")
            except OSError:
                continue
            if target.startswith(prefix):
                holders.add(pid)
                break
    return holders, complete


def ancestors(pid, proc=PROC):
    """pid's parent chain up to (and including) PID 1."""
    chain, seen = [], set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        info = read_process(pid, proc)
        if info is None:
            break
        pid = info["ppid"]
        chain.append(pid)
    return chain


def protected_pids(console_pid, proc=PROC):
    """The console's own tree: itself, its ancestors, this helper and its ancestors,
    and every descendant of the console still in the console's session (what the
    console started through a new session, like a simulator, is not protected)."""
    own = os.getpid() if proc == PROC else -1
    protected = {1, own, *ancestors(own, proc)} if own > 0 else {1}
    if console_pid:
        protected |= {console_pid, *ancestors(console_pid, proc)}
        infos = [read_process(pid, proc) for pid in all_pids(proc)]
        children = {}  # type: dict[int, list[dict]]
        for info in infos:
            if info:
                children.setdefault(info["ppid"], []).append(info)
        console = read_process(console_pid, proc)
        session = console["sid"] if console else None
        stack = [console_pid]
        while stack:
            for child in children.get(stack.pop(), []):
                if child["sid"] == session and child["pid"] not in protected:
                    protected.add(child["pid"])
                    stack.append(child["pid"])
    return protected


NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10
_NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
# inet_diag_req_v2: family, protocol, ext, pad, states; then inet_diag_sockid (ports, two
# 16-byte addresses, interface, cookie = INET_DIAG_NOCOOKIE).
_DIAG_REQUEST = struct.Struct("=BBBxI4x32xIII")
_DIAG_MESSAGE_SPORT = 4  # inet_diag_msg: the source port (network order) after 4 bytes
_DIAG_MESSAGE_INODE = 68  # ... and the socket's inode after the uid


def listening_inodes_netlink(port):
    """Socket inodes listening on TCP `port`, asked of sock_diag; OSError where netlink is barred."""
    inodes = set()
    with socket.socket(
        socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG
    ) as diag:
        diag.settimeout(2.0)
        for sequence, family in enumerate((socket.AF_INET, socket.AF_INET6), 1):
            request = _DIAG_REQUEST.pack(
                family, socket.IPPROTO_TCP, 0, 1 << TCP_LISTEN, 0, 0xFFFFFFFF, 0xFFFFFFFF
            )
            header = _NLMSG_HEADER.pack(
                _NLMSG_HEADER.size + len(request),
                SOCK_DIAG_BY_FAMILY,
                NLM_F_REQUEST_DUMP,
                sequence,
                0,
            )
            diag.sendto(header + request, (0, 0))
            done = False
            while not done:
                data = diag.recv(65536)
                if not data:
                    raise OSError("sock_diag closed its answer")
                offset = 0
                while offset + _NLMSG_HEADER.size <= len(data):
                    length, kind, _flags, _seq, _port_id = _NLMSG_HEADER.unpack_from(data, offset)
                    if length < _NLMSG_HEADER.size:
                        raise OSError("sock_diag sent a malformed message")
                    body = offset + _NLMSG_HEADER.size
                    if kind == NLMSG_DONE:
                        done = True
                        break
                    if kind == NLMSG_ERROR:
                        raise OSError("sock_diag refused the dump")
                    if kind == SOCK_DIAG_BY_FAMILY and length >= _NLMSG_HEADER.size + 72:
                        (local_port,) = struct.unpack_from("!H", data, body + _DIAG_MESSAGE_SPORT)
                        if local_port == port:
                            (inode,) = struct.unpack_from("=I", data, body + _DIAG_MESSAGE_INODE)
                            inodes.add(str(inode))
                    offset += (length + 3) & ~3
    return inodes


def listening_inodes(port, proc=PROC):
    """Socket inodes listening on TCP `port` (IPv4 and IPv6) in this network namespace.

    From sock_diag on the real /proc (the listening table only); from /proc/net/tcp where
    netlink is barred (some sandboxes) and for the trees tests build."""
    if proc == PROC:
        try:
            return listening_inodes_netlink(port)
        except OSError:
            pass
    inodes = set()
    for name in ("tcp", "tcp6"):
        for line in (_read(f"{proc}/net/{name}") or "").splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
                continue
            try:
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
            except (IndexError, ValueError):
                continue
            if local_port == port:
                inodes.add(fields[9])
    return inodes


def socket_holders(inodes, proc=PROC):
    """Pids with one of these socket inodes open."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders = set()  # type: set[int]
    if not wanted:
        return holders
    for pid in all_pids(proc):
        try:
            names = os.listdir(f"{proc}/{pid}/fd")
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(f"{proc}/{pid}/fd/{name}") in wanted:
                    holders.add(pid)
                    break
            except OSError:
                continue
    return holders


# ----------------------------------------------------------------- classification


def command_text(info):
    return " ".join(info["cmdline"]) or "[" + info["comm"] + "]"


def matches_patterns(info, patterns):
    texts = (command_text(info), info["comm"])
    return any(fnmatch.fnmatchcase(text, pattern) for text in texts for pattern in patterns)


def in_unit_cgroup(cgroup, unit):
    return bool(unit) and unit in cgroup.split("/")


def is_subreaper(parent, subreaper_pids):
    if parent is None:
        return False
    if parent["pid"] in subreaper_pids:
        return True
    if parent["comm"] == "systemd" and "--user" in parent["cmdline"]:
        return True
    return parent["comm"] in KNOWN_SUBREAPERS[1:]


def descends_from(info, ancestor_pid, proc=PROC, limit=64):
    """Whether ancestor_pid is the process itself or one of its ancestors."""
    if not ancestor_pid or ancestor_pid <= 1:
        return False
    pid = info["pid"]
    for _ in range(limit):
        if pid == ancestor_pid:
            return True
        if pid <= 1:
            return False
        current = read_process(pid, proc)
        if current is None:
            return False
        pid = current["ppid"]
    return False


def orphaned_ancestor(parent, patterns, subreaper_pids=(), proc=PROC, limit=16):
    """The nearest ancestor that is an orphan of the service, reached through parents that
    match the patterns, or None. vLLM's workers are children of VLLM::EngineCore, so when
    the API server dies only the EngineCore is reparented; its workers are leftovers too.
    A live API server (entry point) above means a running service: None."""
    current = parent
    for _ in range(limit):
        if current is None or not matches_patterns(current, patterns):
            return None
        if matches_patterns(current, ENTRY_POINTS):
            return None
        grand = read_process(current["ppid"], proc) if current["ppid"] > 0 else None
        if current["ppid"] == 1 or is_subreaper(grand, subreaper_pids):
            return current
        current = grand
    return None


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _account(name):
    """(uid, home) of a user name or numeric uid on this host, or (None, None)."""
    if name is None:
        return None, None
    try:
        import pwd

        entry = pwd.getpwuid(int(name)) if str(name).isdigit() else pwd.getpwnam(name)
        return entry.pw_uid, entry.pw_dir
    except (KeyError, ImportError, ValueError):
        return (int(name), None) if str(name).isdigit() else (None, None)


def _under(path, root):
    root = (root or "").rstrip("/") or "/"
    if not path:
        return False
    return path == root or path.startswith(root if root == "/" else root + "/")


# Where everyone's programs and libraries live: never a unit's own place, whatever links there.
SYSTEM_ROOTS = ("/", "/usr", "/usr/local", "/bin", "/lib", "/lib64", "/opt")


def _spellings(path):
    """A unit's path as written and as /proc shows it (symlinks resolved): /proc/PID/cwd,
    exe and maps name the resolved one, so /srv/vllm -> /data/vllm must match either."""
    if not path:
        return ()
    real = os.path.realpath(path)
    return (path,) if real in (path, *SYSTEM_ROOTS) else (path, real)


def _maps_under(base, roots):
    """Whether the process maps a file under one of roots: a venv made with symlinks (python
    -m venv's and uv's default) runs the base interpreter (exe /usr/bin/python3.x) and a
    vLLM worker retitles itself (VLLM::Worker), yet it maps the venv's libraries (torch)."""
    try:
        with open(base + "/maps") as handle:
            for line in handle:
                fields = line.split(None, 5)  # address perms offset dev inode [path]
                path = fields[5].strip() if len(fields) == 6 else ""
                if path.startswith("/") and any(_under(path, root) for root in roots):
                    return True
    except (OSError, UnicodeDecodeError):
        return False
    return False


def recorded_ancestor(info, owned, proc=PROC, limit=64):
    """The process or live ancestor whose (pid, start ticks) the service recorded, or None."""
    current = info
    for _ in range(limit):
        if current is None or current["pid"] <= 1:
            return None
        if (current["pid"], current["start_ticks"]) in owned:
            return current
        current = read_process(current["ppid"], proc) if current["ppid"] > 1 else None
    return None


def ownership(info, request, proc=PROC):
    """(proof, None) when info provably belongs to the service, else (None, what is missing).

    Beyond the unit's cgroup and main process (classify() checks those), a process is the
    service's when the service recorded starting it or an ancestor (pid and start ticks:
    the simulator's pids.log), or when it runs as the unit's User= (root if none) from its
    WorkingDirectory= or its ExecStart's virtualenv (its program, or a library it maps
    from there). A name alone proves nothing."""
    owned = {(int(pid), int(ticks)) for pid, ticks in request.get("owned") or ()}
    recorded = recorded_ancestor(info, owned, proc) if owned else None
    if recorded is not None:
        return f"started by the service (recorded pid {recorded['pid']})", None
    unit = request.get("unit")
    missing = [f"not in {unit}'s cgroup" if unit else "no unit", "no record of its start"]
    unit_user = request.get("unit_user")
    if unit_user is None:
        missing.append("the unit's user and directory are unknown")
        return None, "; ".join(missing)
    uid, home = _account(unit_user)
    if uid is None or info["uid"] != uid:
        missing.append(f"run by {info['user']}, not by the unit's user {unit_user}")
        return None, "; ".join(missing)
    unit_dir = request.get("unit_dir") or None
    if unit_dir and unit_dir.startswith("~"):
        unit_dir = (home + unit_dir[1:]) if home else None
    venv = request.get("unit_venv") or None
    base = f"{proc}/{info['pid']}"
    cwd = _readlink(base + "/cwd")
    dirs = [spelling.rstrip("/") or "/" for spelling in _spellings(unit_dir)]
    if cwd is not None and (cwd.rstrip("/") or "/") in dirs:
        return f"run by {unit_user} from the unit's directory {unit_dir}", None
    program = info["cmdline"][0] if info["cmdline"] else ""
    venvs = _spellings(venv)
    exe = _readlink(base + "/exe")
    if venvs and (
        any(_under(exe, root) or _under(program, root) for root in venvs)
        or _maps_under(base, venvs)
    ):
        return f"run by {unit_user} from the unit's environment {venv}", None
    where = " or ".join(part for part in (unit_dir, venv) if part)
    if where:
        missing.append(f"not run from {where} (cwd {cwd or 'unreadable'})")
    else:
        missing.append("the unit names no WorkingDirectory= or virtualenv to check")
    return None, "; ".join(missing)


def classify(
    info,
    parent,
    unit,
    unit_active,
    patterns,
    subreaper_pids=(),
    under_main_pid=False,
    orphan_above=None,
    proof=None,
):
    """(class, reason): service, leftover, suspect, defunct or foreign.

    orphan_above is what orphaned_ancestor() found for the process's parent; proof() is
    ownership() for this process. An orphan matching the patterns is a leftover only with
    a proof; without one it is a suspect, never offered, signalled only once typed."""
    if info["state"] == "Z":
        return "defunct", f"zombie: parent {info['ppid']} must reap it"
    if info["kthread"]:
        return "foreign", "kernel thread"
    if under_main_pid and unit_active is not False:
        return "service", f"in the process tree of {unit or 'the service'}'s main process"
    if in_unit_cgroup(info["cgroup"], unit):
        if unit_active is False:
            return "leftover", f"in {unit}'s cgroup, unit not running"
        state = "running" if unit_active else "state unknown"
        return "service", f"in {unit}'s cgroup, unit {state}"
    if not matches_patterns(info, patterns):
        return "foreign", "not the service's"
    if info["ppid"] == 1 or is_subreaper(parent, subreaper_pids):
        shape = f"orphan (parent {info['ppid']}) matching the service's patterns"
    elif orphan_above is not None:
        shape = (
            f"child of orphan {orphan_above['pid']} ({command_text(orphan_above)}), "
            "both matching the service's patterns"
        )
    else:
        return "foreign", "not the service's"
    proven, missing = proof() if proof is not None else (None, "no proof of ownership given")
    if proven:
        return "leftover", f"{shape}; {proven}"
    return "suspect", f"{shape}, not proven the service's: {missing}"


# ----------------------------------------------------------------- listing


def list_processes(request, proc=PROC):
    """Verify NVML pid hints in /proc, add /dev/nvidia* holders, classify each."""
    hints = request.get("hints", [])
    holders, complete = nvidia_device_holders(proc, request.get("device_prefix", "/dev/nvidia"))
    # The console (NVML keeps /dev/nvidia* open) and this helper are not GPU workloads.
    holders -= {request.get("console_pid"), os.getpid()}
    by_pid = {}
    notes = []

    def entry(pid):
        if pid not in by_pid:
            info = read_process(pid, proc)
            if info is None:
                return None
            by_pid[pid] = {**info, "gpu": [], "pid_source": "direct", "hint_pid": pid}
        return by_pid[pid]

    nspid_index = None  # type: dict[int, list[int]] | None
    for hint in hints:
        pid = hint["pid"]
        info = None
        if holders and pid not in holders:
            # Inside or outside a container NVML may report the other namespace's pid:
            # a device holder whose innermost NSpid is the hint is the real process.
            if nspid_index is None:
                nspid_index = {}
                for holder in holders:
                    held = read_process(holder, proc)
                    if held and len(held["nspid"]) > 1:
                        nspid_index.setdefault(held["nspid"][-1], []).append(holder)
            matches = nspid_index.get(pid, [])
            if len(matches) == 1:
                info = entry(matches[0])
                info["pid_source"] = "nspid"
                info["hint_pid"] = pid
        if info is None:
            info = entry(pid)
            if info is None:
                notes.append(f"GPU pid {pid} not found in /proc here (another pid namespace?)")
                continue
            if holders and complete and pid not in holders and info["pid_source"] == "direct":
                info["pid_source"] = "unverified"
        info["gpu"].append(
            {
                "index": hint.get("gpu_index"),
                "used_memory_bytes": hint.get("used_memory_bytes"),
                "sm_util_percent": hint.get("sm_util_percent"),
            }
        )
    for pid in sorted(holders):
        if pid not in by_pid:
            info = entry(pid)
            if info:
                info["pid_source"] = "device"
    if not complete:
        notes.append("some /proc/PID/fd tables were unreadable: device holders may be missing")
    result = []
    for info in by_pid.values():
        parent = read_process(info["ppid"], proc) if info["ppid"] > 0 else None
        klass, reason = classify_in(info, parent, request, proc)
        if info["pid_source"] == "unverified" and klass != "defunct":
            klass, reason = "foreign", "the GPU's pid does not hold /dev/nvidia* here"
        info.update(
            klass=klass,
            reason=reason,
            parent_command=command_text(parent) if parent else "",
        )
        result.append(info)
    if request.get("wide"):
        result.extend(wider_leftovers(request, set(by_pid) | {os.getpid()}, proc))
    result.sort(key=lambda item: item["pid"])
    return {"processes": result, "notes": notes}


def classify_in(info, parent, request, proc=PROC):
    """classify() with what a listing request says of the service (one place for both the
    GPU holders and the wider scan)."""
    patterns = request.get("patterns", [])
    subreapers = set(request.get("subreaper_pids", []))
    return classify(
        info,
        parent,
        request.get("unit"),
        request.get("unit_active"),
        patterns,
        subreapers,
        descends_from(info, request.get("main_pid"), proc),
        orphaned_ancestor(parent, patterns, subreapers, proc),
        proof=lambda: ownership(info, request, proc),
    )


def wider_leftovers(request, listed, proc=PROC):
    """Processes of the service that hold no GPU (yet), and what stands in its way: orphans
    matching the service's patterns (an engine that has not touched the GPU, its
    resource_tracker), leftovers if proven the service's and suspects if not, and whoever
    holds the service's port while the service is not running, named with its own class
    (a port proves nothing: an unrelated server on it is in the way, not a leftover)."""
    unit = request.get("unit")
    unit_active = request.get("unit_active")
    patterns = request.get("patterns", [])
    port = request.get("port")
    stopped = unit_active is False or bool(request.get("service_stopped"))
    console = request.get("console_pid")
    scope = request.get("scope_pids")
    scope = None if scope is None else set(scope)
    port_holders = socket_holders(listening_inodes(port, proc), proc) if port else set()
    found = []
    for pid in all_pids(proc):
        if pid in listed or pid == console or (scope is not None and pid not in scope):
            continue
        info = read_process(pid, proc)
        if info is None or info["kthread"]:
            continue
        holds_port = pid in port_holders
        if not (
            holds_port or matches_patterns(info, patterns) or in_unit_cgroup(info["cgroup"], unit)
        ):
            continue
        parent = read_process(info["ppid"], proc) if info["ppid"] > 0 else None
        klass, reason = classify_in(info, parent, request, proc)
        if holds_port and stopped and klass in ("foreign", "suspect"):
            service = unit or "the service"
            reason = f"holds port {port} while {service} is not running; {reason}"
        elif holds_port and klass == "leftover":
            reason += f"; holds port {port}"
        elif klass not in ("leftover", "suspect"):
            continue
        source = "port" if holds_port else "pattern"
        found.append(
            {
                **info,
                "gpu": [],
                "pid_source": source,
                "hint_pid": pid,
                "klass": klass,
                "reason": reason + " (no GPU memory)" if not holds_port else reason,
                "parent_command": command_text(parent) if parent else "",
            }
        )
    return found


# ----------------------------------------------------------------- killing


class LinuxProcessTable:
    """The real process table: /proc for identity, pidfds (or kill()) for signals."""

    def __init__(self, proc=PROC):
        self.proc = proc
        self.pidfd_supported = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")

    def read(self, pid):
        return read_process(pid, self.proc, fresh=True)

    def open_pidfd(self, pid):
        """A pidfd, or None without kernel support; ProcessLookupError when gone."""
        if not self.pidfd_supported:
            return None
        try:
            return os.pidfd_open(pid)
        except OSError as error:
            if error.errno in (38, 22):  # ENOSYS, EINVAL: kernel < 5.3
                self.pidfd_supported = False
                return None
            if error.errno == 3:
                raise ProcessLookupError(pid) from None
            raise

    def send_pidfd(self, handle, sig):
        signal.pidfd_send_signal(handle, sig)

    def send_pid(self, pid, sig):
        os.kill(pid, sig)

    def has_exited(self, handle, pid, start_ticks):
        if handle is not None:
            ready, _, _ = select.select([handle], [], [], 0)
            return bool(ready)
        info = self.read(pid)
        return info is None or info["start_ticks"] != start_ticks or info["state"] in "ZX"

    def close(self, handle):
        if handle is not None:
            os.close(handle)

    def monotonic(self):
        return time.monotonic()

    def sleep(self, seconds):
        time.sleep(seconds)


def refusal(target, info, protected, euid, confirmed_foreign):
    """Why this target must not be signalled, or None."""
    pid = target["pid"]
    if pid <= 1:
        return "refused: PID 1 is never signalled"
    if pid in protected:
        return "refused: part of servedeck's own process tree"
    if info["kthread"] or (not info["cmdline"] and info["ppid"] == 2):
        return "refused: kernel thread"
    if info["state"] == "Z":
        return f"refused: defunct; its parent {info['ppid']} must reap it"
    if euid != 0 and info["uid"] != euid:
        return f"refused: owned by {info['user']} (only root may signal other users)"
    klass = target.get("klass")
    if klass in CONFIRM_CLASSES and pid not in confirmed_foreign:
        return f"refused: {klass} process without a typed confirmation"
    return None


def _same_identity(info, target):
    return info is not None and info["start_ticks"] == target["start_ticks"]


def kill_targets(request, table, protected, euid, current_boot_id):
    """SIGTERM every target through a pidfd, wait, SIGKILL the survivors; one result each."""
    timeout_s = float(request.get("timeout_s", 15.0))
    kill_wait_s = float(request.get("kill_wait_s", 5.0))
    poll_s = float(request.get("poll_s", 0.05))
    confirmed = set(request.get("confirm_foreign", []))
    results = []  # type: list[dict]
    live = []  # type: list[tuple[dict, dict, object]]
    for target in request["targets"]:
        result = {"pid": target["pid"], "start_ticks": target["start_ticks"], "signals": []}
        results.append(result)
        if target.get("boot_id") and target["boot_id"] != current_boot_id:
            result.update(outcome="gone", detail="the host rebooted since the listing")
            continue
        info = table.read(target["pid"])
        if not _same_identity(info, target):
            result.update(outcome="gone", detail="no longer the process that was listed")
            continue
        reason = refusal(target, info, protected, euid, confirmed)
        if reason:
            result.update(outcome="refused", detail=reason)
            continue
        try:
            handle = table.open_pidfd(target["pid"])
        except ProcessLookupError:
            result.update(outcome="gone", detail="exited before it was signalled")
            continue
        # With a pidfd open, a matching start time proves the pidfd is the listed process.
        if not _same_identity(table.read(target["pid"]), target):
            table.close(handle)
            result.update(outcome="gone", detail="pid reused before the signal; not signalled")
            continue
        result["method"] = "pidfd" if handle is not None else "kill-after-recheck"
        live.append((target, result, handle))

    def send(target, result, handle, sig):
        try:
            if handle is not None:
                table.send_pidfd(handle, sig)
            else:
                if not _same_identity(table.read(target["pid"]), target):
                    return False
                table.send_pid(target["pid"], sig)
        except ProcessLookupError:
            return False
        result["signals"].append(signal.Signals(sig).name)
        return True

    def wait_all(pending, seconds):
        deadline = table.monotonic() + seconds
        while True:
            still = [
                item
                for item in pending
                if not table.has_exited(item[2], item[0]["pid"], item[0]["start_ticks"])
            ]
            if not still or table.monotonic() >= deadline:
                return still
            table.sleep(poll_s)

    started = table.monotonic()
    pending = [item for item in live if send(*item, signal.SIGTERM)]
    for _target, result, _handle in live:
        if not result["signals"]:
            result.update(outcome="gone", detail="exited before SIGTERM")
    survivors = wait_all(pending, timeout_s)
    surviving = {id(item) for item in survivors}
    for item in pending:
        if id(item) not in surviving:
            item[1].update(outcome="terminated", detail="exited after SIGTERM")
    killed = [item for item in survivors if send(item[0], item[1], item[2], signal.SIGKILL)]
    for _target, result, _handle in survivors:
        if "SIGKILL" not in result["signals"]:
            result.update(outcome="terminated", detail="exited just before SIGKILL")
    stuck = {id(item) for item in wait_all(killed, kill_wait_s)}
    for item in killed:
        target, result, _handle = item
        if id(item) in stuck:
            info = table.read(target["pid"])
            state = info["state"] if info else "?"
            detail = f"still alive after SIGKILL (state {state})"
            if state == "D":
                detail += ": stuck in uninterruptible sleep (D), usually a driver call"
            result.update(outcome="stuck", detail=detail)
        else:
            result.update(outcome="killed", detail=f"ignored SIGTERM for {timeout_s:g} s")
    elapsed = table.monotonic() - started
    for _target, result, handle in live:
        table.close(handle)
        result["elapsed_s"] = round(elapsed, 3)
        if result.get("method") == "kill-after-recheck":
            result["detail"] += " (no pidfd: kill() right after an identity re-check)"
    return results


# ----------------------------------------------------------------- engine ranks


def engine_ranks(root_pid, proc=PROC):
    """The processes under root_pid (the service's main pid): state, CPU ticks, wchan.

    Read-only, for the progress verdict: which rank is stopped, a zombie or in the kernel."""
    children = {}  # type: dict
    for pid in all_pids(proc):
        stat = _read(f"{proc}/{pid}/stat")
        if stat:
            try:
                children.setdefault(parse_stat(stat)[2], []).append(pid)
            except (ValueError, IndexError):
                continue
    root_alive = _read(f"{proc}/{root_pid}/stat") is not None
    found = []  # type: list
    todo = list(children.get(root_pid, []))
    while todo and len(found) < 512:
        pid = todo.pop(0)
        todo.extend(children.get(pid, []))
        stat = _read(f"{proc}/{pid}/stat")
        if not stat:
            continue
        try:
            comm, state = parse_stat(stat)[:2]
            fields = stat[stat.rfind(")") + 2 :].split()
            cpu_ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14, 15
        except (ValueError, IndexError):
            continue
        title = (_read(f"{proc}/{pid}/cmdline", binary=True) or b"").split(b"\0")[0]
        name = title.decode(errors="replace").strip() or comm
        wchan = (_read(f"{proc}/{pid}/wchan") or "").strip() or None
        found.append(
            {"pid": pid, "name": name, "state": state, "cpu_ticks": cpu_ticks, "wchan": wchan}
        )
    return {"root_alive": root_alive, "ranks": found}


# ----------------------------------------------------------------- entry point


def handle(request, proc=PROC):
    answer = {
        "ok": True,
        "boot_id": boot_id(proc),
        "boot_time_s": boot_time_s(proc),
        "clock_ticks": os.sysconf("SC_CLK_TCK"),
        "euid": os.geteuid(),
        "helper_pid": os.getpid(),
        "pidfd": hasattr(os, "pidfd_open"),
    }
    op = request.get("op")
    if op == "list":
        answer.update(list_processes(request, proc))
    elif op == "kill":
        protected = protected_pids(request.get("console_pid"), proc)
        table = LinuxProcessTable(proc)
        answer["results"] = kill_targets(request, table, protected, os.geteuid(), answer["boot_id"])
        answer["pidfd"] = table.pidfd_supported
    elif op == "ranks":
        answer.update(engine_ranks(int(request.get("root_pid") or 0), proc))
    else:
        answer = {"ok": False, "error": f"unknown op {op!r}"}
    return answer


def answer_to(request):
    """handle()'s answer, or one JSON error: never an exception."""
    try:
        return handle(request)
    except Exception as error:  # one JSON answer, always
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def serve(stdin, stdout, max_requests=SERVE_MAX_REQUESTS):
    """Answer one JSON request per stdin line, one JSON line each, until end of input.

    Ends by itself after max_requests: the console starts a fresh one, so a helper
    that lives for weeks holds no more than one refresh's worth of memory."""
    enable_cache()
    for served, line in enumerate(iter(stdin.readline, "")):
        try:
            request = json.loads(line)
        except ValueError as error:
            answer = {"ok": False, "error": f"bad request line: {error}"}
        else:
            answer = answer_to(request)
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()
        if served + 1 >= max_requests:
            return


def main(argv):
    try:
        request = json.loads(argv[0]) if argv else json.load(sys.stdin)
    except ValueError as error:
        answer = {"ok": False, "error": f"bad request: {error}"}
    else:
        answer = answer_to(request)
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0 if answer.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
