"""Photos -> annotation folders, as the running service sees them, to look at offline.

    python -m gateway.tools.characters --url http://127.0.0.1:5000 --out DIR PHOTO...

Each photo is posted to `/annotate`; its box, joints and mask become an annotation folder
`DIR/<photo's stem>/` (`char_cfg.yaml`, `texture.png`, `mask.png`, and the photo itself as
`photo.<suffix>`), built by `animation.figure.character_from_photo` as the gateway builds
the character it animates. Then, with no server:

    python -m animation sheet DIR --out sheet.png
    python -m animation.tools.bench --shape DIR

A photo the service refuses is said on stderr with its status and code, and left out.
"""

from __future__ import annotations

import argparse
import base64
import shutil
import sys
from pathlib import Path

import numpy as np
import requests
from PIL import Image, ImageOps

from animation.character import save_character
from animation.figure import character_from_photo
from animation.images import decode_mask


def character_folder(url: str, photo: Path, out: Path, timeout_s: float = 120) -> Path | str:
    """Annotate `photo` at the service at `url` and write its annotation folder under
    `out`; the folder, or a line saying why not."""
    with photo.open("rb") as f:
        reply = requests.post(
            f"{url}/annotate", files={"image": (photo.name, f)}, timeout=timeout_s
        )
    if reply.status_code != 200:
        try:
            code = reply.json()["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = reply.text[:80]
        return f"{photo.name}: {reply.status_code} {code}"
    answer = reply.json()
    with Image.open(photo) as image:
        rgb = np.asarray(ImageOps.exif_transpose(image).convert("RGB"))
    left, top, right, bottom = answer["mask"]["box"]
    mask = np.zeros(rgb.shape[:2], bool)
    mask[top:bottom, left:right] = decode_mask(base64.b64decode(answer["mask"]["png"]))
    character = character_from_photo(rgb, np.asarray(answer["keypoints"], float), mask=mask)
    folder = out / photo.stem
    save_character(character, folder)
    shutil.copy(photo, folder / f"photo{photo.suffix.lower()}")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.tools.characters", description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:5000")
    parser.add_argument("--out", required=True, type=Path, help="folder for the annotation folders")
    parser.add_argument("photos", nargs="+", type=Path)
    args = parser.parse_args(argv)
    written = 0
    for photo in args.photos:
        made = character_folder(args.url.rstrip("/"), photo, args.out)
        if isinstance(made, Path):
            written += 1
        else:
            print(f"left out {made}", file=sys.stderr)
    print(f"{written} annotation folders in {args.out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
