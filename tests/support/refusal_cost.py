"""Benchmark: what one refusal costs the gateway, and the client, in a storm.

    .venv/bin/python -m tests.support.refusal_cost [--clients 36] [--seconds 10]

The house is held full by two requests waiting on a model that answers after a minute
(tests/support/fake_torchserve.py: one render slot, one queue place), and `--clients`
clients post the sample drawing and retry at once (gateway.tools.load_clients.Storm), each on a
new connection, for `--seconds`. Prints the refusals per second, the CPU each cost the
gateway's processes (psutil) and this process (the clients), their latency, and what the
storm costs as a share of this machine's cores. No TorchServe, no renders: the refusal
path alone, on a quiet machine (docs/BENCHMARKS.md, section refusal-path).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import requests

from gateway.tools.load_clients import Crowd, Storm, Target
from tests.support.fake_torchserve import FakeTorchServe
from tests.support.gateway_server import run_gateway

SAMPLE = Path(__file__).resolve().parents[2] / "gateway" / "sample_drawing.jpg"
HOLDERS = 2  # MAX_INFLIGHT 1 + MAX_QUEUE 1


def _hold_a_place(url: str) -> None:
    try:
        requests.post(f"{url}/animate", data=SAMPLE.read_bytes(),
                      headers={"Content-Type": "image/jpeg"}, timeout=90)  # fmt: skip
    except requests.RequestException:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=36)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with FakeTorchServe() as model, tempfile.TemporaryDirectory(prefix="refusal-cost-") as store:
        env = {"MAX_INFLIGHT": "1", "MAX_QUEUE": "1", "RENDER_WORKERS": "1", "API_KEY": None,
               "STORAGE_URL": f"file://{store}",
               "TORCHSERVE_URL": model.url, "TORCHSERVE_MANAGEMENT_URL": model.url,
               "MODEL_TIMEOUT_S": "90"}  # fmt: skip
        with run_gateway(env) as server:
            model.delay_s = 60.0
            for _ in range(HOLDERS):
                threading.Thread(target=_hold_a_place, args=(server.url,), daemon=True).start()
                time.sleep(0.5)
            time.sleep(1.5)  # the first asks the model, the second waits behind it
            target = Target.from_url(server.url)
            request = target.request("POST", "/animate", SAMPLE.read_bytes(),
                                     {"Content-Type": "image/jpeg"})  # fmt: skip
            master = psutil.Process(server.proc.pid)
            service = [master, *master.children(recursive=True)]
            before = [sum(p.cpu_times()[:2]) for p in service]
            clients_before = time.process_time()
            answers = Crowd(target, lambda: request, Storm(), timeout_s=10).run(
                args.clients, args.seconds
            )
            clients_s = time.process_time() - clients_before
            service_s = sum(
                sum(p.cpu_times()[:2]) - b for p, b in zip(service, before, strict=True)
            )
            model.delay_s = 0.0
    refusals = [a for a in answers if a.status == "503"]
    n = len(refusals)
    if not n:
        raise SystemExit(f"no refusals: {sorted({a.status for a in answers})}")
    p50, p99 = np.percentile([1000 * a.seconds for a in refusals], [50, 99])
    rate = n / args.seconds
    service_us, clients_us = 1e6 * service_s / n, 1e6 * clients_s / n
    cores = os.cpu_count() or 1
    print(f"{args.clients} storm clients, {args.seconds:g} s: {n} refusals ({rate:.0f}/s), "
          f"other answers {len(answers) - n}")  # fmt: skip
    print(f"  gateway CPU per refusal {service_us:.0f} us; the clients' per attempt "
          f"{clients_us:.0f} us")  # fmt: skip
    print(f"  refusal latency p50 {p50:.1f} ms, p99 {p99:.1f} ms; p99 / 50 ms = {p99 / 50:.2f}")
    print(
        f"  the storm's share of the {cores} cores: gateway "
        f"{service_s / args.seconds / cores:.3f}, clients {clients_s / args.seconds / cores:.3f}"
    )


if __name__ == "__main__":
    main()
