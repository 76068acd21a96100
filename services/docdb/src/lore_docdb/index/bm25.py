"""BM25 over a KB's chunks (bm25s), for the `rerank` mode, with the tokenizer of `lore_common.bm25`,
and the titles of the sections the chunks open.

The index is derived from the chunk rows and rebuilt when the KB's chunks change, so a rolled-back task
can never linger in it. What keeps it cheap at a million chunks:
- it holds chunk ids, not texts: a hit's text and source are read from the chunk rows, for the few
  hits a question keeps (at a million chunks the texts alone would be gigabytes of the service's memory);
- each build is saved under the KB's folder, labelled with the KB's stored version, and a restart maps
  that copy (numpy memory maps) instead of tokenizing every chunk again (minutes at a million);
- a large KB's index is built in a child process, whose tokens and score triples (about 1 KB a chunk
  while building) go back to the system when it exits instead of staying in the service's heap."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

import msgspec
import numpy as np

from lore_common.bm25 import TOKENIZER_VERSION, new_index, tokenize
from lore_common.matrix import top_rows

# A KB past this many chunks is indexed in a child process (its start, ~1 s, is paid by a large build
# only: 50,000 chunks take ~10 s to tokenize).
CHILD_BUILD_CHUNKS = 50_000
_IDS = "chunk_ids.npy"
_TITLES = "titles.msgpack"
# Written beside a saved index: one saved with another tokenizer's tokens is built again, since a
# query's tokens would not match them.
_TOKENIZER = f"tokenizer-{TOKENIZER_VERSION}"
# A section's title as the index keys it: its words in lower case, one space apart.
_TITLE_WORD = re.compile(r"[^\W_]+")
_TITLE_LINES = 8  # a chunk opens a section when a `#` line comes among its first lines
_EMPTY = "\u0000"  # the token of a chunk with no word, so that every chunk is a row of the index


def title_key(text: str) -> str:
    """A title's words in lower case, one space apart (`2.3 Results` → `2 3 results`)."""
    return " ".join(_TITLE_WORD.findall(text.lower()))


def _opened_titles(text: str) -> Iterator[str]:
    """The titles of the `#` lines that open a chunk: chunks are cut at headings, so a chunk's headings
    come before its text, after the one line of its heading path that retrieval indexes first."""
    for number, line in enumerate(text.lstrip().split("\n", _TITLE_LINES)[:_TITLE_LINES]):
        stripped = line.strip()
        if stripped.startswith("#"):
            if key := title_key(stripped):
                yield key
        elif stripped and number:
            return


class ChunkSource(NamedTuple):
    """A chunk as the index reads it: its id and the text retrieval indexes (heading path, then text)."""

    chunk_id: str
    text: str


