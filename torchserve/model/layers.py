"""Building blocks shared by the detector and the pose network: plain convs, no exotic ops.

Plain 3x3 convolutions with batch norm are what a CPU runs fastest per useful FLOP in
PyTorch; depthwise convolutions save FLOPs but not time at these channel counts.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


class ConvBNReLU(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, stride: int = 1, kernel: int = 3) -> None:
        super().__init__(
            nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(inplace=True),
        )


class ResBlock(nn.Module):
    """Two 3x3 convs with an identity shortcut."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = ConvBNReLU(channels, channels)
        self.conv2 = nn.Sequential(
            nn.Conv2d(channels, channels, 3, 1, 1, bias=False), nn.BatchNorm2d(channels)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.conv2(self.conv1(x)), inplace=True)


def stage(c_in: int, c_out: int, blocks: int) -> nn.Sequential:
    """Halve the resolution, then ``blocks`` residual blocks."""
    return nn.Sequential(
        ConvBNReLU(c_in, c_out, stride=2), *[ResBlock(c_out) for _ in range(blocks)]
    )


class Backbone(nn.Module):
    """A stem and a list of stages, each at half the resolution of the one before.

    Returns the features of every stage, from the finest (stride 4) to the coarsest.
    """

    def __init__(self, widths: list[int], blocks: list[int], in_channels: int = 3) -> None:
        super().__init__()
        self.stem = nn.Sequential(ConvBNReLU(in_channels, widths[0] // 2, stride=2))
        stages = []
        c_in = widths[0] // 2
        for c_out, n in zip(widths, blocks, strict=True):
            stages.append(stage(c_in, c_out, n))
            c_in = c_out
        self.stages = nn.ModuleList(stages)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem(x)
        features = []
        for s in self.stages:
            x = s(x)
            features.append(x)
        return features


class TopDown(nn.Module):
    """Feature-pyramid decoder: upsample the coarse features and add the finer lateral ones,
    so the output at the finest kept stride also sees the whole image."""

    def __init__(self, widths: list[int], out_channels: int) -> None:
        super().__init__()
        self.lateral = nn.ModuleList([ConvBNReLU(c, out_channels, kernel=1) for c in widths])
        self.smooth = nn.ModuleList([ConvBNReLU(out_channels, out_channels) for _ in widths[:-1]])

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        x = self.lateral[-1](features[-1])
        for i in range(len(features) - 2, -1, -1):
            x = F.interpolate(x, size=features[i].shape[-2:], mode="nearest")
            x = self.smooth[i](x + self.lateral[i](features[i]))
        return x


class SquareInputNet(nn.Module):
    """A network over a letterboxed ``size`` x ``size`` RGB input, built from ``config``
    (what a checkpoint stores to rebuild it)."""

    def __init__(self, size: int, widths: tuple[int, ...]) -> None:
        super().__init__()
        self.size = size
        self.config = {"size": size, "widths": list(widths)}


def load_network(
    path: str,
    expected_format: str,
    build: Callable[..., SquareInputNet],
    device: str | torch.device,
) -> SquareInputNet:
    """Rebuild a network saved by ``torchserve.training`` and load its weights, in eval mode."""
    checkpoint = read_checkpoint(path, expected_format)
    config = checkpoint["config"]
    model = build(size=config["size"], widths=tuple(config["widths"]))
    model.load_state_dict(checkpoint["state_dict"])
    return model.to(device).eval()


def read_checkpoint(path: str, expected_format: str) -> dict:
    """A checkpoint saved by ``torchserve.training`` (format, config, state_dict as float32,
    meta), refused unless it is of ``expected_format``."""
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    if checkpoint.get("format") != expected_format:
        raise ValueError(f"{path} is not a {expected_format} checkpoint")
    checkpoint["state_dict"] = {k: v.float() for k, v in checkpoint["state_dict"].items()}
    return checkpoint
