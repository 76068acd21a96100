"""Backups of the embedded stores, taken while the stack serves (`lore-up backup PATH`), and their
restore onto empty data folders (`lore-up restore PATH`).

Each service's data folder is copied file by file: SQLite databases (each service's relational store,
and Qdrant local's collections) through SQLite's online backup API, so each is a consistent snapshot
even while it is written; the embedded FalkorDB is asked to `SAVE` its graphs first, then its dump is
copied; raw files, memories' files and caches are copied as they are. What was acknowledged before the
backup started is in it; work still running then (a parse, an upload session) may be partly there, and
a restored stack treats such a task as interrupted, as after a crash (it runs again). Server stores
(PostgreSQL, FalkorDB or Qdrant servers, S3) are backed up with their own tools: see the operations
docs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from pathlib import Path

from redis import Redis

from lore_common.stores.graph import socket_path
from lore_core import __version__
from lore_core.settings import Settings, load_settings

MANIFEST = "lore-backup.json"
SERVICES = ("docdb", "gen", "mem")
SKIP_NAMES = {".lock", "falkordb.sock", "falkordb.log"}
# Unfinished uploads and parse downloads; FalkorDB's append-only file, which its fresh snapshot replaces
# (a restored folder starts from the snapshot and writes a new append-only file).
SKIP_DIRS = {".uploads", "staging", "appendonlydir"}
# SQLite's write-ahead log and journal belong to the live database; its backup already holds their pages.
TRANSIENT = (".tmp", "-wal", "-shm", "-journal")


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == b"SQLite format 3\x00"


def _save_graphs(folder: Path) -> None:
    """Ask a running embedded FalkorDB to write its graphs to disk now (it saves every 60 s itself)."""
    socket = socket_path(folder.resolve())
    if not socket.exists():
        return  # not running: its dump on disk is what it last saved
    client = Redis(unix_socket_path=str(socket), socket_timeout=60)
    try:
        client.save()
    finally:
        client.close()


def _copy_folder(source: Path, target: Path) -> int:
    copied = 0
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if any(part in SKIP_DIRS for part in relative.parts) or path.name in SKIP_NAMES:
            continue
        if path.is_symlink() or not path.is_file() or path.name.endswith(TRANSIENT):
            continue
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if _is_sqlite(path):
            source_db, target_db = (
                sqlite3.connect(f"file:{path}?mode=ro", uri=True),
                sqlite3.connect(destination),
            )
            try:
                source_db.backup(target_db)
            finally:
                source_db.close()
                target_db.close()
        else:
            shutil.copy2(path, destination)
        copied += 1
    return copied


def data_dirs(settings: Settings) -> dict[str, Path]:
    return {name: Path(getattr(settings, name).server.data_dir) for name in SERVICES}


def backup(settings: Settings, target: Path) -> dict[str, int]:
    if target.exists() and any(target.iterdir()):
        raise SystemExit(f"backup: {target} is not empty; name a new folder")
    target.mkdir(parents=True, exist_ok=True)
    started = time.time()
    counts = {}
    for name, folder in data_dirs(settings).items():
        if not folder.is_dir():
            continue
        if (folder / "falkordb").is_dir():
            _save_graphs(folder / "falkordb")
        counts[name] = _copy_folder(folder, target / name)
    manifest = {"version": __version__, "started_at": started, "finished_at": time.time(), "files": counts}
    (target / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return counts


def restore(settings: Settings, source: Path) -> dict[str, int]:
    if not (source / MANIFEST).is_file():
        raise SystemExit(f"restore: {source} holds no {MANIFEST}; was it made by `lore-up backup`?")
    folders = data_dirs(settings)
    busy = [
        str(folder)
        for name, folder in folders.items()
        if (source / name).is_dir() and folder.exists() and any(folder.iterdir())
    ]
    if busy:
        raise SystemExit(
            f"restore: these data folders must be empty (stop the stack first): {', '.join(busy)}"
        )
    counts = {}
    for name, folder in folders.items():
        if (source / name).is_dir():
            counts[name] = _copy_folder(source / name, folder)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lore-up", description="Back up or restore the embedded stores.")
    parser.add_argument("command", choices=["backup", "restore"])
    parser.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    settings = load_settings()
    action = backup if args.command == "backup" else restore
    counts = action(settings, args.path.resolve())
    done = ", ".join(f"{name} {count} file(s)" for name, count in counts.items())
    verb = "backed up" if args.command == "backup" else "restored"
    print(f"lore: {verb} {done} {'to' if args.command == 'backup' else 'from'} {args.path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
