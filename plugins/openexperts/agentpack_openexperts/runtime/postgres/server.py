"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` and ``pg_ctl`` in a temporary folder.

The server listens on a free port of 127.0.0.1 (and a Unix socket in the folder) and
accepts one superuser with a password. ``initdb`` refuses to run as root, so as root
the server runs as an unprivileged user (``postgres`` when it exists, else ``nobody``)::

    with TemporaryServer() as server:
        url = server.create_database("demo")     # postgresql://agentpack:...@127.0.0.1:PORT/demo
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

SUPERUSER = "agentpack"
PASSWORD = "agentpack-test"
FAST = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")
"""Settings that trade durability for speed; a test server has nothing to keep."""


def find_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``: on PATH, else the newest Debian layout."""
    found = shutil.which("pg_ctl")
    candidates = [Path(found).parent] if found else []
    candidates += sorted(
        (Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")), key=lambda p: _major(p.parent.name), reverse=True
    )
    return next((c for c in candidates if all((c / n).is_file() for n in ("initdb", "pg_ctl", "postgres"))), None)


def _major(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class TemporaryServer:
    """One PostgreSQL server in a temporary folder, removed by :meth:`stop`."""

    def __init__(self, bindir: Path | None = None, *, durable: bool = False) -> None:
        found = bindir or find_bindir()
        if found is None:
            raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed")
        self.bindir = found
        self.durable = durable
        self.folder: Path | None = None
        self.port = 0
        self._account: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                with contextlib.suppress(KeyError):
                    self._account = pwd.getpwnam(name)
                    break

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> TemporaryServer:
        self.folder = Path(tempfile.mkdtemp(prefix="agentpack-pg-"))
        try:
            self.port = _free_port()
            (self.folder / "pwfile").write_text(PASSWORD + "\n")
            if self._account is not None:
                os.chown(self.folder, self._account.pw_uid, self._account.pw_gid)
                os.chown(self.folder / "pwfile", self._account.pw_uid, self._account.pw_gid)
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                f"--pwfile={self.folder / 'pwfile'}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            )
            self.start_server()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def data(self) -> Path:
        assert self.folder is not None, "the server is not started"
        return self.folder / "data"

    def start_server(self) -> None:
        """Start (or restart) the server process on the data folder."""
        assert self.folder is not None, "the server is not started"
        settings = ["listen_addresses=127.0.0.1", f"port={self.port}", "max_connections=300"]
        settings.append("authentication_timeout=5s")  # a client slow to log in holds up a stop no longer
        settings += [] if self.durable else list(FAST)
        options = " ".join(f"-c {s}" for s in settings) + f" -k {self.folder}"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-o", options, "-w", "start")

    def stop_server(self, mode: str = "immediate") -> None:
        """Stop the server process, keeping its data folder: ``immediate`` (at once, a crash) or ``fast``
        (clients disconnected, committed work kept even with the test server's ``FAST`` settings)."""
        if self.folder is not None and (self.data / "postmaster.pid").exists():
            pid = self._postmaster_pid()
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-W", "stop", check=False)
            if pid is not None:
                _wait_gone(pid)

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        if self.folder is None:
            return
        try:
            self.stop_server()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> TemporaryServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- use -----------------------------------------------------------------------------------------
    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` (dropped first if it exists) and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        extra: dict[str, Any] = {}
        if self._account is not None:
            extra = {"user": self._account.pw_uid, "group": self._account.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self.bindir / tool), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=self.folder,
            **extra,
        )
        if check and done.returncode != 0:
            log = self.folder / "server.log" if self.folder else None
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise RuntimeError(
                f"{tool} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}\n{tail}"
            )


def _wait_gone(pid: int, timeout: float = 30.0) -> None:
    """Wait until process ``pid`` has exited; a zombie (exited, waiting for init to reap it) counts as gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path("/proc").is_dir():  # no procfs: ask the kernel
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
            continue
        try:
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state == b"Z":
            return
        time.sleep(0.02)
    raise RuntimeError(f"the PostgreSQL server (pid {pid}) did not stop")
