"""`make run`: TorchServe, the gateway, Redis and a job worker on this machine, owned by
one supervisor.

    python -m gateway.tools.devserver      # what `make run` runs

Starts Redis (Debian's `redis-server`: the job queue) and waits until it answers PING, then
TorchServe (torchserve.server: the drawing models), the gateway (`python -m gateway`:
gunicorn with the gevent worker) and one job worker (`python -m gateway.worker`, the
gateway's environment) side by side, waits until the gateway's /ready answers 200, prints a
curl line, and runs until it is stopped or one of them exits. A tool of the checkout (only
a checkout has both halves): the service never imports it and the wheel does not ship it.

Redis: 127.0.0.1:REDIS_PORT only (protected mode, no password on loopback), every write in
its append-only file before it answers (`appendonly yes`, `appendfsync always`; no RDB
snapshots), in REDIS_STATE_DIR; the gateway and the worker get REDIS_URL pointing at it.
With REDIS_URL set by the user no Redis is started and the worker uses that URL; with
neither `redis-server` on PATH nor REDIS_URL there is no worker and the gateway runs jobs
in its embedded queue (lost on restart). Either way it says so in one line.

Every way of stopping it stops every server:
- Ctrl-C, SIGTERM to it or to its whole process group, SIGHUP (the terminal closed): it
  stops the gateway (SIGTERM: requests in flight finish) and the worker (SIGTERM: it
  finishes or hands back its jobs within WORKER_GRACE_S) side by side, then Redis (SIGTERM:
  it syncs its append-only file), then TorchServe, then exits. The servers run in their
  own sessions, so a group signal reaches this process only and never half-stops a server
  behind its back; further signals while stopping are ignored (stopping is bounded: the
  gateway's graceful timeout, the worker's grace, Redis's and TorchServe's 30 s, then
  SIGKILL).
- its parent dies (the `make` or shell that started it is killed): the kernel sends it
  SIGTERM (PR_SET_PDEATHSIG), and it stops as above.
- it dies itself (SIGKILL, a crash): a watchdog process, in a session of its own, holds
  the reading end of a pipe only this process writes to; when the pipe closes before this
  process said it had stopped everything, the watchdog stops the servers' process groups,
  in the order above. The gateway and the worker also get SIGTERM from the kernel then
  (PR_SET_PDEATHSIG again); Redis does not, so that it outlives their last writes.

What it finds at start (its state folder RUN_STATE_DIR holds a lock and the process groups
of the gateway, the worker and Redis; TorchServe's own state folder TS_STATE_DIR holds
TorchServe's):
- another `make run` of this checkout still running: it says so, with the command to stop
  it, and exits; one that is just finishing its stop is waited for;
- a gateway, worker, Redis or TorchServe left running by an earlier `make run` of this
  checkout: stopped, and a fresh one started;
- anything else on the gateway's, Redis's or TorchServe's ports: it names the process and
  the exact command that stops it (or the setting that moves make run elsewhere), and exits.

Environment (all optional): GUNICORN_BIND (127.0.0.1:5000), STORAGE_URL
(file://<repo>/var/animations), TS_CONFIG (torchserve/config.properties; TORCHSERVE_URL and
TORCHSERVE_MANAGEMENT_URL follow its addresses unless set), TS_MODEL_STORE
(torchserve/model-store), TS_STATE_DIR (var/torchserve), RUN_STATE_DIR (var/make-run),
REDIS_PORT (6390), REDIS_STATE_DIR (var/redis: the append-only file and redis.log),
REDIS_URL (a Redis of your own: none is started), WORKER_GRACE_S (30),
TS_READY_TIMEOUT (180 s, also the gateway's and Redis's), and every gateway setting
(README).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from torchserve.server import (
    ADDRESS_KEYS,
    DEFAULT_CONFIG,
    DEFAULT_MODEL_STORE,
    DEFAULT_STATE_DIR,
    REPO,
    TorchServe,
    TorchServeError,
    group_alive,
    read_properties,
)

DEFAULT_RUN_STATE_DIR = REPO / "var" / "make-run"
DEFAULT_REDIS_STATE_DIR = REPO / "var" / "redis"
DEFAULT_REDIS_PORT = 6390  # not 6379: a Redis of the system's (Debian starts one) keeps it
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
TORCHSERVE_PORT_KEYS = (*ADDRESS_KEYS, "grpc_inference_port", "grpc_management_port")
# A previous run that is still stopping its servers holds the lock this long at most.
LOCK_WAIT_S = 90.0
# On one machine TorchServe shares the cores with the gateway; in the pod it has a
# container (and a GPU) of its own. Niced, its inference waits for the gateway's event
# loop, which then answers /health and refusals at once, as in the pod (measured under a
# storm of 48 clients: refusal p99 67-69 -> 50-54 ms, /health p99 33-39 -> 13-26 ms;
# docs/BENCHMARKS.md, section refusal-path).
TORCHSERVE_NICENESS = 10
# The watchdog stops what is left in this order, as Servers.stop does: the gateway and the
# worker still write to Redis while they stop, and both call TorchServe.
STOP_ORDER = ("gateway", "worker", "Redis", "TorchServe")
REDIS_STOP_S = 30.0


class StartError(Exception):
    """make run cannot start; the message says why and what to do."""


class Stop(BaseException):
    """A stop signal arrived. BaseException: no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def say(message: str, err: bool = False) -> None:
    """Print, never failing: after SIGHUP the terminal may be gone, and stopping goes on."""
    try:
        print(message, file=sys.stderr if err else sys.stdout, flush=True)
    except (OSError, ValueError):
        pass


