"""The docdb view of the configuration: merged, redacted, reloadable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore_core.errors import NotFound
from lore_core.settings import Settings, load_settings, redact, to_dict


class ConfigService:
    def __init__(self, settings: Settings, config_dir: Path | None = None) -> None:
        self.settings = settings
        self.config_dir = config_dir

    def merged(self) -> dict[str, Any]:
        """The whole configuration of both files, secrets masked."""
        result: dict[str, Any] = redact(to_dict(self.settings))
        return result

    def section(self, name: str) -> dict[str, Any] | Any:
        """A named section: a docdb key (`llm`), a pipeline parameter (`chunk_config`) or a top-level key."""
        merged = self.merged()
        for scope in (merged["docdb"], merged["parameter"], merged):
            if name in scope:
                return scope[name]
        known = sorted({*merged["docdb"], *merged["parameter"], *merged})
        raise NotFound(f"no configuration section {name!r}; known sections: {', '.join(known)}")

    def reload(self) -> Settings:
        """Re-read both files and the environment; an invalid file leaves the running config unchanged."""
        self.settings = load_settings(self.config_dir)
        return self.settings
