"""Start, watch and stop one TorchServe instance serving the drawing models.

    python -m torchserve.server start|stop|status [--state-dir DIR]

Used by torchserve/start.sh and stop.sh (`make run`), by the test fixture
(tests/support/torchserve.py) and by the benchmark. Each instance has its own state folder:
its TEMP (TorchServe's pid file and the worker sockets live there, so instances never
collide), its logs, and the pid of its process group (launcher, Java frontend, Python
workers), which `stop` ends as a whole.

Ready means every model it serves has a worker with status READY on the management API;
TorchServe's /ping says Healthy long before that. It serves every model in `load_models`,
bar an optional one (the segmenter, which AnimatedDrawings' archives lack) that the model
store has no archive for: TorchServe 0.12 logs "Failed to load model" for that one and serves
the others, and readiness does not wait for it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from torchserve.build_archives import OPTIONAL_MODELS, console_script

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
DEFAULT_CONFIG = PACKAGE / "config.properties"
DEFAULT_MODEL_STORE = PACKAGE / "model-store"
DEFAULT_STATE_DIR = REPO / "var" / "torchserve"
ADDRESS_KEYS = ("inference_address", "management_address", "metrics_address")
# Every port an instance listens on; a private instance gets a free one for each.
PORT_KEYS = (*ADDRESS_KEYS, "grpc_inference_port", "grpc_management_port")


class TorchServeError(RuntimeError):
    """TorchServe did not start, or died; the message ends with the tail of its logs."""


def read_properties(path: Path) -> dict[str, str]:
    """The key=value pairs of a Java properties file (continuation lines joined)."""
    text = path.read_text().replace("\\\n", "")
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs if not key.startswith("#")}


def write_config(source: Path, target: Path, ports: dict[str, int], model_store: Path) -> Path:
    """A copy of `source` listening on 127.0.0.1 at `ports` (keyed like PORT_KEYS)."""
    lines = []
    for line in source.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        if key in ports and key in ADDRESS_KEYS:
            line = f"{key}=http://127.0.0.1:{ports[key]}"
        elif key in ports:
            line = f"{key}={ports[key]}"
        elif key == "model_store":
            line = f"model_store={model_store}"
        lines.append(line)
    target.write_text("\n".join(lines) + "\n")
    return target


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 right now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def lower_priority(session_leader: int, niceness: int) -> None:
    """Nice the scheduling group of `session_leader`'s session as a whole (Linux's
    autogroups, on by default on desktops and on these machines): a process's own nice
    only weighs against the other processes of its group, so a niced TorchServe in a
    session of its own would still take half the cores from the gateway's."""
    try:
        with open(f"/proc/{session_leader}/autogroup", "w") as group:
            group.write(f"{niceness}\n")
    except OSError:  # no autogroups (another kernel, or switched off), or not allowed
        pass


