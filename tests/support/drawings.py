"""Drawings to post to the gateway, and the form that asks for a render without the models.

`drawing()` is a synthetic photo of a child's drawing (torchserve.training.synth, seeded) with its
true box and keypoints; `model_free_form(d)` sends them as the `bbox` and `keypoints`
options, which skip the detector and the pose estimator, so a test of the gateway's own
behaviour (faults, bad input, security) renders for real without TorchServe.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image


@dataclass(frozen=True)
class Drawing:
    png: bytes
    bbox: list[float]
    keypoints: list[list[float]]  # 17 COCO [x, y] in the image's pixels


# Styles the models are trained on and that a flat photo shows clearly: nothing against
# the figure, no coloured-in page. The gateway's own behaviour is tested on these; the
# harder styles are the models' evaluation's business.
PLAIN = {
    "paper": "white",
    "medium": "marker",
    "scene": "plain",
    "photo": "flat",
    "props": "none",
    "background": "paper",
}


@lru_cache(maxsize=8)
def drawing(seed: int = 3, size: int = 600) -> Drawing:
    from torchserve.training.synth.generator import generate

    sample = generate(seed, size=size, only=PLAIN)
    out = io.BytesIO()
    Image.fromarray(sample.image).save(out, format="PNG")
    return Drawing(out.getvalue(), sample.bbox.tolist(), sample.keypoints[:, :2].tolist())


def model_free_form(d: Drawing, **options: object) -> dict[str, str]:
    """Form fields for a multipart POST: the known box and keypoints, plus any option."""
    fields = {"bbox": json.dumps(d.bbox), "keypoints": json.dumps(d.keypoints)}
    fields.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in options.items()})
    return fields


def post_drawing(
    session_or_requests,
    url: str,
    d: Drawing,
    image: bytes | None = None,
    media_type: str = "image/png",
    timeout: float = 60,
    **options: object,
):
    """POST /animate with `image` (default: the drawing's PNG) and the model-free options."""
    return session_or_requests.post(
        f"{url}/animate",
        files={"image": ("drawing", d.png if image is None else image, media_type)},
        data=model_free_form(d, **options),
        timeout=timeout,
    )
