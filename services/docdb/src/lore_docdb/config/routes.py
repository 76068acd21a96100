"""Routes of the configuration: read it merged and redacted, or re-read its files."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from lore_core.web import from_state
from lore_docdb.config.models import ConfigReply
from lore_docdb.config.service import ConfigService


class ConfigController(Controller):
    path = "/api/v1/docdb/config"
    tags = ["config"]
    dependencies = {"config": from_state("config_service")}

    @get("/", summary="The full configuration merged from both files, secrets redacted")
    async def full(self, config: NamedDependency[ConfigService]) -> ConfigReply:
        return ConfigReply(message="ok", data=config.merged())

    @get("/{section:str}", summary="One configuration section; 404 if it does not exist")
    async def one(self, config: NamedDependency[ConfigService], section: FromPath[str]) -> ConfigReply:
        return ConfigReply(message="ok", data=config.section(section))

    @post("/reload", status_code=200, summary="Re-read both configuration files from disk")
    async def reload(self, config: NamedDependency[ConfigService]) -> ConfigReply:
        config.reload()
        return ConfigReply(message="configuration reloaded", data=config.merged())
