from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
)
from pathlib import Path

import httpx
import pytest
import respx
from litestar import Litestar

from lore_common.testing.asgi import AppClient, running
from lore_common.testing.fake_docdb import FakeDocdb
from lore_core.settings import load_settings
from lore_gen.app import create_app

DOCDB = "http://docdb.fake"
LLM = "https://llm.example.test/v1"
MODEL = {
    "LORE__GEN__LLM__PROVIDER": "openai",
    "LORE__GEN__LLM__BASE_URL": LLM,
    "LORE__GEN__LLM__API_KEY": "sk-test-gen",
    "LORE__GEN__LLM__MODEL": "gpt-4o-mini",
    "LORE__GEN__LLM__MAX_RETRIES": "1",
    "LORE__GEN__LLM__RETRY_BACKOFF": "0.01",
}
Model = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def docdb_fake() -> FakeDocdb:
    return FakeDocdb()


@pytest.fixture
def db_env() -> dict[str, str]:
    return {}


@pytest.fixture
def gen_app(tmp_path: Path, db_env: dict[str, str]) -> Callable[..., Litestar]:
    """gen on a temp data dir with docdb at the fake's address; `model=True` points it at the mocked
    OpenAI endpoint (else the offline model)."""

    def make(model: bool = False, **env: str) -> Litestar:
        environ = {
            "LORE__GEN__SERVER__DATA_DIR": str(tmp_path / "gen"),
            "LORE__GEN__DOCDB_URL": DOCDB,
            **(MODEL if model else {}),
            **db_env,
            **env,
        }
        return create_app(load_settings(tmp_path / "config", environ=environ))

    return make


@pytest.fixture
def mocked_http(docdb_fake: FakeDocdb) -> Callable[[Model | None], AbstractContextManager[respx.MockRouter]]:
    """respx answering docdb with the fake and the model endpoint with `llm`; the app itself passes."""

    @contextmanager
    def mock(llm: Model | None) -> Iterator[respx.MockRouter]:
        with respx.mock(assert_all_called=False, using="httpx") as router:
            router.route(host="gen.test").pass_through()
            router.route(host="testserver.local").pass_through()
            router.route(host="docdb.fake").mock(side_effect=docdb_fake.handle)
            if llm is not None:
                router.post(f"{LLM}/chat/completions").mock(side_effect=llm)
            yield router

    return mock


@pytest.fixture
def gen_factory(
    gen_app: Callable[..., Litestar],
    mocked_http: Callable[[Model | None], AbstractContextManager[respx.MockRouter]],
) -> Callable[..., AbstractAsyncContextManager[AppClient]]:
    @asynccontextmanager
    async def make(llm: Model | None = None, **env: str) -> AsyncIterator[AppClient]:
        with mocked_http(llm):
            async with running(gen_app(model=llm is not None, **env), "http://gen.test") as client:
                yield client

    return make
