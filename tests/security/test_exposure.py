"""What can be reached from outside the pod, and where credentials could hide.

TorchServe's inference, management, metrics and gRPC APIs listen on loopback only (its
config, and the running server's sockets); the manifests publish the gateway's port alone;
no credential is written in the manifests, the Dockerfiles, what the images copy, or the
model archives.
"""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import zipfile
from pathlib import Path

import psutil
import pytest
import yaml

from torchserve.server import read_properties

ROOT = Path(__file__).resolve().parents[2]
TORCHSERVE_PORTS = {7070, 7071, 8080, 8081, 8082}
# An AWS access key id, a secret assigned a literal value, a private key, a bearer token.
CREDENTIAL = re.compile(
    rb"AKIA[0-9A-Z]{16}"
    rb"|(?i:aws_secret_access_key|secret_key|password|api_key)\s*[:=]\s*['\"][^'\"\s]{8,}['\"]"
    rb"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    rb"|(?i:authorization:\s*bearer\s+)[A-Za-z0-9._~+/-]{16,}"
)


def test_torchserve_config_binds_every_api_to_loopback():
    properties = read_properties(ROOT / "torchserve" / "config.properties")
    addresses = {k: v for k, v in properties.items() if k.endswith("_address")}
    assert {"inference_address", "management_address", "metrics_address"} <= set(addresses)
    for key, value in addresses.items():
        host = re.sub(r"^https?://", "", value).rsplit(":", 1)[0]
        assert host == "127.0.0.1", f"{key}={value} is reachable from outside the pod"
    assert properties.get("disable_token_authorization") == "true"  # so: loopback only


@pytest.mark.integration
def test_running_torchserve_listens_on_loopback_only(torchserve_server):
    group = torchserve_server.pid
    listening = [
        c
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid and _in_group(c.pid, group)
    ]
    assert listening, "found no socket of TorchServe's"
    exposed = [c.laddr for c in listening if not _loopback(c.laddr.ip)]
    assert not exposed


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    # Java listens on IPv4-mapped IPv6 sockets: ::ffff:127.0.0.1 is loopback too.
    address = getattr(address, "ipv4_mapped", None) or address
    return address.is_loopback


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except ProcessLookupError:
        return False


def test_manifests_publish_the_gateway_port_only_and_redis_inside_the_cluster():
    ports, services = {}, []
    for path in (ROOT / "k8s").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            ports[path.name] = ports.get(path.name, set()) | set(_ports(doc))
            if doc.get("kind") == "Service":
                services.append(doc)
    assert ports.pop("redis.yaml") == {6379}  # the job queue: the gateway and workers only
    assert set().union(*ports.values()) == {5000}
    for service in services:  # none reachable from outside the cluster
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP", service["metadata"]


def _ports(node) -> list[int]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in (
                "containerPort",
                "port",
                "targetPort",
                "hostPort",
                "nodePort",
            ) and isinstance(value, int):
                found.append(value)
            found += _ports(value)
    elif isinstance(node, list):
        for item in node:
            found += _ports(item)
    return found


def image_sources() -> list[Path]:
    """What a clean clone gives `docker build` (tracked files), but the tests and docs."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
    ).stdout.decode()
    files = [ROOT / name for name in listed.split("\0") if name]
    return [p for p in files if p.is_file() and p.parts[len(ROOT.parts)] not in ("tests", "docs")]


def test_no_credentials_in_manifests_dockerfiles_or_image_sources():
    paths = image_sources()
    assert ROOT / "Dockerfile.gateway" in paths and ROOT / "k8s" / "deployment.yaml" in paths
    leaks = [
        f"{p.relative_to(ROOT)}: {m.group(0)[:40]!r}"
        for p in paths
        for m in CREDENTIAL.finditer(p.read_bytes())
    ]
    assert not leaks


def test_the_deployment_takes_s3_keys_from_a_secret_reference():
    deployment = yaml.safe_load((ROOT / "k8s" / "deployment.yaml").read_text())
    gateway = next(c for c in deployment["spec"]["template"]["spec"]["containers"]
                   if c["name"] == "gateway")  # fmt: skip
    assert any("secretRef" in source for source in gateway["envFrom"])
    literal = {e["name"] for e in gateway["env"] if "value" in e}
    assert not literal & {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "API_KEY"}


@pytest.mark.integration
def test_model_archives_hold_no_credentials(torchserve_server):
    archives = list(Path(torchserve_server.model_store).glob("*.mar"))
    assert archives
    for archive in archives:
        with zipfile.ZipFile(archive) as mar:
            for name in mar.namelist():
                if not name.endswith((".pt", ".pth")):
                    assert not CREDENTIAL.search(mar.read(name)), f"{archive.name}:{name}"


@pytest.mark.parametrize(
    "leak",
    [
        b"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        b'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        b"  API_KEY: 'k-3f9a8b7c6d5e4f3a2b1c'",
        b"-----BEGIN OPENSSH PRIVATE KEY-----",
        b"curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc'",
    ],
)
def test_the_credential_pattern_catches_real_leaks(leak):
    assert CREDENTIAL.search(leak)
