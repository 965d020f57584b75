"""What the three TorchServe handlers share: device choice, decoding, batching, per-request errors.

A handler subclass says only how to load its model, how one image becomes a model input
(`prepare`) and how a batch of model outputs becomes JSON (`describe`); the model code itself
lives in `torchserve.model`. TorchServe calls `initialize` once per worker, then `handle`
with a batch of up to `batch_size` requests.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from animation import images as decoding_policy
from torchserve.handlers.images import RequestError, decode_image, request_body

logger = logging.getLogger(__name__)


@dataclass
class Batch:
    """The requests of one TorchServe batch, split into model inputs and rejected requests."""

    size: int
    indices: list[int] = field(default_factory=list)  # request index of each model input
    inputs: list[torch.Tensor] = field(default_factory=list)
    metas: list[Any] = field(default_factory=list)  # what `describe` needs to map back to pixels
    errors: dict[int, RequestError] = field(default_factory=dict)


def pick_device(gpu_id: int | None) -> torch.device:
    """The GPU TorchServe assigned to this worker, else the CPU with one thread per worker."""
    if gpu_id is not None and torch.cuda.is_available():
        return torch.device(f"cuda:{gpu_id}")
    # Workers share the cores; more threads each only make them fight (many times slower).
    torch.set_num_threads(1)
    return torch.device("cpu")


class ImageModelHandler(ABC):
    """preprocess -> inference -> postprocess for one image per request, batched."""

    @abstractmethod
    def load_model(self, weights: Path, device: torch.device) -> torch.nn.Module:
        """The network with its weights, on `device`, in eval mode."""

    @abstractmethod
    def prepare(self, image: np.ndarray) -> tuple[torch.Tensor, Any]:
        """One RGB uint8 image -> (model input without batch axis, meta for `describe`)."""

    @abstractmethod
    def describe(self, outputs: Any, metas: list[Any]) -> list[Any]:
        """Batched model outputs (on the CPU) -> one JSON-able answer per input."""

    def initialize(self, context) -> None:
        properties = context.system_properties
        self.device = pick_device(properties.get("gpu_id"))
        weights = Path(properties["model_dir"]) / context.manifest["model"]["serializedFile"]
        self.model = self.load_model(weights, self.device).eval()
        self.initialized = True
        logger.info(
            "%s loaded from %s on %s; image decoding policy from %s",
            context.model_name, weights.name, self.device, decoding_policy.__file__,
        )  # fmt: skip

    def handle(self, data: list[dict], context) -> list[Any]:
        batch = self.preprocess(data)
        outputs = self.inference(batch)
        return self.postprocess(batch, outputs, context)

    def preprocess(self, data: list[dict]) -> Batch:
        batch = Batch(size=len(data))
        for idx, request in enumerate(data):
            try:
                image = decode_image(request_body(request))
                model_input, meta = self.prepare(image)
            except RequestError as error:
                batch.errors[idx] = error
                continue
            except Exception:  # a bug for this one image must not fail the whole batch
                logger.exception("could not prepare request %d of the batch", idx)
                batch.errors[idx] = RequestError(
                    500, "InternalServerError", "could not prepare image"
                )
                continue
            batch.indices.append(idx)
            batch.inputs.append(model_input)
            batch.metas.append(meta)
        return batch

    def inference(self, batch: Batch) -> Any:
        if not batch.inputs:
            return None
        with torch.inference_mode():
            outputs = self.model(torch.stack(batch.inputs).to(self.device))
        return to_cpu(outputs)

    def postprocess(self, batch: Batch, outputs: Any, context) -> list[Any]:
        responses: list[Any] = [None] * batch.size
        if batch.inputs:
            for idx, answer in zip(batch.indices, self.describe(outputs, batch.metas), strict=True):
                responses[idx] = answer
        for idx, error in batch.errors.items():
            # The status and body of this request only; the rest of the batch still answers 200.
            context.set_response_status(error.status, error.message, idx)
            responses[idx] = error.as_response()
        logger.info(
            "batch of %d: %d answered, %d rejected",
            batch.size,
            len(batch.inputs),
            len(batch.errors),
        )
        return responses


def to_cpu(outputs: Any) -> Any:
    """Model outputs (a tensor, or a tuple/list/dict of them) moved to the CPU."""
    if isinstance(outputs, torch.Tensor):
        return outputs.detach().cpu()
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(to_cpu(item) for item in outputs)
    if isinstance(outputs, dict):
        return {key: to_cpu(value) for key, value in outputs.items()}
    return outputs