@dataclass
class Bm25Index:
    """The bm25s index, and the chunk id of each of its rows (bytes: ids are ASCII)."""

    ids: np.ndarray[Any, np.dtype[np.bytes_]]
    retriever: Any = None
    # Per section title (`title_key`), the rows of the chunks that open a section of that title: a
    # query that is a title finds its section though its words are common (`In use`, `Who we are, some
    # of what we do`: no word but stopwords, or one that every passage has).
    titles: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def build(cls, chunks: Iterable[ChunkSource]) -> Bm25Index:
        """Tokens become vocabulary ids as they come, so no list of token strings is held for the KB."""
        vocab: dict[str, int] = {}
        ids: list[bytes] = []
        rows: list[list[int]] = []
        titles: dict[str, list[int]] = {}
        for chunk in chunks:
            for key in dict.fromkeys(_opened_titles(chunk.text)):
                titles.setdefault(key, []).append(len(ids))
            ids.append(chunk.chunk_id.encode())
            rows.append([vocab.setdefault(t, len(vocab)) for t in tokenize(chunk.text) or [_EMPTY]])
        index = cls(np.array(ids, dtype=np.bytes_), titles=titles)
        if rows:
            retriever = new_index()
            retriever.index((rows, vocab), show_progress=False)
            index.retriever = retriever
        return index

    def save(self, folder: Path) -> None:
        """Into `folder`, whole or not at all (written aside, then renamed)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            np.save(staging / _IDS, self.ids)
            (staging / _TITLES).write_bytes(msgspec.msgpack.encode(self.titles))
            (staging / _TOKENIZER).touch()
            if self.retriever is not None:
                self.retriever.save(str(staging), show_progress=False)
            os.replace(staging, folder)
        except OSError:
            if not folder.is_dir():
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another build saved this version first
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    @classmethod
    def load(cls, folder: Path) -> Bm25Index:
        """A saved index, its arrays mapped from disk (pages read as questions touch them)."""
        if not (folder / _TOKENIZER).exists():
            raise ValueError(f"{folder} was saved by another tokenizer")
        titles = msgspec.msgpack.decode((folder / _TITLES).read_bytes(), type=dict[str, list[int]])
        index = cls(np.load(folder / _IDS, mmap_mode="r"), titles=titles)
        if len(index.ids):
            new_index()  # quiets bm25s's logger
            import bm25s

            index.retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        return index

    def titled(self, query: str, k: int) -> list[str]:
        """The first `k` chunks that open a section titled as the query is worded (any case)."""
        return [self.ids[i].decode() for i in self.titles.get(title_key(query), ())[:k]]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The `k` best chunk ids with their scores."""
        if self.retriever is None:
            return []
        # Scored directly from the index's sparse matrix: `retrieve` starts a thread pool per call,
        # which costs more than scoring 10k chunks.
        token_ids = self.retriever.get_tokens_ids(tokenize(query))
        if not token_ids:
            return []
        scores = self.retriever.get_scores_from_ids(token_ids)
        # Only chunks that hold a query term score above 0, often a small part of the KB; ranking just
        # those runs on the event loop of every question (at 10k chunks, a third of them matching:
        # 80 µs instead of 105 µs; less when fewer match).
        # `scores > 0` first: numpy finds the true entries of a boolean mask in vector code, but the
        # nonzero floats of an array one element at a time (5x slower at a million chunks).
        matching = np.flatnonzero(scores > 0)
        best = matching[top_rows(scores[matching], k)]
        return [(self.ids[i].decode(), float(scores[i])) for i in best]


@dataclass
class _Cached:
    version: int  # this process's count of the KB's changes when it was built
    stored: int  # the KB's stored version its chunks were read at
    index: Bm25Index


Passages = Callable[[str], AsyncIterator[list[ChunkSource]]]


