"""Errors of the datasets domain, shared by both raw stores and the upload code."""

from __future__ import annotations

from lore_core.errors import LoreError, NotFound


class DatasetNotFound(NotFound):
    def __init__(self, dataset: str) -> None:
        super().__init__(f"dataset {dataset!r} does not exist")


class FileNotInDataset(NotFound):
    def __init__(self, dataset: str, filename: str) -> None:
        super().__init__(f"file {filename!r} does not exist in dataset {dataset!r}")


class ObjectStorageFailed(LoreError):
    """Object storage refused an upload: a 500, and nothing is kept."""

    status_code = 500


class PayloadTooLarge(LoreError):
    status_code = 413
