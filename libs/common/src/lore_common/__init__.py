"""Shared code of the Lore services."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lore-common")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"
