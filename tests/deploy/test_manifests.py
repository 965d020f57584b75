"""The Kubernetes manifests in k8s/: valid for Kubernetes 1.30, and the pods DESIGN.md draws.

k8s/*.yaml is the default kustomization (`kubectl apply -k k8s/`): built-in kinds only, each
validated strictly against Kubernetes' schemas. k8s/keda/ is an optional kustomize component
with a KEDA ScaledObject: kubernetes-validate has no schema for a custom resource (it warns
and passes), so the ScaledObject's structure is checked here in Python, and the part of it
that is an autoscaling/v2 HPA's (replicas, behavior, metric targets) against that schema.
"""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
KEDA = K8S / "keda"
BIN = Path(sys.executable).parent
KUBERNETES = "1.30.0"
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
WORKER = "drawn-animation-worker"
REDIS = "drawn-animation-redis"


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def load(name: str, folder: Path = K8S) -> dict:
    """The one object in FOLDER/NAME."""
    (doc,) = documents(folder / name)
    return doc


def find(kind: str, name: str) -> dict:
    """The object of this kind and name among the default manifests."""
    found = [
        d
        for p in MANIFESTS
        for d in documents(p)
        if d["kind"] == kind and d["metadata"]["name"] == name
    ]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found in k8s/*.yaml"
    return found[0]


def validate(*paths: Path) -> str:
    """kubernetes-validate --strict on PATHS; its output, once it passed."""
    run = subprocess.run(
        [BIN / "kubernetes-validate", "--strict", "-k", KUBERNETES, "--quiet", *paths],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout + run.stderr


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


@pytest.fixture(scope="module")
def pod() -> dict:
    return load("deployment.yaml")["spec"]["template"]


@pytest.fixture(scope="module")
def containers(pod) -> dict:
    return {c["name"]: c for c in pod["spec"]["containers"]}


@pytest.fixture(scope="module")
def worker_pod() -> dict:
    return load("worker.yaml")["spec"]["template"]


@pytest.fixture(scope="module")
def worker_containers(worker_pod) -> dict:
    return {c["name"]: c for c in worker_pod["spec"]["containers"]}


@pytest.fixture(scope="module")
def scaled_object() -> dict:
    return load("worker-scaledobject.yaml", KEDA)


def test_every_manifest_validates_strictly_against_kubernetes_1_30():
    output = validate(*MANIFESTS)
    # A kind or apiVersion with no schema is only a warning: nothing may go unchecked.
    assert "WARN" not in output, output
    kinds = {d["kind"] for p in MANIFESTS for d in documents(p)}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "ConfigMap", "ServiceAccount", "StatefulSet"} <= kinds  # fmt: skip


def test_kustomization_lists_every_manifest(containers, worker_containers):
    kustomization = load("kustomization.yaml")
    assert sorted(kustomization["resources"]) == [p.name for p in MANIFESTS]
    # KEDA is optional: its component is not applied unless asked for.
    assert "components" not in kustomization
    images = {i["name"] for i in kustomization["images"]}
    assert {c["image"] for c in containers.values()} == images
    assert {c["image"] for c in worker_containers.values()} == images


def test_keda_component_holds_the_scaled_object_and_drops_the_worker_hpa(scaled_object):
    component = load("kustomization.yaml", KEDA)
    assert component["kind"] == "Component"
    files = sorted(p.name for p in KEDA.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(component["resources"]) == files == ["worker-scaledobject.yaml"]
    # Only custom resources here: a built-in object would escape the strict validation above.
    assert all(d["apiVersion"].startswith("keda.sh/") for f in files for d in documents(KEDA / f))
    # It deletes the CPU HPA on the same Deployment: two autoscalers would fight.
    (patch,) = component["patches"]
    deleted = yaml.safe_load(patch["patch"])
    hpa = load("worker-hpa.yaml")
    assert deleted["$patch"] == "delete"
    assert (deleted["apiVersion"], deleted["kind"], deleted["metadata"]["name"]) == (
        hpa["apiVersion"], hpa["kind"], hpa["metadata"]["name"],
    )  # fmt: skip
    assert hpa["spec"]["scaleTargetRef"] == scaled_object["spec"]["scaleTargetRef"]


def test_scaled_object_scales_the_worker_on_the_job_stream(scaled_object):
    from gateway.jobs.queue import GROUP, STREAM

    assert scaled_object["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled_object["kind"] == "ScaledObject"
    spec = scaled_object["spec"]
    assert set(spec) <= {"scaleTargetRef", "minReplicaCount", "maxReplicaCount",
                         "pollingInterval", "cooldownPeriod", "fallback", "advanced",
                         "triggers"}  # fmt: skip
    assert spec["scaleTargetRef"] == {
        "apiVersion": "apps/v1", "kind": "Deployment", "name": load("worker.yaml")["metadata"]["name"],
    }  # fmt: skip
    assert spec["scaleTargetRef"]["name"] == WORKER
    # Never to zero (a first job would wait for a GPU node and model loading).
    assert 1 <= spec["minReplicaCount"] < spec["maxReplicaCount"]
    assert spec["maxReplicaCount"] == load("worker-hpa.yaml")["spec"]["maxReplicas"]
    assert spec["minReplicaCount"] <= spec["fallback"]["replicas"] <= spec["maxReplicaCount"]

    triggers = spec["triggers"]
    assert {t["type"] for t in triggers} == {"redis-streams"}
    for trigger in triggers:
        assert set(trigger) <= {"type", "metadata", "name", "authenticationRef"}
        meta = trigger["metadata"]
        # The CRD takes strings only (an unquoted 2 would be refused).
        assert all(isinstance(v, str) for v in meta.values()), meta
        assert meta["stream"] == STREAM
        # KEDA wants host:port, reached from its own namespace: SERVICE.NAMESPACE.svc:PORT.
        host, port = meta["address"].rsplit(":", 1)
        service = find("Service", REDIS)
        assert host.split(".")[0] == service["metadata"]["name"]
        assert re.fullmatch(r"[a-z0-9-]+\.[a-z0-9-]+\.svc", host), host
        assert int(port) == service["spec"]["ports"][0]["port"]
    by_mode = {("consumerGroup" in t["metadata"]): t["metadata"] for t in triggers}
    assert len(by_mode) == len(triggers) == 2
    # Running jobs: pending in the group, JOB_CONCURRENCY of them per busy worker.
    running = by_mode[True]
    assert running["consumerGroup"] == GROUP
    config = load("configmap.yaml")["data"]
    concurrency = int(config["JOB_CONCURRENCY"]) or int(config["RENDER_WORKERS"])
    assert int(running["pendingEntriesCount"]) == concurrency
    assert not {"lagCount", "streamLength"} & set(running)
    # The backlog: the stream's length (the queue deletes entries of finished jobs), more
    # than a worker's running jobs per worker, or a busy worker alone would ask for more.
    backlog = by_mode[False]
    assert int(backlog["streamLength"]) > concurrency
    assert not {"lagCount", "pendingEntriesCount"} & set(backlog)


def test_scaled_object_hpa_part_validates_as_autoscaling_v2(scaled_object, tmp_path):
    """What KEDA copies into the HPA it makes, as that HPA, validated strictly."""
    spec = scaled_object["spec"]
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"keda-hpa-{scaled_object['metadata']['name']}"},
        "spec": {
            "scaleTargetRef": spec["scaleTargetRef"],
            "minReplicas": spec["minReplicaCount"],
            "maxReplicas": spec["maxReplicaCount"],
            "behavior": spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"],
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": f"s{i}-redis-streams-{t['metadata']['stream']}"},
                        "target": {"type": "AverageValue", "averageValue": value},
                    },
                }
                for i, t in enumerate(spec["triggers"])
                for key, value in t["metadata"].items()
                if key in ("pendingEntriesCount", "streamLength", "lagCount")
            ],
        },
    }
    path = tmp_path / "keda-hpa.yaml"
    path.write_text(yaml.safe_dump(hpa))
    assert "WARN" not in validate(path)


def kustomize(folder: Path) -> list[dict]:
    if shutil.which("kustomize"):
        command = ["kustomize", "build", str(folder)]
    elif shutil.which("kubectl"):
        command = ["kubectl", "kustomize", str(folder)]
    else:
        pytest.skip("neither kustomize nor kubectl is installed")
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return [d for d in yaml.safe_load_all(run.stdout) if d is not None]


def test_kustomize_builds_both_ways_and_the_output_validates(tmp_path):
    plain = kustomize(K8S)
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy)
    with (copy / "kustomization.yaml").open("a") as f:
        f.write("components:\n  - keda\n")
    with_keda = kustomize(copy)

    def ids(objects):
        return {(o["kind"], o["metadata"]["name"]) for o in objects}

    hpa, so = ("HorizontalPodAutoscaler", WORKER), ("ScaledObject", WORKER)
    assert hpa in ids(plain) and so not in ids(plain)
    assert ids(with_keda) == ids(plain) - {hpa} | {so}
    for objects in (plain, with_keda):
        for o in objects:
            assert o["metadata"]["labels"]["app.kubernetes.io/part-of"] == "drawn-animation"
    # The image names set in kustomization.yaml reach the worker's containers too.
    tag = {i["name"]: i["newTag"] for i in load("kustomization.yaml")["images"]}
    for o in plain:
        if o["kind"] == "Deployment":
            for c in o["spec"]["template"]["spec"]["containers"]:
                name, _, version = c["image"].partition(":")
                assert version == tag[name], c["image"]
    built = tmp_path / "built.yaml"
    built.write_text(yaml.safe_dump_all(o for o in with_keda if o["kind"] != "ScaledObject"))
    assert "WARN" not in validate(built)


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


@pytest.mark.parametrize(
    "manifest, images",
    [
        ("deployment.yaml", {"gateway": "Dockerfile.gateway", "torchserve": "Dockerfile.model"}),
        ("worker.yaml", {"worker": "Dockerfile.gateway", "torchserve": "Dockerfile.model"}),
    ],
)
def test_containers_run_unprivileged_on_read_only_roots(manifest, images):
    spec = load(manifest)["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    assert set(containers) == set(images)
    assert spec["securityContext"]["runAsNonRoot"] is True
    for name, dockerfile in images.items():
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


def test_gateway_reads_every_setting_the_manifests_give_it(containers, worker_containers):
    source = "\n".join(p.read_text() for p in (ROOT / "gateway").glob("*.py"))
    given = (
        set(load("configmap.yaml")["data"])
        | set(env_of(containers["gateway"]))
        | set(env_of(worker_containers["worker"]))
    )
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


def test_worker_runs_the_gateway_image_with_the_worker_command(containers, worker_containers):
    worker = worker_containers["worker"]
    assert worker["image"] == containers["gateway"]["image"]
    # The image's CMD (exec form, `python -m gateway`), pointed at the worker's module.
    cmd = re.findall(r"^CMD\s+(\[.*\])\s*$", (ROOT / "Dockerfile.gateway").read_text(), re.M)
    assert json.loads(cmd[-1]) == ["python", "-m", "gateway"]
    assert worker["command"] == ["python", "-m", "gateway.worker"]
    assert "args" not in worker
    spec = importlib.util.find_spec("gateway.worker")
    assert spec is not None, "gateway.worker does not exist"
    if spec.submodule_search_locations is not None:  # a package: `-m` runs its __main__
        assert importlib.util.find_spec("gateway.worker.__main__") is not None


def test_worker_listens_on_nothing_and_is_probed_by_no_port(worker_containers):
    worker = worker_containers["worker"]
    assert "ports" not in worker
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert not {"httpGet", "tcpSocket", "grpc"} & set(worker.get(probe, {})), probe
    resources = worker["resources"]
    assert resources["requests"]["cpu"] and resources["limits"]["cpu"]
    assert not any("gpu" in k for part in resources.values() for k in part)


def test_worker_pod_has_the_gateway_pods_torchserve_sidecar(
    worker_pod, containers, worker_containers
):
    sidecar = dict(worker_containers["torchserve"])
    pause = sidecar.pop("lifecycle")["preStop"]["exec"]["command"]
    # The same container as the gateway pod's: image, GPU, probes, user, loopback only.
    assert sidecar == containers["torchserve"]
    # The worker calls it on 127.0.0.1, as the gateway does, through the same ConfigMap.
    for url in ("TORCHSERVE_URL", "TORCHSERVE_MANAGEMENT_URL"):
        assert urlsplit(load("configmap.yaml")["data"][url]).hostname == "127.0.0.1"
    # SIGTERM reaches both containers at once: TorchServe stays up through the worker's
    # drain, and the pod's grace covers that and TorchServe's own stop.
    grace_s = float(env_of(worker_containers["worker"])["WORKER_GRACE_S"]["value"])
    assert pause[:-1] == ["sleep"] and float(pause[-1]) >= grace_s > 0
    assert worker_pod["spec"]["terminationGracePeriodSeconds"] >= float(pause[-1]) + 20


def test_worker_gets_the_gateways_settings_and_reaches_redis(containers, worker_containers):
    gateway, worker = containers["gateway"], worker_containers["worker"]
    configmap = load("configmap.yaml")
    assert worker["envFrom"] == gateway["envFrom"]
    assert {"configMapRef": {"name": configmap["metadata"]["name"]}} in worker["envFrom"]
    url = urlsplit(configmap["data"]["REDIS_URL"])
    service = find("Service", REDIS)
    assert url.scheme == "redis" and url.hostname == service["metadata"]["name"]
    assert url.port == service["spec"]["ports"][0]["port"]
    # The callback key comes from a Secret, by name, optional; the same one for both.
    for container in (gateway, worker):
        assert env_of(container)["CALLBACK_SECRET"]["valueFrom"]["secretKeyRef"] == {
            "name": "drawn-animation-callback", "key": "CALLBACK_SECRET", "optional": True,
        }  # fmt: skip


def test_no_secret_value_is_written_in_the_manifests():
    secret = re.compile(r"SECRET|PASSWORD|API_KEY|ACCESS_KEY|TOKEN")
    assert not [k for k in load("configmap.yaml")["data"] if secret.search(k)]
    for path in [*MANIFESTS, *KEDA.glob("*.yaml")]:
        for doc in documents(path):
            assert doc["kind"] != "Secret", path
            pod = doc.get("spec", {}).get("template", {}).get("spec", {})
            for container in pod.get("containers", []):
                for name, entry in env_of(container).items():
                    assert not (secret.search(name) and "value" in entry), (path, name)


def test_a_redis_url_with_a_password_can_come_from_a_secret(containers, worker_containers):
    # An optional Secret, last of the sources: its REDIS_URL overrides the ConfigMap's.
    for container in (containers["gateway"], worker_containers["worker"]):
        last = container["envFrom"][-1]
        assert last == {"secretRef": {"name": REDIS, "optional": True}}


def test_worker_pods_are_not_the_gateways(pod, worker_pod):
    worker = load("worker.yaml")["spec"]
    labels = worker_pod["metadata"]["labels"]
    assert worker["selector"]["matchLabels"].items() <= labels.items()
    for selector in (
        load("service.yaml")["spec"]["selector"],
        load("pdb.yaml")["spec"]["selector"]["matchLabels"],
        load("deployment.yaml")["spec"]["selector"]["matchLabels"],
    ):
        assert not selector.items() <= labels.items()
    # The autoscaler owns the count: `kubectl apply` must not reset it.
    assert "replicas" not in worker
    assert worker_pod["spec"]["serviceAccountName"] == pod["spec"]["serviceAccountName"]


def test_worker_hpa_scales_the_worker_on_its_cpu():
    hpa = load("worker-hpa.yaml")["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": WORKER}
    assert hpa["metrics"][0]["containerResource"]["container"] == "worker"
    assert 1 <= hpa["minReplicas"] < hpa["maxReplicas"]


def redis_options(container: dict) -> dict[str, str]:
    """`redis-server --name value ...` as {name: value}."""
    args = container["args"]
    assert args[0] == "redis-server" and len(args) % 2 == 1
    return {k.removeprefix("--"): v for k, v in zip(args[1::2], args[2::2], strict=True)}


def test_redis_keeps_every_accepted_job_on_disk():
    sts = find("StatefulSet", REDIS)
    service = find("Service", REDIS)
    spec = sts["spec"]
    assert spec["replicas"] == 1 and spec["serviceName"] == service["metadata"]["name"]
    pod = spec["template"]["spec"]
    (redis,) = pod["containers"]
    assert re.fullmatch(r"redis:7\.\d+\.\d+", redis["image"]), "pin a 7.x.y tag"
    options = redis_options(redis)
    assert options["appendonly"] == "yes" and options["appendfsync"] == "always"
    assert options["maxmemory-policy"] == "noeviction"  # an evicted key is a lost job
    # The data folder is the claim's volume, one PVC per replica.
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    mounts = {m["mountPath"]: m["name"] for m in redis["volumeMounts"]}
    assert mounts[options["dir"]] == claim["metadata"]["name"]
    # Non-root as the official image's `redis` user, read-only root, no capabilities.
    ctx = pod["securityContext"]
    assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == ctx["fsGroup"] == 999
    assert redis["securityContext"]["readOnlyRootFilesystem"] is True
    assert redis["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["automountServiceAccountToken"] is False
    assert redis["resources"]["requests"]["memory"] and redis["resources"]["limits"]["memory"]
    assert "redis-cli ping" in " ".join(redis["readinessProbe"]["exec"]["command"])
    # The Service: 6379, to this pod's named port.
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(6379, "redis")]
    assert [p["name"] for p in redis["ports"]] == ["redis"]
    assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()


def test_redis_server_takes_the_manifests_options(tmp_path):
    """Debian's redis-server started with the StatefulSet's options (its own folder)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make sysdeps installs Debian's)")
    import redis

    options = redis_options(find("StatefulSet", REDIS)["spec"]["template"]["spec"]["containers"][0])
    args = [a for k, v in {**options, "dir": str(tmp_path)}.items() for a in (f"--{k}", v)]
    socket = tmp_path / "redis.sock"
    proc = subprocess.Popen(
        ["redis-server", *args, "--port", "0", "--unixsocket", str(socket)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        client = redis.Redis(unix_socket_path=str(socket), socket_timeout=5, decode_responses=True)
        deadline = time.monotonic() + 20
        while not socket.exists():
            assert proc.poll() is None, proc.stdout.read().decode(errors="replace")
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        config = client.config_get("*")
        assert config["appendonly"] == "yes" and config["appendfsync"] == "always"
        assert config["maxmemory-policy"] == "noeviction" and config["save"] == ""
        assert int(config["maxmemory"]) > 0
        client.xadd("jobs", {"id": "1"})
        assert list(tmp_path.glob("appendonlydir/*.aof"))  # on disk
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("dockerfile", ["Dockerfile.gateway", "Dockerfile.model"])
def test_dockerfile_passes_hadolint(dockerfile):
    run = subprocess.run(
        [BIN / "hadolint", "--failure-threshold", "error", "--no-color", ROOT / dockerfile],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
