"""A throwaway single-node Ceph cluster with radosgw on loopback, for real S3 signatures.

moto accepts any signature; Ceph's radosgw checks them, and the expiry of presigned URLs,
the way AWS does. The fixture builds a cluster in a temporary folder: one monitor (v1
protocol on a free port), one OSD on memstore (nothing touches the disk but logs), radosgw's
beast frontend on a free port, and an S3 user made with radosgw-admin. cephx stays on: with
it off, a daemon may send its first command before it knows the cluster's fsid and be
refused. About 2 s to start (8 s on a busy machine); killed and deleted after the session.

The Debian packages come from `make sysdeps` (root only); without them the tests that use
this fixture skip, saying so.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import requests
from botocore.config import Config

BINARIES = (
    "ceph",
    "ceph-mon",
    "ceph-osd",
    "radosgw",
    "radosgw-admin",
    "monmaptool",
    "ceph-authtool",
)
START_TIMEOUT_S = 60
ALL = "allow *"
KEYS = {
    "mon.": ["--cap", "mon", ALL],
    "client.admin": ["--cap", "mon", ALL, "--cap", "osd", ALL, "--cap", "mgr", ALL],
    "osd.0": ["--cap", "mon", "allow profile osd", "--cap", "osd", ALL],
    "client.rgw": ["--cap", "mon", "allow rw", "--cap", "osd", "allow rwx"],
}

CEPH_CONF = """\
[global]
fsid = {fsid}
mon host = [v1:127.0.0.1:{mon_port}]
mon initial members = a
public addr = 127.0.0.1
ms bind msgr2 = false
ms bind ipv6 = false
run dir = {dir}/run
admin socket = {dir}/run/$name.asok
log file = {dir}/log/$name.log
pid file = {dir}/run/$name.pid
keyring = {dir}/keyring
mon data = {dir}/mon/$id
osd data = {dir}/osd/$id
osd objectstore = memstore
memstore device bytes = 1073741824
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
# A lone monitor need not batch its map updates (1 s by default): pools appear at once.
paxos propose interval = 0.01
paxos min wait = 0.01

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw data = {dir}/rgw
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RadosGW:
    endpoint_url: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    def client(self, secret_key: str | None = None):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=secret_key or self.secret_key,
            region_name=self.region,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )

    def make_bucket(self) -> str:
        name = f"test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def env(self, storage_url: str) -> dict[str, str]:
        """Gateway environment for storing into this radosgw."""
        return {
            "STORAGE_URL": storage_url,
            "S3_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": self.region,
        }


class CephCluster:
    """The daemons of one throwaway cluster, each in its own process group."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "ceph.conf"
        self.daemons: list[subprocess.Popen] = []

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [*args, "-c", str(self.conf)], capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def start(self, *args: str) -> None:
        log = open(self.root / "log" / f"{args[0]}.out", "wb")  # noqa: SIM115 - daemon's life
        self.daemons.append(
            subprocess.Popen(
                [*args, "-c", str(self.conf), "-f"],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        log.close()

    def check_alive(self) -> None:
        for proc in self.daemons:
            if proc.poll() is not None:
                name = Path(proc.args[0]).name
                tail = (self.root / "log" / f"{name}.out").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}: {tail}")

    def stop(self) -> None:
        # A throwaway cluster has nothing to flush: kill at once, then reap.
        for proc in self.daemons:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self.daemons:
            proc.wait(timeout=10)


def start_radosgw(cluster: CephCluster) -> RadosGW:
    root, mon_port, rgw_port = cluster.root, free_port(), free_port()
    for sub in ("mon/a", "osd/0", "run", "log", "rgw"):
        (root / sub).mkdir(parents=True)
    fsid, osd_uuid = uuid.uuid4(), uuid.uuid4()
    cluster.conf.write_text(
        CEPH_CONF.format(fsid=fsid, mon_port=mon_port, rgw_port=rgw_port, dir=root)
    )
    keyring, monmap = str(root / "keyring"), str(root / "monmap")
    # One keyring for every daemon and client of this throwaway cluster.
    for i, (name, caps) in enumerate(KEYS.items()):
        create = [] if i else ["--create-keyring"]
        subprocess.run(
            ["ceph-authtool", keyring, *create, "--gen-key", "-n", name, *caps],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
    subprocess.run(
        ["monmaptool", "--create", "--fsid", str(fsid), "--addv", "a",
         f"[v1:127.0.0.1:{mon_port}]", monmap],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    cluster.run("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", keyring)
    cluster.start("ceph-mon", "-i", "a")
    cluster.run("ceph", "--connect-timeout", "20", "osd", "new", str(osd_uuid), "0")
    cluster.run("ceph-osd", "-i", "0", "--mkfs", "--osd-uuid", str(osd_uuid))
    cluster.start("ceph-osd", "-i", "0")
    cluster.start("radosgw", "-n", "client.rgw")

    endpoint = f"http://127.0.0.1:{rgw_port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        cluster.check_alive()
        try:
            requests.get(endpoint, timeout=1)
            break
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"radosgw did not listen on {endpoint} in time") from None
            time.sleep(0.2)
    access_key, secret_key = uuid.uuid4().hex[:20].upper(), uuid.uuid4().hex + uuid.uuid4().hex[:8]
    cluster.run(
        "radosgw-admin", "user", "create", "--uid", "gateway-test", "--display-name",
        "gateway test", "--access-key", access_key, "--secret-key", secret_key,
    )  # fmt: skip
    return RadosGW(endpoint, access_key, secret_key)


@pytest.fixture(scope="session")
def radosgw_server() -> Iterator[RadosGW]:
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        pytest.skip(
            f"Ceph radosgw not installed (missing {', '.join(missing)}): "
            "`make sysdeps` installs radosgw ceph-mon ceph-osd when run as root"
        )
    cluster = CephCluster(Path(tempfile.mkdtemp(prefix="radosgw-")))
    try:
        yield start_radosgw(cluster)
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