def private_instance(root: Path, model_store: Path = DEFAULT_MODEL_STORE) -> TorchServe:
    """A TorchServe (not started) on free loopback ports, with config and state under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    ports = dict(zip(PORT_KEYS, free_ports(len(PORT_KEYS)), strict=True))
    config = write_config(DEFAULT_CONFIG, root / "config.properties", ports, model_store)
    return TorchServe(config=config, model_store=model_store, state_dir=root / "state")


@dataclass
class TorchServe:
    """One TorchServe instance, described by its config file, model store and state folder."""

    config: Path = DEFAULT_CONFIG
    model_store: Path = DEFAULT_MODEL_STORE
    state_dir: Path = DEFAULT_STATE_DIR
    torchserve_bin: str = field(default_factory=lambda: console_script("torchserve"))
    # CPU priority of the whole instance (0: as the caller's); see `lower_priority`.
    niceness: int = 0

    def __post_init__(self) -> None:
        properties = read_properties(self.config)
        self.inference_url, self.management_url, self.metrics_url = (
            properties[key] for key in ADDRESS_KEYS
        )
        self.models = tuple(
            name.strip().removesuffix(".mar") for name in properties["load_models"].split(",")
        )
        self.temp_dir = self.state_dir / "tmp"
        self.log_dir = self.state_dir / "logs"
        self.pid_file = self.state_dir / "torchserve.pid"
        self.process: subprocess.Popen | None = None

    @property
    def served_models(self) -> tuple[str, ...]:
        """The models of `load_models` this instance serves: all but an optional one whose
        archive is not in the model store."""
        return tuple(
            name
            for name in self.models
            if name not in OPTIONAL_MODELS or (self.model_store / f"{name}.mar").is_file()
        )

    # --- lifecycle -------------------------------------------------------------
    def start(self, timeout: float = 180.0) -> None:
        """Launch TorchServe in a new process group and return once every model is READY."""
        self.launch()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def launch(self) -> int:
        """Start TorchServe in a new process group and return its id at once (not yet READY)."""
        if self.pid is not None:
            raise TorchServeError(f"TorchServe already running (pid {self.pid}); stop it first")
        missing = [m for m in self.served_models if not (self.model_store / f"{m}.mar").is_file()]
        if missing:
            raise TorchServeError(
                f"no archive for {', '.join(missing)} in {self.model_store}; run `make models`"
            )
        for folder in (self.temp_dir, self.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "TEMP": str(self.temp_dir),
            "LOG_LOCATION": str(self.log_dir),
            "METRICS_LOCATION": str(self.log_dir),
            # Without this every worker starts one thread per core and latency gets many times
            # worse.
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        command = [
            self.torchserve_bin,
            "--start",
            "--foreground",
            "--ts-config",
            str(self.config),
            "--model-store",
            str(self.model_store),
            "--disable-token-auth",
            "--ncs",
        ]
        with open(self.log_dir / "console.log", "ab") as console:
            self.process = subprocess.Popen(
                command,
                cwd=self.state_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends it all at once
                preexec_fn=(lambda: os.nice(self.niceness)) if self.niceness else None,
            )
        if self.niceness:
            lower_priority(self.process.pid, self.niceness)
        self.pid_file.write_text(str(self.process.pid))
        return self.process.pid

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Block until each model has a READY worker; raise with the log tail if it cannot."""
        deadline = time.monotonic() + timeout
        waiting = list(self.served_models)
        while waiting:
            if self.pid is None:
                raise TorchServeError(f"TorchServe exited during start-up\n{self.log_tail()}")
            waiting = [name for name in waiting if not self.model_ready(name)]
            if waiting and time.monotonic() > deadline:
                raise TorchServeError(
                    f"no READY worker for {', '.join(waiting)} after {timeout:.0f} s\n{self.log_tail()}"
                )
            if waiting:
                time.sleep(0.25)

    def model_ready(self, name: str) -> bool:
        """Whether `name` has a worker with status READY (the management API's view)."""
        try:
            with urllib.request.urlopen(f"{self.management_url}/models/{name}", timeout=2) as reply:
                described = json.load(reply)
        except (OSError, ValueError):  # not listening yet, or mid-start
            return False
        return any(
            worker.get("status") == "READY"
            for model in described
            for worker in model.get("workers", [])
        )

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the whole process group, SIGKILL what is left after `timeout`; idempotent."""
        self._signal_group(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """End TorchServe at once, as a crash would (fault tests)."""
        self._signal_group(signal.SIGKILL, 10.0)

    def restart(self, timeout: float = 180.0) -> None:
        self.stop()
        self.start(timeout)

    def ensure_running(self, timeout: float = 180.0) -> None:
        """Start it if it is down (a test killed it); else wait until its workers are READY."""
        if self.pid is None:
            self.start(timeout)
        else:
            self.wait_ready(timeout)

    # --- state -------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """Id of the running instance's process group (its launcher's pid), or None."""
        self._reap()
        if self.process is not None:
            pgid = self.process.pid
        else:
            try:
                pgid = int(self.pid_file.read_text())
            except (OSError, ValueError):
                return None
        return pgid if group_alive(pgid) else None

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for name in ("console.log", "ts_log.log", "model_log.log"):
            path = self.log_dir / name
            if path.is_file():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path} ---\n" + "\n".join(tail))
        return "\n".join(parts)

    def _signal_group(self, sig: signal.Signals, timeout: float) -> None:
        pgid = self.pid
        if pgid is not None:
            # The group, not the launcher: the Java frontend and the workers must go too.
            os.killpg(pgid, sig)
            deadline = time.monotonic() + timeout
            while self.pid is not None and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.pid is not None:
                os.killpg(pgid, signal.SIGKILL)
                deadline = time.monotonic() + 10
                while self.pid is not None and time.monotonic() < deadline:
                    time.sleep(0.05)
        self.pid_file.unlink(missing_ok=True)
        # The launcher died with the group before it could remove its own pid file.
        (self.temp_dir / ".model_server.pid").unlink(missing_ok=True)

    def _reap(self) -> None:
        if self.process is not None:
            self.process.poll()


def group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` still runs (zombies waiting to be reaped do not)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the id is someone else's now
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            # Fields after the ")" that closes the command name: state, ppid, pgrp, ...
            state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start or stop TorchServe for the drawing models")
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--model-store", type=Path, default=DEFAULT_MODEL_STORE)
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for READY")
    args = parser.parse_args(argv)
    server = TorchServe(args.config.resolve(), args.model_store.resolve(), args.state_dir.resolve())
    if args.action == "start":
        try:
            server.start(args.timeout)
        except TorchServeError as error:
            print(f"torchserve: {error}", file=sys.stderr)
            return 1
        print(
            f"TorchServe ready at {server.inference_url} (pid {server.pid}, logs in {server.log_dir})"
        )
    elif args.action == "stop":
        server.stop()
        print("TorchServe stopped")
    else:
        ready = server.pid is not None and all(server.model_ready(m) for m in server.served_models)
        print(f"TorchServe {'ready' if ready else 'not ready'} at {server.inference_url}")
        return 0 if ready else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
