"""Which folders the wheel installs, and where; everything else is in setup.cfg.

The shipped motions live in the top-level `bvh/` folder of the checkout and are installed
as the package `animation.shipped_motions`, so `animation` finds them through the import
system (importlib.resources) wherever it is installed. `torchserve/` (the model side:
handlers, training, data generation) is left out on purpose: the gateway's environment
needs none of it, and the name belongs to TorchServe's own command.
"""

from setuptools import find_packages, setup

MOTIONS_PACKAGE = "animation.shipped_motions"

setup(
    packages=[
        *find_packages(include=["animation", "animation.*", "gateway", "gateway.*"]),
        MOTIONS_PACKAGE,
    ],
    package_dir={MOTIONS_PACKAGE: "bvh"},
)
