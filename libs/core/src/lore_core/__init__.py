"""The light core of every Lore process: settings, logging, errors, the web shape, naming, time.

It imports no numpy, no model SDK and no store client, so the gateway (which only proxies HTTP) carries
none of them. The heavy shared code (providers, embedders, workers, stores) is `lore_common`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lore-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"
