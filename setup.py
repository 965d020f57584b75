"""Which folders the wheel installs, and where; everything else is in setup.cfg.

The shipped motions live in the top-level `bvh/` folder of the checkout and are installed
as the package `animation.shipped_motions`, so `animation` finds them through the import
system (importlib.resources) wherever it is installed. Left out on purpose:
- `torchserve/` (the model side: handlers, training, data generation): the gateway's
  environment needs none of it, and the name belongs to TorchServe's own command;
- the tools of each package (`animation/tools/`, `gateway/tools/`: benchmarks, the load
  test, `make run`'s supervisor): they run from a checkout, and the service never imports
  them.
"""

from setuptools import find_packages, setup

MOTIONS_PACKAGE = "animation.shipped_motions"
TOOLS = ["animation.tools", "animation.tools.*", "gateway.tools", "gateway.tools.*"]

setup(
    packages=[
        *find_packages(
            include=["animation", "animation.*", "gateway", "gateway.*"],
            exclude=TOOLS,
        ),
        MOTIONS_PACKAGE,
    ],
    package_dir={MOTIONS_PACKAGE: "bvh"},
)
