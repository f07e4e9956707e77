"""A simulated systemd service unit that runs the simulated vLLM server.

States follow systemd: inactive -> activating (process started, port not yet
listening) -> active (port accepts connections) -> deactivating -> inactive;
a server that exits by itself ends in failed with Result=exit-code. With
`restart="on-failure"` it is started again after `restart_s` and NRestarts
counts up, as systemd does. `show()` gives `systemctl show`'s properties.

Every method returns at once (a watcher thread does the waiting) except
`wait_for_state`, which blocks; call it from a worker thread or a test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

STATES = ("inactive", "activating", "active", "deactivating", "failed")
SUB_STATES = {
    "inactive": "dead",
    "activating": "start",
    "active": "running",
    "deactivating": "stop-sigterm",
    "failed": "failed",
}


def port_is_listening(port: int, timeout_s: float = 0.2) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _systemd_timestamp(epoch_s: float | None) -> str:
    if epoch_s is None:
        return ""
    return datetime.fromtimestamp(epoch_s, UTC).astimezone().strftime("%a %Y-%m-%d %H:%M:%S %Z")


class SimUnit:
    """One service: `argv_factory()` gives the server command line for each start."""

    def __init__(
        self,
        name: str,
        state_dir: Path,
        port: int,
        argv_factory: Callable[[], Sequence[str]],
        restart: str = "no",
        restart_s: float = 1.0,
        stop_timeout_s: float = 10.0,
    ) -> None:
        self.name = name
        self.state_dir = state_dir
        self.port = port
        self._argv_factory = argv_factory
        self.restart_policy = restart
        self.restart_s = restart_s
        self.stop_timeout_s = stop_timeout_s
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._state = "inactive"
        self._result = "success"
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self.n_restarts = 0
        self.exec_main_status = 0
        self.main_start_s: float | None = None
        self.state_change_s: float | None = None
        self.stdout_path = state_dir / "unit-stdout.log"

    # -- state ----------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def main_pid(self) -> int:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else 0

    def _set(self, state: str) -> None:
        with self._changed:
            self._set_locked(state)

    def wait_for_state(self, wanted: str | tuple[str, ...], timeout_s: float = 30.0) -> str:
        """Block until the unit is in one of `wanted`; returns the state reached (or the last)."""
        targets = (wanted,) if isinstance(wanted, str) else wanted
        with self._changed:
            self._changed.wait_for(lambda: self._state in targets, timeout=timeout_s)
            return self._state

    def show(self) -> dict[str, str]:
        """The properties `systemctl show UNIT` prints for a service."""
        return {
            "Id": self.name,
            "Description": "vLLM OpenAI-compatible server (simulated)",
            "LoadState": "loaded",
            "ActiveState": self._state,
            "SubState": SUB_STATES[self._state],
            "Result": self._result,
            "MainPID": str(self.main_pid),
            "ExecMainStartTimestamp": _systemd_timestamp(self.main_start_s),
            "StateChangeTimestamp": _systemd_timestamp(self.state_change_s),
            "ExecMainStatus": str(self.exec_main_status),
            "NRestarts": str(self.n_restarts),
            "Restart": self.restart_policy,
            "ControlGroup": f"/system.slice/{self.name}",
            "FragmentPath": f"/etc/systemd/system/{self.name}",
            "UnitFileState": "enabled",
        }

    def show_text(self) -> str:
        return "".join(f"{key}={value}\n" for key, value in self.show().items())

    # -- actions --------------------------------------------------------------
    def start(self, started_s: float | None = None) -> None:
        """Start the server unless it is already running (like `systemctl start`);
        `started_s` dates the start earlier (a load resumed mid-way, tui.sim.load)."""
        with self._lock:
            if self._state in ("activating", "active", "deactivating"):
                return
            self._launch_locked(started_s)

    def _launch_locked(self, started_s: float | None = None) -> None:
        self._stopping = False
        self._result = "success"
        self.exec_main_status = 0
        output = self.stdout_path.open("ab")
        self._proc = subprocess.Popen(
            list(self._argv_factory()),
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        output.close()
        self.main_start_s = started_s if started_s is not None else time.time()
        self._set_locked("activating")
        threading.Thread(target=self._watch, args=(self._proc,), daemon=True).start()

    def stop(self, orphans: int | None = None) -> None:
        """SIGTERM the main process, SIGKILL after stop_timeout_s; orphans=N leaves N workers."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None or self._stopping:
                if self._state == "failed":
                    self._set_locked("inactive")
                return
            self._stopping = True
            self._set_locked("deactivating")
        marker = self.state_dir / "orphans-on-stop"
        if orphans is not None:
            marker.write_text(str(orphans))
        else:
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        threading.Thread(target=self._kill_after_timeout, args=(proc,), daemon=True).start()

    def restart(self) -> None:
        """Stop, then start once the old server is gone (returns at once)."""

        def run() -> None:
            self.stop()
            self.wait_for_state(("inactive", "failed"), timeout_s=self.stop_timeout_s + 5)
            self.start()

        threading.Thread(target=run, daemon=True).start()

    def _kill_after_timeout(self, proc: subprocess.Popen[bytes]) -> None:
        try:
            proc.wait(timeout=self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            self._result = "timeout"

    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        """Follow one server process from start to exit: a look at its port every 0.1 s
        while it activates, then a blocking wait (a 10 Hz poll for the server's whole life
        was 38 % of a serving demo console's CPU)."""
        while proc.poll() is None and self._state == "activating":
            if port_is_listening(self.port):
                with self._lock:
                    if self._proc is proc and self._state == "activating":
                        self._set_locked("active")
                break
            time.sleep(0.1)
        code = proc.wait()
        with self._lock:
            if self._proc is not proc:
                return
            self.exec_main_status = code if code >= 0 else -code
            if self._stopping:
                self._set_locked("inactive")
                return
            self._result = "exit-code" if code > 0 else "signal"
            self._set_locked("failed")
        if self.restart_policy == "on-failure":
            time.sleep(self.restart_s)
            with self._lock:
                if self._state == "failed" and self._proc is proc:
                    self.n_restarts += 1
                    self._launch_locked()

    def _set_locked(self, state: str) -> None:
        if state != self._state:
            self.state_change_s = time.time()
        self._state = state
        self._changed.notify_all()
