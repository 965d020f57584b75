"""`make run` owns its servers: every way of stopping it stops them all, and it starts again.

A cycle runs the real `make run` (TorchServe with the project's archives, gunicorn with the
gevent worker, Debian's redis-server and one job worker) on free loopback ports with its
own state folders, waits for the gateway's /ready to answer 200, checks that Redis answers
on its port and the worker runs, waits a random moment, stops it one way, then checks that
every process it had started is gone and that nothing listens on its ports. The next
cycle's start checks that it starts again every time (and one last start after the last
stop). Without redis-server (`make sysdeps` installs it, as root) there is no Redis and no
worker, and the cycles check that make run says jobs run in the gateway.

Ways of stopping it: SIGINT or SIGTERM to the script (the supervisor), SIGTERM to the whole
process group (what `timeout`, a CI job or a process manager sends), SIGHUP to the group
(the terminal closed), SIGKILL to its parent (`make`), SIGKILL to the script itself, and
SIGKILL to the job worker (make run says so and stops the rest).

One cycle takes 10-15 s on a quiet 2-core machine (TorchServe loads two models), so the
suite runs MAKE_RUN_STOP_CYCLES=1 cycle per way; the issue's ten per way:
    MAKE_RUN_STOP_CYCLES=10 .venv/bin/python -m pytest tests/deploy/test_make_run.py -s
(-s prints each cycle's start and stop times; MAKE_RUN_STOP_SEED repeats a run's moments).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import redis
import requests

from gateway.tools.devserver import TORCHSERVE_NICENESS, Settings
from torchserve.server import (
    DEFAULT_CONFIG,
    DEFAULT_MODEL_STORE,
    PORT_KEYS,
    TorchServe,
    free_ports,
    group_alive,
    write_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CYCLES = int(os.environ.get("MAKE_RUN_STOP_CYCLES", "1"))
SEED = int(os.environ.get("MAKE_RUN_STOP_SEED", str(random.randrange(1_000_000))))
REDIS_SERVER = shutil.which("redis-server")
WAYS = ("sigint-script", "sigterm-script", "sigterm-group", "sighup-group", "kill-parent",
        "kill-script", *(("kill-worker",) if REDIS_SERVER else ()))  # fmt: skip
READY_TIMEOUT_S = 180.0
GONE_TIMEOUT_S = 60.0  # the gateway drains (nothing in flight here), TorchServe stops


@dataclass
class Instance:
    """The environment of one `make run` of this checkout, on ports nobody else uses."""

    root: Path
    env: dict[str, str]
    gateway_port: int
    torchserve_ports: list[int]
    redis_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    def ports(self) -> list[int]:
        return [self.gateway_port, *self.torchserve_ports, self.redis_port]

    def torchserve(self) -> TorchServe:
        return TorchServe(
            Path(self.env["TS_CONFIG"]), DEFAULT_MODEL_STORE, Path(self.env["TS_STATE_DIR"])
        )


def new_instance(root: Path) -> Instance:
    ports = free_ports(len(PORT_KEYS) + 2)
    ts_ports = dict(zip(PORT_KEYS, ports[1:-1], strict=True))
    config = write_config(DEFAULT_CONFIG, root / "config.properties", ts_ports, DEFAULT_MODEL_STORE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    for name in ("PROMETHEUS_MULTIPROC_DIR", "REDIS_URL"):
        env.pop(name, None)
    env.update(
        GUNICORN_BIND=f"127.0.0.1:{ports[0]}",
        TS_CONFIG=str(config),
        TS_STATE_DIR=str(root / "torchserve"),
        RUN_STATE_DIR=str(root / "make-run"),
        STORAGE_URL=f"file://{root / 'animations'}",
        RENDER_WORKERS="1",
        REDIS_PORT=str(ports[-1]),
        REDIS_STATE_DIR=str(root / "redis"),
    )
    return Instance(root, env, ports[0], ports[1:-1], ports[-1])


class MakeRun:
    """One `make run`, in its own process group, its output in a file."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.log = instance.root / f"make-run-{time.monotonic_ns()}.log"
        with self.log.open("wb") as out:
            self.make = subprocess.Popen(
                ["make", "--no-print-directory", "run"], cwd=REPO, env=instance.env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> float:
        """Seconds until /ready answered 200."""
        start = time.monotonic()
        while time.monotonic() - start < READY_TIMEOUT_S:
            if self.make.poll() is not None:
                raise AssertionError(f"make run exited {self.make.returncode}:\n{self.tail()}")
            try:
                if requests.get(f"{self.instance.url}/ready", timeout=2).status_code == 200:
                    return time.monotonic() - start
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise AssertionError(f"make run not ready in {READY_TIMEOUT_S} s:\n{self.tail()}")

    def supervisor(self) -> psutil.Process:
        for proc in psutil.Process(self.make.pid).children():
            if _cmdline(proc)[-1:] == ["gateway.tools.devserver"]:
                return proc
        raise AssertionError(f"no supervisor under make:\n{self.tail()}")

    def processes(self) -> list[psutil.Process]:
        """make, the supervisor, its watchdog and the servers with all their children."""
        try:
            make = psutil.Process(self.make.pid)
            return [make, *make.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def stop(self, way: str) -> None:
        supervisor = self.supervisor()
        if way == "sigint-script":
            supervisor.send_signal(signal.SIGINT)
        elif way == "sigterm-script":
            supervisor.send_signal(signal.SIGTERM)
        elif way == "sigterm-group":
            os.killpg(self.make.pid, signal.SIGTERM)
        elif way == "sighup-group":
            os.killpg(self.make.pid, signal.SIGHUP)
        elif way == "kill-parent":
            self.make.kill()
        elif way == "kill-script":
            supervisor.kill()
        elif way == "kill-worker":
            worker(self.processes()).kill()
        else:
            raise ValueError(way)

    def kill_everything(self) -> None:
        """After a failed test: nothing of this run may outlive it."""
        for proc in self.processes():
            for pgid in {_pgid(proc.pid)} - {None, os.getpgid(0)}:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except OSError:
                    pass
        self.make.wait(timeout=10)


def assert_torchserve_yields_to_the_gateway(procs: list[psutil.Process], ts_group: int) -> None:
    """TorchServe's whole process group (launcher, Java, the model workers) runs niced, and
    so does its scheduling group where the kernel has autogroups; the gateway's event
    loop does not."""
    torchserve = [p for p in procs if _pgid(p.pid) == ts_group]
    assert len(torchserve) >= 2
    assert {p.nice() for p in torchserve} == {TORCHSERVE_NICENESS}
    gunicorn = [p for p in procs if "gunicorn" in " ".join(_cmdline(p))]
    assert gunicorn and {p.nice() for p in gunicorn} == {0}
    autogroup = Path(f"/proc/{ts_group}/autogroup")
    if autogroup.is_file():  # "/autogroup-13 nice 10"
        assert autogroup.read_text().split()[-1] == str(TORCHSERVE_NICENESS)


def worker(procs: list[psutil.Process]) -> psutil.Process:
    """The job worker (`python -m gateway.worker`, not its render processes)."""
    (found,) = [p for p in procs if _cmdline(p)[-2:] == ["-m", "gateway.worker"]]
    return found


def assert_redis_and_worker_run(run: MakeRun, procs: list[psutil.Process], check_config: bool):
    """Redis answers on its port, loopback only, every write synced to its append-only
    file in the run's state folder; one worker runs, pointed at it, in a session of its own.
    Without redis-server: neither, and make run says that jobs run in the gateway."""
    instance = run.instance
    if not REDIS_SERVER:
        assert not [p for p in procs if "gateway.worker" in " ".join(_cmdline(p))]
        assert "the gateway runs jobs in its embedded queue" in run.output()
        return
    url = f"redis://127.0.0.1:{instance.redis_port}/0"
    (server,) = [p for p in procs if p.name() == "redis-server"]
    job_worker = worker(procs)
    assert job_worker.environ()["REDIS_URL"] == url
    assert _pgid(job_worker.pid) == job_worker.pid and _pgid(server.pid) == server.pid
    assert f"jobs: queued in Redis on 127.0.0.1:{instance.redis_port}" in run.output()
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        assert client.ping()
        if check_config:
            config = client.config_get("*")
            assert config["bind"] == "127.0.0.1" and config["protected-mode"] == "yes"
            assert (config["appendonly"], config["appendfsync"]) == ("yes", "always")
            assert config["save"] == "" and config["requirepass"] == ""
            assert config["dir"] == instance.env["REDIS_STATE_DIR"]
    finally:
        client.close()


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_all_gone(procs: list[psutil.Process], ports: list[int], timeout: float) -> float:
    """Seconds until none of `procs` runs and no port listens; AssertionError naming them."""
    start = time.monotonic()
    while True:
        alive = [p for p in procs if _alive(p)]
        open_ports = [port for port in ports if listening(port)]
        if not alive and not open_ports:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            names = [f"{p.pid} {' '.join(_cmdline(p))[:100]}" for p in alive if _alive(p)]
            raise AssertionError(f"left running: {names}; listening: {open_ports}")
        time.sleep(0.1)


def wait_listening(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not listening(port) and time.monotonic() < deadline:
        time.sleep(0.2)


def _cmdline(proc: psutil.Process) -> list[str]:
    """`proc`'s command line; empty for a process that has exited (a zombie, or gone),
    whose command line can no longer be read."""
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture(scope="module")
def prerequisites_built() -> None:
    """make run builds .venv and the archives first when they are stale: not in a test."""
    targets = [".venv/.installed", *(str(p) for p in DEFAULT_MODEL_STORE.glob("*.mar"))]
    up_to_date = subprocess.run(["make", "-q", *targets], cwd=REPO, capture_output=True)
    if len(targets) < 3 or up_to_date.returncode != 0:
        pytest.fail("make run would rebuild .venv or the model archives: run `make venv models`")


@pytest.fixture
def instance(tmp_path: Path, prerequisites_built: None) -> Iterator[Instance]:
    yield new_instance(tmp_path)


@pytest.fixture
def make_runs(instance: Instance) -> Iterator[list[MakeRun]]:
    """Every MakeRun a test starts; whatever is left of them is killed at the end."""
    runs: list[MakeRun] = []
    try:
        yield runs
    finally:
        for run in runs:
            if run.make.poll() is None:
                run.kill_everything()
        instance.torchserve().kill()
        for name in ("gateway", "worker", "redis"):
            pid_file = Path(instance.env["RUN_STATE_DIR"]) / f"{name}.pid"
            if pid_file.is_file() and group_alive(pgid := int(pid_file.read_text())):
                os.killpg(pgid, signal.SIGKILL)


def start(instance: Instance, runs: list[MakeRun]) -> MakeRun:
    runs.append(MakeRun(instance))
    return runs[-1]


@pytest.mark.timeout(150 * (CYCLES * len(WAYS) + 1))
def test_every_way_of_stopping_make_run_stops_every_server(instance, make_runs):
    rng = random.Random(SEED)
    ways = [way for _ in range(CYCLES) for way in WAYS]
    rng.shuffle(ways)
    print(f"\nseed {SEED}; {len(ways)} cycles")
    for i, way in enumerate([*ways, "sigint-script"]):
        run = start(instance, make_runs)
        ready_s = run.wait_ready()
        started = run.processes()
        ts_group = instance.torchserve().pid
        assert ts_group is not None and any(p.pid == ts_group for p in started)
        if i == 0:
            assert_torchserve_yields_to_the_gateway(started, ts_group)
        assert_redis_and_worker_run(run, started, check_config=i == 0)
        moment = rng.uniform(0.0, 2.0)
        time.sleep(moment)
        stopped_at = time.monotonic()
        run.stop(way)
        if way != "kill-parent":
            run.make.wait(timeout=GONE_TIMEOUT_S)
        gone_s = wait_all_gone(started, instance.ports(), GONE_TIMEOUT_S)
        assert not group_alive(ts_group)
        print(f"cycle {i:2d} {way:15s} ready {ready_s:5.1f} s, stopped {moment:.2f} s later, "
              f"all gone {time.monotonic() - stopped_at:5.1f} s after ({gone_s:.1f} s after make)")  # fmt: skip
        if way in ("sigint-script", "sigterm-script"):
            assert "stopped." in run.output(), run.tail()
        if way == "kill-worker":
            assert run.make.returncode != 0
            assert "the job worker exited (status -9)" in run.output(), run.tail()


def _leftover(command: list[str], env: dict[str, str], pid_file: str) -> subprocess.Popen:
    """A server an earlier run left: in a session of its own, its pid in RUN_STATE_DIR."""
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    Path(env["RUN_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
    (Path(env["RUN_STATE_DIR"]) / pid_file).write_text(f"{proc.pid}\n")
    return proc


@pytest.mark.timeout(400)
def test_leftovers_of_this_checkout_are_replaced_and_a_running_one_is_not(instance, make_runs):
    # What an earlier run that died without its watchdog leaves: TorchServe in the state
    # folder; a gateway, a job worker and Redis (on make run's port) whose pids the run's
    # state folder holds.
    env = instance.env
    subprocess.run([REPO / "torchserve" / "start.sh"], env=env, check=True, timeout=200,
                   capture_output=True)  # fmt: skip
    old_torchserve = instance.torchserve().pid
    python = str(REPO / ".venv" / "bin" / "python")
    old = {"gateway": _leftover([python, "-m", "gateway"], env, "gateway.pid")}
    try:
        if REDIS_SERVER:
            old_redis_dir = instance.root / "old-redis"
            old_redis_dir.mkdir()
            old["Redis"] = _leftover(
                [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(instance.redis_port),
                 "--save", "", "--dir", str(old_redis_dir)], env, "redis.pid",
            )  # fmt: skip
            wait_listening(instance.redis_port)
            worker_env = {**env, "REDIS_URL": f"redis://127.0.0.1:{instance.redis_port}/0"}
            old["job worker"] = _leftover(
                [python, "-m", "gateway.worker"], worker_env, "worker.pid"
            )
        wait_listening(instance.gateway_port)
        assert all(proc.poll() is None for proc in old.values())
        run = start(instance, make_runs)
        run.wait_ready()
        out = run.output()
        for name, proc in old.items():
            assert f"stopping the {name} an earlier `make run` left running (pid {proc.pid})" in out
            assert proc.poll() is not None and not group_alive(proc.pid)
        assert (
            f"stopping the TorchServe an earlier `make run` left running (pid {old_torchserve})"
            in out
        )
        assert not group_alive(old_torchserve)
        assert instance.torchserve().pid not in (None, old_torchserve)
        assert_redis_and_worker_run(run, run.processes(), check_config=True)

        # A second make run of the same checkout while this one runs: told, nothing touched.
        second = start(instance, make_runs)
        assert second.make.wait(timeout=60) != 0
        supervisor = run.supervisor().pid
        assert (
            f"another `make run` of this checkout is running (pid {supervisor})" in second.output()
        )
        assert f"kill {supervisor}" in second.output()
        assert requests.get(f"{instance.url}/ready", timeout=5).status_code == 200

        started = run.processes()
        run.stop("sigint-script")
        run.make.wait(timeout=GONE_TIMEOUT_S)
        wait_all_gone(started, instance.ports(), 10)
    finally:
        for proc in old.values():
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_stranger_on_the_gateway_port_is_named_with_the_command_that_stops_it(
    instance, make_runs
):
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", instance.gateway_port))
        stranger.listen()
        run = start(instance, make_runs)
        assert run.make.wait(timeout=60) != 0
    out = run.output()
    assert (
        f"127.0.0.1:{instance.gateway_port} (the gateway's address) is taken by pid {os.getpid()}"
        in out
    )
    assert f"Stop it with: kill {os.getpid()}" in out
    assert f"GUNICORN_BIND=127.0.0.1:{instance.gateway_port + 1} make run" in out
    assert instance.torchserve().pid is None  # nothing was started


@pytest.mark.skipif(not REDIS_SERVER, reason="redis-server is not installed (make sysdeps)")
def test_a_stranger_on_the_redis_port_is_named_with_the_command_that_stops_it(instance, make_runs):
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", instance.redis_port))
        stranger.listen()
        run = start(instance, make_runs)
        assert run.make.wait(timeout=60) != 0
    out = run.output()
    port = instance.redis_port
    assert f"127.0.0.1:{port} (Redis's port, REDIS_PORT) is taken by pid {os.getpid()}" in out
    assert f"Stop it with: kill {os.getpid()}" in out
    assert f"REDIS_PORT={port + 1} make run" in out
    assert instance.torchserve().pid is None and not listening(instance.gateway_port)


@pytest.mark.parametrize("redis_url", [None, "redis://:s3cret@redis.example:6379/2"])
@pytest.mark.parametrize("installed", [True, False])
def test_where_jobs_run_follows_redis_server_and_redis_url(tmp_path, redis_url, installed):
    """A Redis of make run's when redis-server is on PATH and REDIS_URL is not set; a
    worker whenever there is a Redis; otherwise the gateway's embedded queue. One line
    says which, never with a password."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if installed:
        (bin_dir / "redis-server").write_text("#!/bin/sh\n")
        (bin_dir / "redis-server").chmod(0o755)
    environ = {"PATH": str(bin_dir), "REDIS_PORT": "6999"}
    if redis_url:
        environ["REDIS_URL"] = redis_url
    settings = Settings.from_env(environ)
    line = settings.jobs_line()
    assert "s3cret" not in line and "\n" not in line
    if redis_url:
        assert settings.redis_server is None and settings.redis_url == redis_url
        assert "REDIS_URL is set (redis://***@redis.example:6379/2)" in line
    elif installed:
        assert settings.redis_server == str(bin_dir / "redis-server")
        assert settings.redis_url == "redis://127.0.0.1:6999/0"
        assert "queued in Redis on 127.0.0.1:6999" in line
    else:
        assert settings.redis_server is None and settings.redis_url is None
        assert "no worker; the gateway runs jobs in its embedded queue" in line
    assert settings.gateway_env.get("REDIS_URL") == settings.redis_url


def test_a_stranger_on_a_torchserve_port_is_named_with_the_command_that_stops_it(
    instance, make_runs
):
    port = instance.torchserve_ports[1]  # the management API
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", port))
        stranger.listen()
        run = start(instance, make_runs)
        assert run.make.wait(timeout=60) != 0
    out = run.output()
    assert f"127.0.0.1:{port} (management_address in {instance.env['TS_CONFIG']})" in out
    assert f"is taken by pid {os.getpid()}" in out
    # Only the listener: its process group (this test run's) holds more than TorchServe.
    assert f"Stop it with: kill {os.getpid()}\n" in out
    assert f"-{os.getpgid(0)}" not in out
    assert instance.torchserve().pid is None and not listening(instance.gateway_port)