# --- signals -------------------------------------------------------------------------
class _Signals:
    """The first stop signal raises Stop in the main thread (deferred to the end of a
    `held()` block); later ones are ignored: stopping, once begun, runs to its end."""

    stopping = False
    holding = 0
    pending: int | None = None

    @classmethod
    def install(cls) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, cls._on_signal)

    @classmethod
    def _on_signal(cls, signum: int, frame: object) -> None:
        if cls.stopping:
            return
        if cls.holding:
            cls.pending = signum
            return
        cls.stopping = True
        raise Stop(signum)

    @classmethod
    @contextlib.contextmanager
    def held(cls) -> Iterator[None]:
        """No Stop inside the block: a process started in it is always recorded (for the
        stop and the watchdog) before a Stop unwinds. Not the kernel's signal mask, which
        the servers would inherit."""
        cls.holding += 1
        try:
            yield
        finally:
            cls.holding -= 1
            if not cls.holding and cls.pending is not None and not cls.stopping:
                cls.stopping = True
                raise Stop(cls.pending)


def die_with_parent() -> None:
    """Ask the kernel for SIGTERM when the parent process dies (Linux; elsewhere a no-op)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def check_parent_alive(parent: int) -> None:
    """SIGTERM to ourselves if the parent died before die_with_parent() took effect."""
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


# --- processes -------------------------------------------------------------------------
def group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (OSError, psutil.Error):
            continue
    return members


def command_line(proc: psutil.Process) -> str:
    try:
        return " ".join(" ".join(proc.cmdline()).split()) or proc.name()
    except psutil.Error:
        return "?"


def group_runs(pgid: int, *words: str) -> bool:
    """Whether a live process of group `pgid` has one of `words` in its command line."""
    return any(w in command_line(p) for p in group_members(pgid) for w in words)


def end_group(pgid: int, timeout: float) -> None:
    """SIGTERM to the whole group, SIGKILL to what is left after `timeout`."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not group_alive(pgid):
            return


def listeners(port: int) -> list[psutil.Process]:
    """The processes listening on TCP `port` that this user may see, parents first."""
    pids = set()
    with contextlib.suppress(psutil.Error):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                if conn.pid:
                    pids.add(conn.pid)
    procs = []
    for pid in sorted(pids):
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            procs.append((proc.ppid() in pids, proc))  # a listener's child: after its parent
    return [proc for _, proc in sorted(procs, key=lambda pair: pair[0])]


def port_taken(host: str, port: int) -> bool:
    host = "127.0.0.1" if host in ("0.0.0.0", "", "*") else host.strip("[]")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


# --- settings ----------------------------------------------------------------------------
def _path(value: str | None, default: Path) -> Path:
    return (REPO / value).resolve() if value else default


def _without_password(url: str) -> str:
    """`url` with its user and password (if any) hidden: it is printed."""
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        url = parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()
    if "password" in parts.query:  # unix:///run/redis.sock?password=...
        url = url.split("?", 1)[0] + "?***"
    return url


