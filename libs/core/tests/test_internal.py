"""The internal credential: a service answers only callers that carry one of its tokens."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from litestar import get

from lore_core import internal
from lore_core.settings import SecurityConfig
from lore_core.web import create_service_app


@get("/api/v1/probe/items")
async def items() -> dict[str, str]:
    return {"secret": "only-for-the-gateway"}


def _client(token: str | None) -> httpx.AsyncClient:
    app = create_service_app(service="probe", route_handlers=[items])
    guarded = internal.guarded(app, SecurityConfig(internal_token=token), "probe")
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=guarded), base_url="http://probe")


async def test_a_call_without_the_token_is_refused_with_the_error_body() -> None:
    async with _client("new-token,old-token") as client:
        response = await client.get("/api/v1/probe/items")
        wrong = await client.get("/api/v1/probe/items", headers={internal.HEADER: "guess"})
    assert response.status_code == 401 and wrong.status_code == 401
    body = response.json()
    assert body["success"] is False and body["code"] == 401 and "internal credential" in body["message"]
    assert "only-for-the-gateway" not in response.text


@pytest.mark.parametrize("token", ["new-token", "old-token"])
async def test_either_token_of_a_rotation_is_accepted(token: str) -> None:
    async with _client("new-token, old-token") as client:
        response = await client.get("/api/v1/probe/items", headers={internal.HEADER: token})
    assert response.status_code == 200 and response.json()["secret"] == "only-for-the-gateway"


async def test_probes_and_metrics_stay_open() -> None:
    async with _client("new-token") as client:
        for path in ("/livez", "/health", "/metrics"):
            assert (await client.get(path)).status_code == 200, path


async def test_without_a_token_configured_every_caller_is_answered() -> None:
    async with _client(None) as client:
        assert (await client.get("/api/v1/probe/items")).status_code == 200


def test_the_sender_sends_the_first_token() -> None:
    internal.configure(SecurityConfig(internal_token="new-token,old-token"))
    try:
        assert internal.outgoing_headers() == {internal.HEADER: "new-token"}
    finally:
        internal.configure(SecurityConfig())
    assert internal.outgoing_headers() == {}


async def test_a_token_file_is_read_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(internal, "RELOAD_EVERY_S", 0.0)
    tokens = tmp_path / "token"
    tokens.write_text("old-token\n")
    app = create_service_app(service="probe", route_handlers=[items])
    guarded = internal.guarded(app, SecurityConfig(internal_token_file=str(tokens)), "probe")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=guarded), base_url="http://probe"
    ) as client:

        async def status(token: str) -> int:
            return (await client.get("/api/v1/probe/items", headers={internal.HEADER: token})).status_code

        assert (await status("old-token"), await status("new-token")) == (200, 401)
        tokens.write_text("old-token,new-token\n")
        assert (await status("old-token"), await status("new-token")) == (200, 200)
        tokens.write_text("new-token\n")
        assert (await status("old-token"), await status("new-token")) == (401, 200)
    internal.configure(SecurityConfig(internal_token_file=str(tokens)))
    try:
        assert internal.outgoing_headers() == {internal.HEADER: "new-token"}
    finally:
        internal.configure(SecurityConfig())