class Bm25Cache:
    """The latest index per KB, rebuilt from the chunk rows whenever the KB's chunks changed, and kept on
    disk under `root/<kb>/bm25/<stored version>` for the next start.

    This process's own changes `bump` the KB at once. With replicas on one PostgreSQL (`shared`), every
    question also reads the KB's stored version (one primary-key lookup, written in the transactions that
    change the chunks), so no replica answers from chunks older than the last committed change."""

    def __init__(
        self,
        passages: Passages,
        stored_version: Callable[[str], Awaitable[int]],
        root: Path,
        shared: bool = False,
    ) -> None:
        self.passages = passages
        self.stored_version = stored_version
        self.root = root
        self.shared = shared
        self.versions: dict[str, int] = {}
        self.indexes: dict[str, _Cached] = {}
        self.lock = threading.Lock()
        self._building: dict[tuple[str, int, int], asyncio.Future[Bm25Index]] = {}

    def bump(self, kb: str) -> None:
        """The KB's chunks changed; the next `get` rebuilds."""
        with self.lock:
            self.versions[kb] = self.versions.get(kb, 0) + 1

    async def get(self, kb: str) -> Bm25Index:
        shared = await self.stored_version(kb) if self.shared else -1
        with self.lock:
            version = self.versions.get(kb, 0)
            cached = self.indexes.get(kb)
        if cached and cached.version == version and cached.stored >= shared:
            return cached.index
        return await self._rebuild(kb, version, shared)

    async def _rebuild(self, kb: str, version: int, shared: int) -> Bm25Index:
        """One build per KB version, however many questions are waiting for it."""
        key = (kb, version, shared)
        building = self._building.get(key)
        if building is None:
            building = asyncio.ensure_future(self._build(kb, version, shared))
            self._building[key] = building
            building.add_done_callback(lambda _: self._building.pop(key, None))
        return await asyncio.shield(building)

    async def _build(self, kb: str, version: int, shared: int) -> Bm25Index:
        # Read before the chunks: they hold at least this version's changes, so a copy labelled with it
        # is never older than its label.
        stored = shared if shared >= 0 else await self.stored_version(kb)
        folder = self.root / kb / "bm25" / str(stored)
        index = await asyncio.to_thread(_load_saved, folder)
        if index is None:
            index = await self._index_rows(kb, folder)
        with self.lock:
            current = self.indexes.get(kb)
            if self.versions.get(kb, 0) == version and (current is None or current.stored <= stored):
                self.indexes[kb] = _Cached(version, stored, index)
        return index

    async def _index_rows(self, kb: str, folder: Path) -> Bm25Index:
        """Build from the chunk rows, save beside the older copies, then remove those."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        rows: list[ChunkSource] = []
        spill: Path | None = None
        encoder = msgspec.msgpack.Encoder()
        with tempfile.TemporaryDirectory(prefix=".build-", dir=folder.parent) as scratch:
            out = None
            try:
                async for batch in self.passages(kb):
                    rows.extend(batch)
                    if out is None and len(rows) > CHILD_BUILD_CHUNKS:
                        spill = Path(scratch) / "passages.msgpack"
                        out = spill.open("wb")
                    if out is not None:
                        _write_frame(out, encoder, rows)
                        rows = []
            finally:
                if out is not None:
                    out.close()
            if spill is None:
                index = await asyncio.to_thread(Bm25Index.build, rows)
                await asyncio.to_thread(index.save, folder)
            else:
                await _build_in_child(spill, folder)
                index = await asyncio.to_thread(Bm25Index.load, folder)
        await asyncio.to_thread(_remove_older_copies, folder)
        return index


def _load_saved(folder: Path) -> Bm25Index | None:
    if not folder.is_dir():
        return None
    try:
        return Bm25Index.load(folder)
    # a copy damaged on disk is rebuilt, and one saved before titles were kept (no titles file) or by
    # another tokenizer
    except (OSError, ValueError, KeyError, msgspec.MsgspecError):
        shutil.rmtree(folder, ignore_errors=True)
        return None


def _remove_older_copies(folder: Path) -> None:
    """Copies of earlier versions; not newer ones, nor those being written (dot names) by builds that
    run beside this one (two datasets' parses of one KB finish together)."""
    for other in folder.parent.iterdir():
        if other.name.isdigit() and int(other.name) < int(folder.name):
            shutil.rmtree(other, ignore_errors=True)


async def _build_in_child(passages: Path, folder: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lore_docdb.index.bm25",
        str(passages),
        str(folder),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, errors = await process.communicate()
    except asyncio.CancelledError:
        process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"BM25 index build failed: {errors.decode(errors='replace')[-2000:]}")


def _write_frame(out: IO[bytes], encoder: msgspec.msgpack.Encoder, rows: list[ChunkSource]) -> None:
    """A batch as a length-prefixed msgpack frame."""
    payload = encoder.encode(rows)
    out.write(len(payload).to_bytes(8, "little"))
    out.write(payload)


def _read_passages(path: Path) -> Iterator[ChunkSource]:
    decoder = msgspec.msgpack.Decoder(list[ChunkSource])
    with path.open("rb") as source:
        while size := int.from_bytes(source.read(8), "little"):
            yield from decoder.decode(source.read(size))


def main() -> None:
    """`python -m lore_docdb.index.bm25 PASSAGES FOLDER`: the child of a large build."""
    source, folder = Path(sys.argv[1]), Path(sys.argv[2])
    Bm25Index.build(_read_passages(source)).save(folder)


if __name__ == "__main__":
    main()
