"""What a steady listing reads: listeners from sock_diag, no process in full twice.

The recorder lists every 30 s while nothing changes, and each listing walked the whole
connection table (/proc/net/tcp: ~1.3 ms for an empty table on a small VM, ~12 ms on an
H200 box) and, with a 30 s cache, read every process of the host in full again. These
tests count the files a listing opens (real /proc, real listening sockets), not time.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from tui.app.console_record import RECORD_PROCS_STEADY_S
from tui.procs import helper


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server
    server.close()


@pytest.fixture
def listener6() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    server.bind(("::1", 0))
    server.listen()
    yield server
    server.close()


def inode_of(sock: socket.socket) -> str:
    return os.readlink(f"/proc/self/fd/{sock.fileno()}").removeprefix("socket:[").rstrip("]")


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the helper reads, in order."""
    paths: list[str] = []
    real_read = helper._read

    def counted(path: str, binary: bool = False) -> object:
        paths.append(path)
        return real_read(path, binary)

    monkeypatch.setattr(helper, "_read", counted)
    return paths


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(helper, "_FULL_READS", {})


def test_sock_diag_finds_the_listener_the_kernel_table_shows(
    listener: socket.socket, listener6: socket.socket
) -> None:
    for sock in (listener, listener6):
        port = sock.getsockname()[1]
        from_netlink = helper.listening_inodes_netlink(port)
        from_table = helper.listening_inodes(port, "/proc/")  # another path: the file read
        assert from_netlink == from_table == {inode_of(sock)}


def test_a_connected_socket_on_the_port_is_not_a_listener(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    try:
        assert helper.listening_inodes_netlink(port) == {inode_of(listener)}
        assert helper.listening_inodes_netlink(client.getsockname()[1]) == set()
    finally:
        client.close()
        accepted.close()


def test_a_listing_reads_no_connection_table(
    listener: socket.socket, opened: list[str], cache: None
) -> None:
    port = listener.getsockname()[1]
    assert helper.listening_inodes(port) == {inode_of(listener)}
    assert not [path for path in opened if path.startswith("/proc/net/")]


def test_where_netlink_is_barred_the_table_answers(
    listener: socket.socket, opened: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_socket = socket.socket

    def barred(family: int = -1, *args: object, **kwargs: object) -> socket.socket:
        if family == socket.AF_NETLINK:
            raise PermissionError(1, "Operation not permitted")
        return real_socket(family, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(helper.socket, "socket", barred)
    port = listener.getsockname()[1]
    assert helper.listening_inodes(port) == {inode_of(listener)}
    assert "/proc/net/tcp" in opened


def full_reads(paths: list[str]) -> list[str]:
    return [p for p in paths if p.rsplit("/", 1)[-1] in ("status", "cmdline", "cgroup")]


def full_read_pids(paths: list[str]) -> set[str]:
    return {p.split("/")[2] for p in full_reads(paths)}


def test_a_steady_listing_reads_no_process_in_full(
    listener: socket.socket, opened: list[str], cache: None
) -> None:
    request = {"wide": True, "port": listener.getsockname()[1], "console_pid": os.getpid()}
    helper.list_processes(request)
    first = full_read_pids(opened)
    assert first  # the first listing reads every process once
    identities = {pid: kept[:2] for pid, kept in helper._FULL_READS.items()}  # type: ignore[union-attr]
    opened.clear()
    helper.list_processes(request)
    # Read in full again: only a process whose identity changed (a kworker renames itself
    # with its work queue: its comm is part of the key); other tests' new ones are new pids.
    again = {int(pid) for pid in first & full_read_pids(opened)}
    kept_now = helper._FULL_READS or {}
    assert not [pid for pid in again if kept_now.get(pid, ())[:2] == identities.get(pid)]
    # ... and the recorder's next steady listing finds the reads still kept
    assert helper.CACHE_TTL_S > RECORD_PROCS_STEADY_S


def test_a_kill_reads_its_target_in_full(opened: list[str], cache: None) -> None:
    table = helper.LinuxProcessTable()
    helper.read_process(os.getpid())
    opened.clear()
    helper.read_process(os.getpid())
    assert not full_reads(opened)  # a listing uses what it read
    info = table.read(os.getpid())
    assert info is not None and f"/proc/{os.getpid()}/cmdline" in opened
