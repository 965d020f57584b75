"""Shared fixtures: real servers started on loopback for the integration tests."""

from tests.support.browser import browser  # noqa: F401
from tests.support.gateway_server import gateway_factory  # noqa: F401
from tests.support.offline_gateway import offline_gateway  # noqa: F401
from tests.support.radosgw import radosgw_server  # noqa: F401
from tests.support.s3 import s3_server  # noqa: F401
from tests.support.torchserve import torchserve_server  # noqa: F401
