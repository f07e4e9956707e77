"""The recording's SQLite schema: numbered migrations, applied in order on open.

`PRAGMA user_version` holds the schema version. A file written by a newer
servedeck is refused with a one-line error rather than guessed at.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from tui.core.errors import ServedeckError

# Each entry moves the schema from version i to i + 1; never edit one that shipped.
MIGRATIONS: tuple[str, ...] = (
    # 1: ticks, metrics, events, meta
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE gpu_ticks (
        ts_ms INTEGER PRIMARY KEY,
        res_s INTEGER NOT NULL DEFAULT 1,
        data BLOB NOT NULL
    );
    CREATE TABLE metrics (
        ts_ms INTEGER PRIMARY KEY,
        running_reqs INTEGER, waiting_reqs INTEGER, kv_cache_usage_pct REAL,
        prompt_tokens_per_s REAL, generation_tokens_per_s REAL, preemptions_total INTEGER,
        ttft_p50_s REAL, ttft_p90_s REAL, ttft_p99_s REAL,
        itl_p50_s REAL, itl_p90_s REAL, itl_p99_s REAL
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        text TEXT NOT NULL,
        gpu INTEGER,
        key TEXT UNIQUE,
        data TEXT
    );
    CREATE INDEX events_ts ON events (ts_ms);
    """,
    # 2: per-alert mute / acknowledgement, so it survives a restart of the console
    """
    CREATE TABLE alert_state (
        alert_id TEXT PRIMARY KEY,
        muted_until_s REAL,
        acked_at_s REAL
    );
    """,
    # 3: speculative decoding's acceptance at each poll (tui.serving.spec_decode)
    """
    ALTER TABLE metrics ADD COLUMN spec_acceptance_rate REAL;
    ALTER TABLE metrics ADD COLUMN spec_mean_accepted_length REAL;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class RecordingError(ServedeckError):
    """A recording that cannot be opened, read or written."""


def schema_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def migrate(connection: sqlite3.Connection, path: Path | str) -> int:
    """Bring the file to SCHEMA_VERSION; returns the version it had before."""
    before = schema_version(connection)
    if before > SCHEMA_VERSION:
        raise RecordingError(
            f"{path}: recording schema version {before} is newer than this servedeck "
            f"understands ({SCHEMA_VERSION}); upgrade servedeck"
        )
    if before == 0:
        # Only possible before the first table exists: lets retention give space back.
        connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
    for version in range(before, SCHEMA_VERSION):
        with connection:
            connection.executescript(
                "BEGIN;" + MIGRATIONS[version] + f"PRAGMA user_version = {version + 1};"
            )
    return before


# The tables each schema version has (a file from schema 1 has no alert_state yet).
_TABLES: tuple[tuple[int, str], ...] = (
    (1, "meta"),
    (1, "gpu_ticks"),
    (1, "metrics"),
    (1, "events"),
    (2, "alert_state"),
)


def check_tables(connection: sqlite3.Connection, path: Path | str, *, writer: bool) -> None:
    """A table dropped by hand is said once, naming the file, not at the first write.

    A reader needs only the events (meta is optional there: no GPU names)."""
    version = schema_version(connection)
    have = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    needed = [name for since, name in _TABLES if version >= since and (writer or name == "events")]
    missing = [name for name in needed if name not in have]
    if missing:
        raise RecordingError(
            f"{path}: damaged recording: table {missing[0]!r} is missing "
            "(move the file aside to start a new one)"
        )


def _create_private(path: Path) -> None:
    """The file (and so its -wal and -shm, which SQLite creates with the file's mode) 0600,
    like the other data files: a recording holds command lines and log lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    if path.stat().st_mode & 0o077 and path.stat().st_uid == os.getuid():
        path.chmod(0o600)  # one written before this rule
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists() and side.stat().st_mode & 0o077 and side.stat().st_uid == os.getuid():
            side.chmod(0o600)


def connect(path: Path, *, writer: bool) -> sqlite3.Connection:
    """A connection in WAL mode; the writer also migrates, a reader refuses a newer schema.

    Every failure (locked, read-only, damaged, not SQLite) is one RecordingError naming
    the file."""
    connection: sqlite3.Connection | None = None
    try:
        if writer:
            _create_private(path)
            connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            connection.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a killed process loses nothing committed; only power loss may
            # drop the last commit, and the file stays consistent either way.
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA busy_timeout = 5000")
            migrate(connection, path)
            check_tables(connection, path, writer=True)
        else:
            if not path.exists():
                raise RecordingError(f"{path}: no recording here")
            connection = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
            )
            connection.execute("PRAGMA busy_timeout = 5000")
            version = schema_version(connection)
            if version > SCHEMA_VERSION:
                raise RecordingError(
                    f"{path}: recording schema version {version} is newer than this "
                    f"servedeck understands ({SCHEMA_VERSION}); upgrade servedeck"
                )
            if version == 0:
                raise RecordingError(f"{path}: not a servedeck recording (empty schema)")
            check_tables(connection, path, writer=False)
    except sqlite3.DatabaseError as error:
        _close(connection)
        raise RecordingError(f"{path}: cannot open recording: {error}") from None
    except OSError as error:  # the folder or file not ours to write
        _close(connection)
        raise RecordingError(f"{path}: cannot open recording: {error.strerror or error}") from None
    except RecordingError:
        _close(connection)
        raise
    return connection


def _close(connection: sqlite3.Connection | None) -> None:
    if connection is not None:
        connection.close()
