"""The load I/O helper: page-cache residency of checkpoint shards and read counters.

Self-contained (standard library only), like the process helper: its source is
sent on stdin to `python3 -` on the host with one JSON request as the argument,
and it prints one JSON answer. Two ops:
  - "residency": for each file (or every *.safetensors under a folder) its size
    and the bytes in the page cache, by mmap + mincore(2), never reading it;
  - "sample": the read_bytes and CPU ticks of a process tree (/proc/PID/io, stat)
    and the sectors read by the block device holding a path (/proc/diskstats).
Tests import it as a module; "drop" (posix_fadvise DONTNEED) serves them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import mmap
import os
import sys
import time

PROC = "/proc"
_LOW_BIT = bytes(value & 1 for value in range(256))


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def resident_bytes(path, libc=None):
    """(size, bytes resident in the page cache) of one file, by mincore over an mmap.

    The file is mapped with libc's mmap (PROT_READ, MAP_SHARED) and never read, so
    asking does not pull it into the cache."""
    size = os.path.getsize(path)
    if size == 0:
        return 0, 0
    libc = libc or _libc()
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = mmap.PAGESIZE
    pages = (size + page - 1) // page
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), path)
        try:
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(address, size, vec) != 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), path)
            # Only bit 0 is defined; count it in C, not per page in Python (550 GB is
            # 134 million pages).
            resident = bytes(vec).translate(_LOW_BIT).count(1)
        finally:
            libc.munmap(address, size)
    finally:
        os.close(fd)
    return size, min(size, resident * page)


def _may_ask(path):
    """Whether mincore tells the truth about path: since Linux 5.2 it reports every page
    of a file the caller neither owns nor may write as resident (a side channel closed)."""
    try:
        return os.geteuid() == 0 or os.stat(path).st_uid == os.geteuid() or os.access(path, os.W_OK)
    except OSError:
        return True  # resident_bytes says what is wrong with it


def shard_files(paths):
    """The files named, and every *.safetensors directly in a folder named, sorted."""
    found = []  # type: list[str]
    for path in paths:
        if os.path.isdir(path):
            found.extend(
                os.path.join(path, name)
                for name in sorted(os.listdir(path))
                if name.endswith(".safetensors")
            )
        else:
            found.append(path)
    return found


def residency(request):
    files = []
    libc = _libc()
    for path in shard_files(request.get("paths", [])):
        if not _may_ask(path):
            files.append(
                {"path": path, "error": "not this user's to write: mincore says all cached"}
            )
            continue
        try:
            size, resident = resident_bytes(path, libc)
            files.append({"path": path, "size_bytes": size, "resident_bytes": resident})
        except OSError as error:
            files.append({"path": path, "error": f"{type(error).__name__}: {error.strerror}"})
    return {"files": files}


def drop(request):
    """posix_fadvise(DONTNEED) on each file: its clean pages leave the page cache."""
    for path in shard_files(request.get("paths", [])):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return residency(request)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _stat_fields(pid, proc=PROC):
    text = _read(f"{proc}/{pid}/stat")
    if not text:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields  # fields[0] is field 3 (state)


def process_tree(root, proc=PROC):
    """root and all its descendants (by ppid), as pids."""
    children = {}  # type: dict[int, list[int]]
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name), proc)
        if fields:
            children.setdefault(int(fields[1]), []).append(int(name))
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, []))
    return tree


def tree_counters(root, proc=PROC):
    """(read_bytes, cpu ticks, pids counted, pids whose io was unreadable) of a tree."""
    read_bytes, ticks, counted, unreadable = 0, 0, 0, 0
    for pid in process_tree(root, proc):
        fields = _stat_fields(pid, proc)
        if not fields:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime + stime
        io = _read(f"{proc}/{pid}/io")
        if io is None:
            unreadable += 1
            continue
        for line in io.splitlines():
            if line.startswith("read_bytes:"):
                read_bytes += int(line.split()[1])
        counted += 1
    return read_bytes, ticks, counted, unreadable


def device_of(path, proc=PROC, sys_root="/sys"):
    """The block device name (as in /proc/diskstats) holding path, or None (tmpfs, nfs...)."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    major, minor = os.major(dev), os.minor(dev)
    link = f"{sys_root}/dev/block/{major}:{minor}"
    try:
        return os.path.basename(os.path.realpath(link))
    except OSError:
        return None


def sectors_read(device, proc=PROC):
    for line in (_read(f"{proc}/diskstats") or "").splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[2] == device:
            return int(fields[5])
    return None


def sample(request, proc=PROC):
    answer = {"at_s": time.time(), "clock_ticks": os.sysconf("SC_CLK_TCK")}  # type: dict[str, object]
    root = request.get("pid")
    if root:
        read_bytes, ticks, counted, unreadable = tree_counters(int(root), proc)
        answer.update(
            tree_read_bytes=read_bytes,
            tree_cpu_ticks=ticks,
            tree_pids=counted,
            tree_unreadable=unreadable,
            tree_alive=_stat_fields(int(root), proc) is not None,
        )
    path = request.get("path")
    if path:
        device = device_of(path, proc)
        sectors = sectors_read(device, proc) if device else None
        answer.update(
            device=device,
            device_read_bytes=sectors * 512 if sectors is not None else None,
        )
    return answer


def handle(request):
    op = request.get("op")
    if op == "residency":
        return {"ok": True, **residency(request)}
    if op == "sample":
        return {"ok": True, **sample(request)}
    if op == "drop":
        return {"ok": True, **drop(request)}
    return {"ok": False, "error": f"unknown op {op!r}"}


def main(argv):
    try:
        request = json.loads(argv[0]) if argv else json.load(sys.stdin)
        answer = handle(request)
    except Exception as error:  # one JSON answer, always
        answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0 if answer.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
