"""The Kubernetes manifests in k8s/: valid for Kubernetes 1.30, and the pod DESIGN.md draws."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
BIN = Path(sys.executable).parent
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def load(name: str) -> dict:
    return yaml.safe_load((K8S / name).read_text())


@pytest.fixture(scope="module")
def pod() -> dict:
    return load("deployment.yaml")["spec"]["template"]


@pytest.fixture(scope="module")
def containers(pod) -> dict:
    return {c["name"]: c for c in pod["spec"]["containers"]}


def test_every_manifest_validates_strictly_against_kubernetes_1_30():
    run = subprocess.run(
        [BIN / "kubernetes-validate", "--strict", "-k", "1.30.0", "--quiet", *MANIFESTS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    kinds = {yaml.safe_load(p.read_text())["kind"] for p in MANIFESTS}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "ConfigMap", "ServiceAccount"} <= kinds  # fmt: skip


def test_kustomization_lists_every_manifest():
    kustomization = load("kustomization.yaml")
    assert sorted(kustomization["resources"]) == [p.name for p in MANIFESTS]
    images = {i["name"] for i in kustomization["images"]}
    assert {
        c["image"] for c in load("deployment.yaml")["spec"]["template"]["spec"]["containers"]
    } == images


def test_pod_has_two_containers_and_the_gpu_only_on_torchserve(containers):
    assert set(containers) == {"gateway", "torchserve"}
    assert containers["torchserve"]["resources"]["limits"]["nvidia.com/gpu"] == 1
    gateway = containers["gateway"]["resources"]
    assert not any("gpu" in k for part in gateway.values() for k in part)
    assert gateway["requests"]["cpu"] and gateway["limits"]["cpu"]


def test_only_the_gateway_port_leaves_the_pod(containers):
    assert containers["gateway"]["ports"] == [
        {"name": "http", "containerPort": 5000, "protocol": "TCP"}
    ]
    assert "ports" not in containers["torchserve"]
    # The kubelet probes TorchServe from inside its container: its ports are loopback-only.
    for probe in ("startupProbe", "livenessProbe"):
        assert "exec" in containers["torchserve"][probe]
    assert (
        containers["torchserve"]["startupProbe"]["failureThreshold"]
        * containers["torchserve"]["startupProbe"]["periodSeconds"]
        >= 300
    )


def test_service_exposes_the_gateway_port_and_selects_the_pod(pod):
    service = load("service.yaml")["spec"]
    assert service["type"] == "ClusterIP"
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(5000, "http")]
    assert service["selector"].items() <= pod["metadata"]["labels"].items()
    pdb = load("pdb.yaml")["spec"]["selector"]["matchLabels"]
    assert pdb.items() <= pod["metadata"]["labels"].items()


def test_hpa_scales_this_deployment_on_gateway_cpu():
    hpa = load("hpa.yaml")["spec"]
    assert hpa["scaleTargetRef"]["name"] == load("deployment.yaml")["metadata"]["name"]
    assert hpa["metrics"][0]["containerResource"]["container"] == "gateway"
    # A PDB of maxUnavailable 1 keeps serving during a drain only with two pods or more.
    assert hpa["minReplicas"] >= 2 and load("pdb.yaml")["spec"]["maxUnavailable"] == 1


def image_user(dockerfile: str) -> int:
    """The numeric USER the image's last stage runs as."""
    users = re.findall(r"^USER\s+(\d+)", (ROOT / dockerfile).read_text(), re.MULTILINE)
    assert users, f"{dockerfile} has no numeric USER"
    return int(users[-1])


def test_containers_run_unprivileged_on_read_only_roots(pod, containers):
    spec = pod["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    for name, dockerfile in (("gateway", "Dockerfile.gateway"), ("torchserve", "Dockerfile.model")):
        uid = containers[name]["securityContext"]["runAsUser"]
        assert uid == image_user(dockerfile) > 0
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert spec["automountServiceAccountToken"] is False
    scratch = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
    for container in containers.values():
        ctx = container["securityContext"]
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"]["drop"] == ["ALL"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts["/tmp"] in scratch


def test_probes_point_at_routes_the_gateway_has(containers):
    from gateway.app import create_app

    gateway = containers["gateway"]
    probes = {gateway[p]["httpGet"]["path"] for p in ("livenessProbe", "readinessProbe")}
    assert probes == {"/health", "/ready"}
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/health"
    adapter = create_app().url_map.bind("localhost")
    for path in probes:
        adapter.match(path, method="GET")  # raises NotFound if the route is missing


def test_gateway_reads_every_setting_the_manifests_give_it(containers):
    source = "\n".join(p.read_text() for p in (ROOT / "gateway").glob("*.py"))
    given = set(load("configmap.yaml")["data"]) | {e["name"] for e in containers["gateway"]["env"]}
    standard = {"TMPDIR"}  # read by Python's tempfile
    unread = sorted(n for n in given - standard if f'"{n}"' not in source)
    assert not unread, f"the gateway never reads {unread}"


def test_grace_period_outlasts_the_prestop_pause_and_the_drain(pod, containers, monkeypatch):
    import runpy

    # Set, so that the config file creates no metrics folder of its own.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/nonexistent")
    conf = runpy.run_path(str(ROOT / "gateway" / "gunicorn.conf.py"))
    pause = int(containers["gateway"]["lifecycle"]["preStop"]["exec"]["command"][-1])
    timeout_s = float(load("configmap.yaml")["data"]["MODEL_TIMEOUT_S"])
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    assert pause >= 3
    assert grace > pause + conf["graceful_timeout"]
    assert conf["graceful_timeout"] > 2 * timeout_s  # two model calls fit in the drain


@pytest.mark.parametrize("dockerfile", ["Dockerfile.gateway", "Dockerfile.model"])
def test_dockerfile_passes_hadolint(dockerfile):
    run = subprocess.run(
        [BIN / "hadolint", "--failure-threshold", "error", "--no-color", ROOT / dockerfile],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
