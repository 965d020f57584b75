"""Shared fixtures: real servers started on loopback for the integration tests."""
