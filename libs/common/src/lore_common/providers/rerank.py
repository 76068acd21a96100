"""Cross-encoder reranking over HTTP: `POST {reranker_url}/rerank {pairs}` → `{scores}`."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import msgspec


class RerankError(RuntimeError):
    """The reranker failed or answered something other than one score per pair."""


class RerankReply(msgspec.Struct):
    scores: list[float]


class HTTPReranker:
    def __init__(self, base_url: str, timeout: float = 30.0, client: httpx.AsyncClient | None = None) -> None:
        self.url = base_url.rstrip("/") + "/rerank"
        self.client = client or httpx.AsyncClient(timeout=timeout)
        self.timeout = timeout

    async def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in the documents' order."""
        if not documents:
            return []
        try:
            response = await self.client.post(
                self.url, json={"pairs": [[query, doc] for doc in documents]}, timeout=self.timeout
            )
            response.raise_for_status()
            reply = msgspec.json.decode(response.content, type=RerankReply)
        except httpx.HTTPStatusError as exc:
            raise RerankError(f"reranker at {self.url} answered HTTP {exc.response.status_code}") from exc
        except httpx.HTTPError as exc:
            raise RerankError(f"reranker at {self.url} unreachable: {type(exc).__name__}: {exc}") from exc
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise RerankError(f"reranker at {self.url} answered malformed JSON: {exc}") from exc
        if len(reply.scores) != len(documents):
            raise RerankError(
                f"reranker at {self.url} returned {len(reply.scores)} scores for {len(documents)} pairs"
            )
        return reply.scores

    async def rerank(self, query: str, documents: Sequence[str]) -> list[int]:
        """Document indexes, best first."""
        scores = await self.scores(query, documents)
        return sorted(range(len(documents)), key=lambda i: -scores[i])

    async def aclose(self) -> None:
        await self.client.aclose()
