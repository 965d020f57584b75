"""torchserve/config.properties and the private copies the tests and the benchmark run on."""

from __future__ import annotations

import yaml

from torchserve.build_archives import ARCHIVES, MODEL_CONFIG
from torchserve.server import (
    ADDRESS_KEYS,
    DEFAULT_CONFIG,
    PORT_KEYS,
    private_instance,
    read_properties,
)


def test_repo_config_serves_the_three_models_on_loopback_without_tokens():
    config = read_properties(DEFAULT_CONFIG)
    for key in ADDRESS_KEYS:
        assert config[key].startswith("http://127.0.0.1:")
    assert config["grpc_inference_address"] == config["grpc_management_address"] == "127.0.0.1"
    assert config["disable_token_authorization"] == "true"
    assert config["enable_envvars_config"] == "false"  # start.sh's TS_* variables stay out
    assert int(config["default_response_timeout"]) > 0
    assert config["load_models"].split(",") == [f"{name}.mar" for name in ARCHIVES]
    # Per-version settings would miss archives whose version is a digest: they come with
    # every archive instead (torchserve/model-config.yaml).
    assert "models" not in config
    settings = yaml.safe_load(MODEL_CONFIG.read_text())
    assert settings["batchSize"] > 1 and 0 < settings["maxBatchDelay"] <= 10
    assert settings["minWorkers"] == settings["maxWorkers"] == 1  # two cores, two models


def test_private_instance_changes_only_ports_and_model_store(tmp_path):
    store = tmp_path / "store"
    instance = private_instance(tmp_path / "a", store)
    mine, original = read_properties(instance.config), read_properties(DEFAULT_CONFIG)
    ports = {mine[key].rsplit(":", 1)[-1] for key in PORT_KEYS}
    assert len(ports) == len(PORT_KEYS)
    assert mine["model_store"] == str(store)
    changed = {key for key in original if mine[key] != original[key]}
    assert changed == {*PORT_KEYS, "model_store"}
    assert instance.inference_url == mine["inference_address"]
    assert instance.state_dir == tmp_path / "a" / "state"
