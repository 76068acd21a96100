"""Helpers for tests and benchmarks: loopback processes and the fake model server."""