@dataclass
class Settings:
    bind: str
    storage_url: str
    torchserve: TorchServe
    state_dir: Path
    ready_timeout: float
    gateway_env: dict[str, str]
    # Redis: started here when `redis_server` is set; `redis_url` (ours or the user's) is
    # what the gateway and the worker get, None when jobs run in the gateway's own queue.
    redis_server: str | None
    redis_port: int
    redis_dir: Path
    redis_url: str | None
    worker_grace: float

    @classmethod
    def from_env(cls, environ: dict[str, str]) -> Settings:
        bind = environ.get("GUNICORN_BIND") or "127.0.0.1:5000"
        storage = environ.get("STORAGE_URL") or f"file://{REPO / 'var' / 'animations'}"
        try:
            ts = TorchServe(
                _path(environ.get("TS_CONFIG"), DEFAULT_CONFIG),
                _path(environ.get("TS_MODEL_STORE"), DEFAULT_MODEL_STORE),
                _path(environ.get("TS_STATE_DIR"), DEFAULT_STATE_DIR),
                niceness=TORCHSERVE_NICENESS,
            )
        except (OSError, KeyError) as exc:
            raise StartError(f"cannot read TorchServe's config: {exc}") from exc
        env = {**environ, "GUNICORN_BIND": bind, "STORAGE_URL": storage}
        env.setdefault("TORCHSERVE_URL", ts.inference_url)
        env.setdefault("TORCHSERVE_MANAGEMENT_URL", ts.management_url)
        redis_url = env.pop("REDIS_URL", "") or None  # set but empty: unset
        redis_server = None if redis_url else shutil.which("redis-server", path=env.get("PATH"))
        try:
            redis_port = int(environ.get("REDIS_PORT") or DEFAULT_REDIS_PORT)
            worker_grace = float(environ.get("WORKER_GRACE_S") or 30)
        except ValueError as exc:
            raise StartError(f"REDIS_PORT or WORKER_GRACE_S: {exc}") from exc
        if redis_server:
            redis_url = f"redis://127.0.0.1:{redis_port}/0"
        if redis_url:
            env["REDIS_URL"] = redis_url
        return cls(
            bind=bind,
            storage_url=storage,
            torchserve=ts,
            state_dir=_path(environ.get("RUN_STATE_DIR"), DEFAULT_RUN_STATE_DIR),
            ready_timeout=float(environ.get("TS_READY_TIMEOUT") or 180),
            gateway_env=env,
            redis_server=redis_server,
            redis_port=redis_port,
            redis_dir=_path(environ.get("REDIS_STATE_DIR"), DEFAULT_REDIS_STATE_DIR),
            redis_url=redis_url,
            worker_grace=worker_grace,
        )

    @property
    def url(self) -> str:
        host, port = self.bind.rsplit(":", 1)
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"

    @property
    def gateway_pid_file(self) -> Path:
        return self.state_dir / "gateway.pid"

    @property
    def worker_pid_file(self) -> Path:
        return self.state_dir / "worker.pid"

    @property
    def redis_pid_file(self) -> Path:
        return self.state_dir / "redis.pid"

    @property
    def redis_log(self) -> Path:
        return self.redis_dir / "redis.log"

    def jobs_line(self) -> str:
        """One line: where jobs run in this make run."""
        if self.redis_server:
            return (
                f"jobs: queued in Redis on 127.0.0.1:{self.redis_port} ({self.redis_dir}), "
                "run by one worker (python -m gateway.worker)"
            )
        if self.redis_url:
            return (
                f"jobs: REDIS_URL is set ({_without_password(self.redis_url)}): no Redis of "
                "make run's; one worker (python -m gateway.worker) takes jobs from that one"
            )
        return (
            "jobs: redis-server is not installed (as root, make run installs it) and REDIS_URL "
            "is not set: no worker; the gateway runs jobs in its embedded queue, lost on restart"
        )

    def torchserve_ports(self) -> list[tuple[str, str, int]]:
        """(setting, host, port) of every port TorchServe's config makes it listen on."""
        props = read_properties(self.torchserve.config)
        found = []
        for key in TORCHSERVE_PORT_KEYS:
            value = props.get(key)
            if not value:
                continue
            if key in ADDRESS_KEYS:
                host, port = value.split("://")[-1].rstrip("/").rsplit(":", 1)
            else:
                host = props.get(key.replace("_port", "_address"), "127.0.0.1")
                port = value
            found.append((key, host, int(port)))
        return found


