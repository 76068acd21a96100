"""Runs inside the separate LightRAG venv (lightrag-hku + openai): the LightRAG half of
lightrag_compare.py, with LightRAG's defaults except where the machine forces a choice (below).

Reads a JSON job on stdin: the model server's URL, the embedding width, a working folder, the documents
to insert at once, the documents to insert one at a time (each then queried until its code shows), and
the questions. Prints one JSON object: insert wall time, time until queryable, query milliseconds per
mode.

LightRAG counts tokens with tiktoken, whose vocabulary is downloaded on first use; this machine cannot,
so a tokenizer of four characters per token (about tiktoken's rate on English) stands in for it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.request
from typing import Any

import numpy as np
from lightrag import LightRAG, QueryParam
from lightrag.utils import EmbeddingFunc, Tokenizer
from openai import AsyncOpenAI


class FourCharacters:
    """Text in pieces of four characters, each piece one token id (thread-safe: the table only grows,
    one key at a time, under the GIL)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.pieces: list[str] = []

    def encode(self, content: str) -> list[int]:
        out = []
        for start in range(0, len(content), 4):
            piece = content[start : start + 4]
            token = self.ids.get(piece)
            if token is None:
                token = self.ids.setdefault(piece, len(self.pieces))
                if token == len(self.pieces):
                    self.pieces.append(piece)
            out.append(token)
        return out

    def decode(self, tokens: list[int]) -> str:
        return "".join(self.pieces[t] for t in tokens)

    def __deepcopy__(self, memo: dict[int, Any]) -> FourCharacters:
        return self


async def run(job: dict[str, Any]) -> dict[str, Any]:
    client = AsyncOpenAI(base_url=job["llm_url"], api_key="sk-fake", max_retries=0, timeout=120)

    async def llm(
        prompt: str,
        system_prompt: str | None = None,
        history_messages: list[Any] | None = None,
        **kwargs: Any,
    ) -> str:
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages += [*(history_messages or []), {"role": "user", "content": prompt}]
        extra = {"response_format": kwargs["response_format"]} if kwargs.get("response_format") else {}
        reply = await client.chat.completions.create(model="fake", messages=messages, **extra)
        return reply.choices[0].message.content or ""

    async def embed(texts: list[str], **_: Any) -> np.ndarray[Any, Any]:
        reply = await client.embeddings.create(model="fake-embed", input=texts, dimensions=job["dim"])
        return np.asarray([row.embedding for row in reply.data], dtype=np.float32)

    rag = LightRAG(
        working_dir=job["path"],
        llm_model_func=llm,
        llm_model_name="fake",
        embedding_func=EmbeddingFunc(embedding_dim=job["dim"], func=embed, max_token_size=8192),
        tokenizer=Tokenizer("four-characters", FourCharacters()),
    )
    await rag.initialize_storages()
    result: dict[str, Any] = {
        "settings": {
            "llm_model_max_async": rag.llm_model_max_async,
            "max_parallel_insert": rag.max_parallel_insert,
            "entity_extract_max_gleaning": rag.entity_extract_max_gleaning,
            "embedding_func_max_async": rag.embedding_func_max_async,
            "embedding_batch_num": rag.embedding_batch_num,
        }
    }
    try:
        started = time.perf_counter()
        await rag.ainsert(job["documents"])
        result["insert_s"] = time.perf_counter() - started
        with urllib.request.urlopen(job["llm_url"].removesuffix("/v1") + "/_stats") as reply:
            result["insert_calls"] = json.load(reply)

        queryable = []
        for code, text in job["paced"]:
            started = time.perf_counter()
            await rag.ainsert(text)
            while time.perf_counter() - started < 60:
                context = await rag.aquery(
                    f"What is project {code}?", param=QueryParam(mode="hybrid", only_need_context=True)
                )
                if code in str(context):
                    break
            queryable.append(time.perf_counter() - started)
        result["queryable_s"] = queryable

        result["query_ms"] = {}
        for mode in job["modes"]:
            times = []
            for question in job["questions"]:
                started = time.perf_counter()
                answer = await rag.aquery(question, param=QueryParam(mode=mode))
                times.append((time.perf_counter() - started) * 1000)
                if not answer:
                    raise RuntimeError(f"LightRAG {mode}: empty answer to {question!r}")
            result["query_ms"][mode] = times
    finally:
        await rag.finalize_storages()
        await client.close()
    return result


def main() -> None:
    job = json.load(sys.stdin)
    print(json.dumps(asyncio.run(run(job))))


if __name__ == "__main__":
    main()
