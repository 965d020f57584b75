"""Where a job's callback may go (gateway/jobs/callbacks.py), with DNS answered by the test:
a public https host passes; anything reaching this machine, its network or a cloud's
metadata service is refused unless the operator allow-lists it."""

from __future__ import annotations

import ipaddress

import pytest

from gateway.errors import CallbackRefused
from gateway.jobs.callbacks import check_url, signature


def dns(*answers: str):
    """A resolver answering every name with `answers` (one function's stand-in)."""
    return lambda host, port: {ipaddress.ip_address(a) for a in answers}


def test_https_to_a_public_address_passes():
    check_url("https://hooks.example.com/done", (), dns("93.184.216.34"))


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.0.0.5", "172.16.3.4", "192.168.1.1", "169.254.169.254", "100.100.100.200",
     "::1", "fd00:ec2::254", "fe80::1", "0.0.0.0"],
)  # fmt: skip
def test_a_name_resolving_to_a_non_public_address_is_refused(address):
    with pytest.raises(CallbackRefused, match="non-public"):
        check_url("https://innocent.example.com/x", (), dns(address))


def test_one_private_address_among_public_ones_is_enough_to_refuse():
    with pytest.raises(CallbackRefused):
        check_url("https://mixed.example.com/", (), dns("93.184.216.34", "10.0.0.1"))


def test_http_is_refused_unless_the_host_is_allow_listed():
    with pytest.raises(CallbackRefused, match="https"):
        check_url("http://hooks.example.com/", (), dns("93.184.216.34"))
    check_url("http://hooks.example.com/", ("hooks.example.com",), dns("93.184.216.34"))


def test_an_allow_listed_network_lets_its_private_addresses_in_and_no_others():
    allow = ("10.20.0.0/16",)
    check_url("http://receiver.internal:8080/h", allow, dns("10.20.3.4"))
    with pytest.raises(CallbackRefused):
        check_url("http://other.internal/h", allow, dns("10.30.0.1"))


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "https://u:p@example.com/", "https:///nohost", "javascript:x"]
)
def test_other_schemes_credentials_and_hostless_urls_are_refused(url):
    with pytest.raises(CallbackRefused):
        check_url(url, (), dns("93.184.216.34"))


def test_the_signature_is_hmac_sha256_of_timestamp_dot_body():
    a = signature("s", "1700000000", b"{}")
    assert a.startswith("sha256=") and len(a) == 7 + 64
    assert a != signature("s", "1700000001", b"{}") != signature("t", "1700000000", b"{}")
