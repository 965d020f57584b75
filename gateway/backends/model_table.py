"""The model table (MODEL_TABLE, default gateway/models.yaml): which model serves each role,
where, and how far to trust its answers.

`detector` and `pose` are needed. `segmenter` is the project's own model: AnimatedDrawings'
archives have none, and the OpenCV path makes the mask when TorchServe does not serve it,
so it may be left out of the table and is optional whatever the table says.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from gateway.config import Config, ConfigError

REQUIRED_ROLES = ("detector", "pose")
OPTIONAL_ROLES = ("segmenter",)


@dataclass(frozen=True)
class ModelRole:
    """One model the gateway calls: where it is served and how far to trust its answers."""

    role: str
    model: str
    inference_url: str
    management_url: str
    min_score: float = 0.0
    # An optional model is used when TorchServe serves it, and never needed for /ready.
    optional: bool = False
    timeout_s: float | None = None  # one call's budget; None: MODEL_TIMEOUT_S


def read_model_table(config: Config) -> dict[str, ModelRole]:
    """The model table: role -> where the model is served. URLs default to TORCHSERVE_*.

    `detector` and `pose` are needed; `segmenter` may be left out of the table (the
    OpenCV path makes every mask) and is optional whatever the table says."""
    try:
        table = yaml.safe_load(config.model_table.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"model table {config.model_table}: {exc}") from exc
    roles = {}
    for role in (*REQUIRED_ROLES, *OPTIONAL_ROLES):
        entry = (table or {}).get(role)
        if entry is None and role in OPTIONAL_ROLES:
            continue
        if not isinstance(entry, dict) or "model" not in entry:
            raise ConfigError(f"model table {config.model_table}: '{role}' needs a 'model'")
        try:
            timeout = None if entry.get("timeout_s") is None else float(entry["timeout_s"])
            min_score = float(entry.get("min_score", 0.0))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"model table {config.model_table}: '{role}': {exc}") from exc
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"model table {config.model_table}: '{role}': timeout_s <= 0")
        roles[role] = ModelRole(
            role=role,
            model=str(entry["model"]),
            inference_url=str(entry.get("url") or config.torchserve_url).rstrip("/"),
            management_url=str(
                entry.get("management_url") or config.torchserve_management_url
            ).rstrip("/"),
            min_score=min_score,
            optional=role in OPTIONAL_ROLES,
            timeout_s=timeout,
        )
    return roles
