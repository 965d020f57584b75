"""Gateways for the integration tests: real gunicorn + gevent, real TorchServe, real S3 (moto)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.gateway_server import GatewayServer, run_gateway


@pytest.fixture(scope="session")
def model_env(torchserve_server) -> dict[str, str]:
    return {
        "TORCHSERVE_URL": torchserve_server.inference_url,
        "TORCHSERVE_MANAGEMENT_URL": torchserve_server.management_url,
    }


@pytest.fixture(scope="session")
def gateway(model_env, tmp_path_factory) -> Iterator[GatewayServer]:
    """The default set-up of `make run`: local-folder storage, two render workers."""
    storage = tmp_path_factory.mktemp("animations")
    env = {**model_env, "STORAGE_URL": f"file://{storage}", "RENDER_WORKERS": "2"}
    with run_gateway(env, ready=True) as server:
        yield server
