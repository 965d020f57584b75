from pathlib import Path

import pytest

from gateway.backends.model_table import read_model_table
from gateway.config import DEFAULT_MODEL_TABLE, Config, ConfigError


def test_defaults_work_for_make_run():
    config = Config.from_env({})
    assert config.torchserve_url == "http://127.0.0.1:8080"
    assert config.torchserve_management_url == "http://127.0.0.1:8081"
    assert config.storage_url == "file://./var/animations"
    assert config.max_upload_bytes == 10 * 1024 * 1024
    assert config.max_pixels == 40_000_000
    assert config.render_workers >= 1
    assert config.max_inflight == 2 * config.render_workers
    assert config.max_queue == 2 * config.max_inflight
    assert config.api_key is None and config.default_motions == ()


def test_every_documented_variable_is_read():
    env = {
        "TORCHSERVE_URL": "http://ts:1/",
        "TORCHSERVE_MANAGEMENT_URL": "http://ts:2",
        "STORAGE_URL": "s3://bucket/prefix",
        "S3_ENDPOINT_URL": "http://s3:9000",
        "PUBLIC_BASE_URL": "https://cdn.example/",
        "MAX_UPLOAD_BYTES": "1000",
        "MAX_PIXELS": "2000",
        "MAX_INFLIGHT": "3",
        "RENDER_WORKERS": "5",
        "MODEL_TIMEOUT_S": "2.5",
        "FIGURE_BUDGET_S": "0.4",
        "DEFAULT_MOTIONS": "dab, zombie",
        "API_KEY": "secret",
    }
    config = Config.from_env(env)
    assert config.torchserve_url == "http://ts:1"
    assert config.torchserve_management_url == "http://ts:2"
    assert config.storage_url == "s3://bucket/prefix"
    assert config.s3_endpoint_url == "http://s3:9000"
    assert config.public_base_url == "https://cdn.example"
    assert (config.max_upload_bytes, config.max_pixels) == (1000, 2000)
    assert (config.max_inflight, config.render_workers, config.max_queue) == (3, 5, 6)
    assert config.model_timeout_s == 2.5
    assert config.figure_budget_s == 0.4
    assert config.default_motions == ("dab", "zombie")
    assert config.api_key == "secret"
    assert "secret" not in repr(config)


@pytest.mark.parametrize(
    "env",
    [{"MAX_PIXELS": "lots"}, {"MAX_UPLOAD_BYTES": "0"}, {"STORAGE_URL": "ftp://x"},
     {"MODEL_TIMEOUT_S": "-1"}, {"FIGURE_BUDGET_S": "0"}],
)  # fmt: skip
def test_bad_values_fail_at_start_up_naming_the_variable(env):
    with pytest.raises(ConfigError, match=next(iter(env))):
        Config.from_env(env)


def test_model_table_defaults_to_torchserve_urls():
    roles = read_model_table(Config.from_env({"TORCHSERVE_URL": "http://ts:8080"}))
    assert roles["detector"].model == "drawn_humanoid_detector"
    assert roles["pose"].model == "drawn_humanoid_pose_estimator"
    assert roles["pose"].inference_url == "http://ts:8080"
    assert roles["detector"].management_url == "http://127.0.0.1:8081"
    assert DEFAULT_MODEL_TABLE.is_file()


def test_model_table_can_send_a_role_elsewhere(tmp_path: Path):
    table = tmp_path / "models.yaml"
    table.write_text(
        "detector: {model: det, url: 'http://gpu:9/'}\npose: {model: p, min_score: 0.5}\n"
    )
    roles = read_model_table(Config.from_env({"MODEL_TABLE": str(table)}))
    assert roles["detector"].inference_url == "http://gpu:9"
    assert roles["pose"].inference_url == "http://127.0.0.1:8080"
    assert roles["pose"].min_score == 0.5


def test_model_table_without_a_role_is_refused(tmp_path: Path):
    table = tmp_path / "models.yaml"
    table.write_text("detector: {model: det}\n")
    with pytest.raises(ConfigError, match="pose"):
        read_model_table(Config.from_env({"MODEL_TABLE": str(table)}))
