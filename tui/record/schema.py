"""The recording's SQLite schema: numbered migrations, applied in order on open.

`PRAGMA user_version` holds the schema version. A file written by a newer
servedeck is refused with a one-line error rather than guessed at.
"""

from __future__ import annotations

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


def connect(path: Path, *, writer: bool) -> sqlite3.Connection:
    """A connection in WAL mode; the writer also migrates, a reader refuses a newer schema."""
    try:
        if writer:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            connection.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a killed process loses nothing committed; only power loss may
            # drop the last commit, and the file stays consistent either way.
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA busy_timeout = 5000")
            migrate(connection, path)
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
    except sqlite3.DatabaseError as error:
        raise RecordingError(f"{path}: cannot open recording: {error}") from None
    return connection