# --- the owner lock --------------------------------------------------------------------
@contextlib.contextmanager
def owner_lock(state_dir: Path) -> Iterator[int]:
    """Hold `state_dir`/lock for this run (its fd, for the watchdog to hold it too).

    Held: another make run of this checkout is running (StartError), or one whose
    supervisor is gone while its watchdog still stops its servers (wait for it)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        told = False
        while not _try_lock(fd):
            owner = _lock_owner(path)
            if owner is not None:
                raise StartError(
                    f"another `make run` of this checkout is running (pid {owner}).\n"
                    f"  Stop it with Ctrl-C in its terminal, or: kill {owner}\n"
                    "  (or run this one beside it: other RUN_STATE_DIR, TS_STATE_DIR, TS_CONFIG "
                    "ports, GUNICORN_BIND, REDIS_PORT and REDIS_STATE_DIR)"
                )
            if time.monotonic() > deadline:
                raise StartError(f"{path} stays locked; is a `make run` still stopping?")
            if not told:
                say("waiting for the previous `make run` to finish stopping its servers...")
                told = True
            time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lock_owner(path: Path) -> int | None:
    """The pid written in the lock file, if that supervisor still runs."""
    try:
        pid = int(path.read_text().split()[0])
        return pid if "gateway.tools.devserver" in command_line(psutil.Process(pid)) else None
    except (OSError, ValueError, IndexError, psutil.Error):
        return None


# --- what an earlier run left ----------------------------------------------------------
def stop_leftovers(settings: Settings) -> None:
    """Stop the gateway, worker, Redis and TorchServe an earlier make run of this checkout
    left running, in the order Servers.stop stops them."""
    for pid_file, name, words, timeout in (
        (settings.gateway_pid_file, "gateway", ("gunicorn", "gateway"),
         _graceful_timeout(settings.gateway_env) + 5),
        (settings.worker_pid_file, "job worker", ("gateway.worker",), settings.worker_grace + 5),
        (settings.redis_pid_file, "Redis", ("redis-server",), REDIS_STOP_S),
    ):  # fmt: skip
        with contextlib.suppress(OSError, ValueError):
            pgid = int(pid_file.read_text())
            if group_alive(pgid) and group_runs(pgid, *words):
                say(f"stopping the {name} an earlier `make run` left running (pid {pgid})...")
                stop_leader(pgid, timeout)
        pid_file.unlink(missing_ok=True)
    ts = settings.torchserve
    pgid = ts.pid
    if pgid is not None and group_runs(pgid, "torchserve", "org.pytorch.serve"):
        say(f"stopping the TorchServe an earlier `make run` left running (pid {pgid})...")
        ts.stop()
    elif pgid is not None:  # the pid was reused by something else: not ours to stop
        ts.pid_file.unlink(missing_ok=True)


def check_ports_free(settings: Settings) -> None:
    """StartError naming whoever holds a port we need, and the command that stops it."""
    host, port = settings.bind.rsplit(":", 1)
    if port_taken(host, int(port)):
        who = listeners(int(port))
        stop = f"kill {who[0].pid}" if who else f"ss -ltnp 'sport = :{port}'   (to find it)"
        raise StartError(
            f"{settings.bind} (the gateway's address) is taken by {_describe(who)}.\n"
            f"  Stop it with: {stop}\n"
            f"  or run on another port: GUNICORN_BIND={host}:{int(port) + 1} make run"
        )
    if settings.redis_server and port_taken("127.0.0.1", settings.redis_port):
        port = settings.redis_port
        who = listeners(port)
        stop = f"kill {who[0].pid}" if who else f"ss -ltnp 'sport = :{port}'   (to find it)"
        raise StartError(
            f"127.0.0.1:{port} (Redis's port, REDIS_PORT) is taken by {_describe(who)}.\n"
            f"  Stop it with: {stop}\n"
            f"  or run on another port: REDIS_PORT={port + 1} make run"
        )
    for key, ts_host, ts_port in settings.torchserve_ports():
        if port_taken(ts_host, ts_port):
            who = listeners(ts_port)
            raise StartError(
                f"{ts_host}:{ts_port} ({key} in {settings.torchserve.config}) is taken by "
                f"{_describe(who)}, not by a `make run` of this checkout.\n"
                f"  Stop it with: {_torchserve_stop_command(who, ts_port)}"
            )


def _describe(procs: list[psutil.Process]) -> str:
    if not procs:
        return "a process this user cannot see"
    return f"pid {procs[0].pid} ({command_line(procs[0])[:120]})"


def _torchserve_stop_command(procs: list[psutil.Process], port: int) -> str:
    if not procs:
        return f"(find it with) ss -ltnp 'sport = :{port}'"
    try:
        pgid = os.getpgid(procs[0].pid)
    except OSError:
        return f"kill {procs[0].pid}"
    members = group_members(pgid)
    for member in members:
        # A TorchServe that torchserve/start.sh started elsewhere runs in its state folder.
        with contextlib.suppress(psutil.Error):
            cwd = Path(member.cwd())
            if (cwd / "torchserve.pid").is_file():
                return f"TS_STATE_DIR={cwd} {REPO / 'torchserve' / 'stop.sh'}"
    # A group is stopped whole only when all of it is TorchServe (launcher, Java, workers):
    # anything else may share it with the shell or the program that started it.
    if members and all(_is_torchserve(member) for member in members):
        return f"kill -TERM -- -{pgid}   (its whole process group: launcher, Java, workers)"
    return f"kill {procs[0].pid}"


def _is_torchserve(proc: psutil.Process) -> bool:
    line = command_line(proc)
    return any(word in line for word in ("org.pytorch.serve", "torchserve", "model_service_worker"))


# --- the servers -----------------------------------------------------------------------
def _graceful_timeout(env: dict[str, str]) -> float:
    return float(env.get("GUNICORN_GRACEFUL_TIMEOUT") or 30)


def stop_leader(pgid: int, timeout: float) -> None:
    """SIGTERM to the group's leader (gunicorn's master drains its workers; the job worker
    finishes or hands back its jobs; Redis syncs its append-only file), up to `timeout` for
    it to exit, then whatever is left of the group (render workers) gets SIGTERM and, at
    last, SIGKILL."""
    stop_leaders([(pgid, timeout)])


def stop_leaders(groups: list[tuple[int, float]]) -> None:
    """`stop_leader` for each (pgid, timeout) of `groups` at once: every leader gets its
    SIGTERM first, so they wind down side by side."""
    for pgid, _ in groups:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pgid, signal.SIGTERM)
    start = time.monotonic()
    for pgid, timeout in groups:
        while psutil.pid_exists(pgid) and time.monotonic() < start + timeout:
            with contextlib.suppress(psutil.Error):
                if psutil.Process(pgid).status() == psutil.STATUS_ZOMBIE:
                    break
            time.sleep(0.1)
        end_group(pgid, 5.0)


def _child_dies_with_parent() -> None:  # runs in the forked child, before exec
    die_with_parent()


class Watchdog:
    """A process in its own session that stops the servers if this one dies first."""

    def __init__(self, lock_fd: int) -> None:
        read_end, self._pipe = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gateway.tools.devserver", "--watchdog"],
                cwd=REPO, stdin=read_end, pass_fds=(lock_fd,), start_new_session=True,
            )  # fmt: skip
        finally:
            os.close(read_end)

    def watch(self, pgid: int, name: str) -> None:
        os.write(self._pipe, f"watch {pgid} {name}\n".encode())

    def done(self) -> None:
        """Everything is stopped: the watchdog may go."""
        with contextlib.suppress(OSError):
            os.write(self._pipe, b"done\n")
            os.close(self._pipe)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


def watchdog_main() -> int:
    """Read `watch PGID NAME` lines until `done`; on EOF first, stop those groups."""
    for sig in (signal.SIGINT, signal.SIGHUP):  # its own session; still, never from a tty
        signal.signal(sig, signal.SIG_IGN)
    groups: dict[int, str] = {}
    for line in sys.stdin:
        words = line.split()
        if words == ["done"]:
            return 0
        if len(words) == 3 and words[0] == "watch":
            groups[int(words[1])] = words[2]
    order = {name: i for i, name in enumerate(STOP_ORDER)}
    alive = sorted(
        ((pgid, name) for pgid, name in groups.items() if group_alive(pgid)),
        key=lambda group: order.get(group[1], len(order)),
    )
    if alive:
        names = ", ".join(f"the {name} (pid {pgid})" for pgid, name in alive)
        say(f"make run: its supervisor died; stopping {names}", err=True)
        grace = float(os.environ.get("WORKER_GRACE_S") or 30) + 5
        for pgid, name in alive:
            end_group(pgid, grace if name == "worker" else 30.0)
    return 0


def redis_answers(port: int) -> bool:
    """Whether the Redis on 127.0.0.1:`port` answers PING with PONG (not while it loads its
    append-only file: then it answers -LOADING)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class Servers:
    """The gateway, the job worker, Redis and TorchServe of one run, and how to stop them."""

    def __init__(self, settings: Settings, watchdog: Watchdog) -> None:
        self.settings = settings
        self.watchdog = watchdog
        self.gateway: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None
        self.redis: subprocess.Popen | None = None
        self.torchserve_started = False

    def _spawn(self, command: list[str], name: str, pid_file: Path, **kwargs) -> subprocess.Popen:
        """`command` in a session of its own, watched, its pid in `pid_file`."""
        with _Signals.held():
            proc = subprocess.Popen(
                command, cwd=REPO, stdin=subprocess.DEVNULL, start_new_session=True, **kwargs
            )
            self.watchdog.watch(proc.pid, name)
            pid_file.write_text(f"{proc.pid}\n")
        return proc

    def start(self) -> None:
        """Redis first (the gateway and the worker connect to it at start), then the rest at
        once: gunicorn boots and warms its render workers while models load."""
        s = self.settings
        say(s.jobs_line())
        if s.redis_server:
            self.start_redis()
        say(f"starting the gateway on {s.url} and TorchServe (models load in a few seconds)...")
        self.gateway = self._spawn(
            [sys.executable, "-m", "gateway"], "gateway", s.gateway_pid_file,
            env=s.gateway_env, preexec_fn=_child_dies_with_parent,
        )  # fmt: skip
        if s.redis_url:
            self.worker = self._spawn(
                [sys.executable, "-m", "gateway.worker"], "worker", s.worker_pid_file,
                env=s.gateway_env, preexec_fn=_child_dies_with_parent,
            )  # fmt: skip
        with _Signals.held():
            try:
                pgid = s.torchserve.launch()
            except (TorchServeError, OSError) as exc:
                raise StartError(str(exc)) from exc
            self.torchserve_started = True
            self.watchdog.watch(pgid, "TorchServe")

    def start_redis(self) -> None:
        """Redis on loopback only, every write synced to its append-only file before it
        answers; until it answers PING. Not PR_SET_PDEATHSIG: if this process dies, the
        watchdog stops Redis after the gateway and the worker, as Servers.stop does."""
        s = self.settings
        assert s.redis_server is not None
        s.redis_dir.mkdir(parents=True, exist_ok=True)
        command = [
            s.redis_server, "--bind", "127.0.0.1", "--port", str(s.redis_port),
            "--protected-mode", "yes", "--appendonly", "yes", "--appendfsync", "always",
            "--save", "", "--dir", str(s.redis_dir), "--daemonize", "no",
            "--logfile", str(s.redis_log),
        ]  # fmt: skip
        self.redis = self._spawn(command, "Redis", s.redis_pid_file, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + s.ready_timeout
        while not redis_answers(s.redis_port):
            self._check_alive()
            if time.monotonic() > deadline:
                raise StartError(
                    f"Redis does not answer PING after {s.ready_timeout:.0f} s; the end of "
                    f"{s.redis_log}:\n{self.redis_log_tail()}"
                )
            time.sleep(0.05)

    def redis_log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(
                self.settings.redis_log.read_text(errors="replace").splitlines()[-lines:]
            )
        except OSError as exc:
            return f"({exc})"

    def wait_ready(self) -> None:
        """Until every model has a READY worker (asked of TorchServe, so the gateway's log
        is not filled with 503s meanwhile), then until the gateway's /ready answers 200."""
        ts = self.settings.torchserve
        deadline = time.monotonic() + self.settings.ready_timeout
        loading, missing = list(ts.models), "no answer yet"
        while time.monotonic() < deadline:
            self._check_alive()
            loading = [name for name in loading if not ts.model_ready(name)]
            if loading:
                missing = f"TorchServe is loading {', '.join(loading)}"
            else:
                try:
                    with urllib.request.urlopen(f"{self.settings.url}/ready", timeout=3):
                        return
                except urllib.error.HTTPError as exc:
                    with contextlib.suppress(ValueError):
                        missing = json.load(exc).get("missing", missing)
                except OSError as exc:
                    missing = f"the gateway: {exc}"
            time.sleep(0.25)
        raise StartError(
            f"not ready after {self.settings.ready_timeout:.0f} s ({missing}); "
            f"TorchServe's logs are in {ts.log_dir}"
        )

    def watch(self) -> None:
        """Until one of them exits (StartError) or a Stop."""
        while True:
            time.sleep(1.0)
            self._check_alive()

    def _check_alive(self) -> None:
        if self.redis is not None and self.redis.poll() is not None:
            raise StartError(
                f"Redis exited (status {self.redis.returncode}); the end of "
                f"{self.settings.redis_log}:\n{self.redis_log_tail()}"
            )
        if self.gateway is not None and self.gateway.poll() is not None:
            raise StartError(f"the gateway exited (status {self.gateway.returncode}); see above")
        if self.worker is not None and self.worker.poll() is not None:
            raise StartError(f"the job worker exited (status {self.worker.returncode}); see above")
        if self.torchserve_started and self.settings.torchserve.pid is None:
            raise StartError(
                "TorchServe exited; the end of its logs:\n" + self.settings.torchserve.log_tail(15)
            )

    def stop(self) -> None:
        """The gateway and the worker first, side by side (their requests and jobs in flight
        still need the models and Redis), then Redis, then TorchServe."""
        s = self.settings
        self._stop_side_by_side(
            (self.gateway, "the gateway", _graceful_timeout(s.gateway_env) + 5,
             s.gateway_pid_file),
            (self.worker, "the job worker (its jobs finish or go back to the queue)",
             s.worker_grace + 5, s.worker_pid_file),
        )  # fmt: skip
        self._stop_side_by_side((self.redis, "Redis", REDIS_STOP_S, s.redis_pid_file))
        if self.torchserve_started:
            if s.torchserve.pid is not None:
                say("stopping TorchServe...")
            s.torchserve.stop()
        self.watchdog.done()

    @staticmethod
    def _stop_side_by_side(*servers: tuple[subprocess.Popen | None, str, float, Path]) -> None:
        """Each (process, name, timeout, pid file) of `servers` that runs, stopped at once
        (`stop_leaders`), its pid file removed."""
        running = [server for server in servers if server[0] is not None]
        for proc, name, _, _ in running:
            if proc.poll() is None:
                say(f"stopping {name}...")
        stop_leaders([(proc.pid, timeout) for proc, _, timeout, _ in running])
        for proc, _, _, pid_file in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            pid_file.unlink(missing_ok=True)


def print_ready(settings: Settings) -> None:
    sample = REPO / "gateway" / "sample_drawing.jpg"
    where = settings.storage_url.removeprefix("file://")
    # The key is named, never printed: it is in the environment of whoever runs this.
    key = ' -H "Authorization: Bearer $API_KEY"' if settings.gateway_env.get("API_KEY") else ""
    running = (
        ", ".join(
            ["the gateway"]
            + ["the job worker"] * bool(settings.redis_url)
            + ["Redis"] * bool(settings.redis_server)
        )
        + " and TorchServe"
    )
    say(
        f"\nReady: {settings.url}   (GIFs are stored in {where})\nTry it:\n\n"
        f"  curl -s{key} -F image=@{sample} {settings.url}/animate\n\n"
        f'It answers {{"dab": "{settings.url}/files/...gif", ...}}; open the URLs in a '
        f"browser.\nCtrl-C stops {running}."
    )


# --- main --------------------------------------------------------------------------------
def run(settings: Settings) -> int:
    with owner_lock(settings.state_dir) as lock_fd:
        stop_leftovers(settings)
        check_ports_free(settings)
        servers = Servers(settings, Watchdog(lock_fd))
        try:
            servers.start()
            servers.wait_ready()
            print_ready(settings)
            servers.watch()
            return 0
        except StartError as exc:
            say(f"make run: {exc}", err=True)
            return 1
        except Stop:  # asked to stop, and stopped cleanly: not a failure
            return 0
        finally:
            _Signals.stopping = True  # from here on, a signal changes nothing
            servers.stop()
            say("stopped.")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--watchdog"]:
        return watchdog_main()
    parent = int(os.environ.pop("DEVSERVER_PARENT", "") or os.getppid())
    _Signals.install()
    try:
        die_with_parent()
        check_parent_alive(parent)
        return run(Settings.from_env(dict(os.environ)))
    except StartError as exc:
        say(f"make run: {exc}", err=True)
        return 1
    except Stop:  # before anything was started
        return 0


if __name__ == "__main__":
    sys.exit(main())
