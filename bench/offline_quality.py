"""What the offline model makes of public data: extractive answers and entities, no model key.

Answers. Each answerable question of a reading-comprehension set is asked, and the answer is scored
for containment (a gold answer string appears in it) and whole sentences (every cited sentence opens
like a sentence and ends with a stop). Goals: containment >= 0.70 in English and in Chinese where
retrieval found the gold passage, and >= 0.95 whole sentences.
  - CMRC 2018 dev (Chinese): `cmrc2018/` in BEIR layout (queries carry `metadata.answers`).
  - SQuAD 2.0 dev (English): `squad2/dev-v2.0.json`, answerable questions only.
Two ways: `--through api` uploads the passages to a real docdb (one file each, mode 1) and asks
`/api/v1/docdb/chat` with no model named, counting only questions whose gold passage is cited (the
retrieval-found condition); `--through skill` (default, seconds) hands the gold passage to the answer
skill directly, which is the same condition without the parse.

Abstention (`--sets abstain`). SciFact's test claims (`scifact/` in BEIR layout), each asked three
times: of its gold abstract first among the four abstracts that share the most keywords with it (the
passages a retrieval would bring), which should be answered and cite the gold one; of four abstracts
drawn at random (a knowledge base that does not cover the question), where the answer should say that
nothing answers; and of the four close abstracts alone (same topic, not the claim's evidence: reported,
no goal, since words alone cannot tell them apart). Goals: answered with gold >= 0.90, abstained on
unrelated passages >= 0.90.

Entities. The offline extractor over CoNLL-2003 test (`conll2003/test.txt`, CoNLL column format):
span precision and recall over PER, ORG and LOC. Goals: precision >= 0.70, recall >= 0.50.

Datasets are read from `LORE_BENCH_DATA` (else `bench/data/`), which may name several folders
separated by the path separator (`/data/en:/data/zh`), the first holding a set wins; a set that is
not there is reported as skipped with the paths it looked for, never replaced by something else.

    uv run python bench/offline_quality.py [--through skill|api] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from bench_data import DATA as BENCH_DATA

from lore_common.entities import entity_spans
from lore_common.providers.offline import NO_ANSWER, answer, is_whole_sentence
from lore_common.text import keywords

CITATION = re.compile(r"\s*\[(\d+)\]")
Item = tuple[str, str, list[str]]  # passage id, question, gold answers
Passages = dict[str, str]


def dataset(relative: str) -> Path:
    """`relative` in the first folder of `LORE_BENCH_DATA` that has it (else in the first folder)."""
    folders = [Path(part) for part in str(BENCH_DATA).split(os.pathsep) if part]
    return next((f / relative for f in folders if (f / relative).exists()), folders[0] / relative)


def cmrc() -> tuple[Passages, list[Item]] | str:
    folder = dataset("cmrc2018")
    if not (folder / "queries.jsonl").exists():
        return f"no cmrc2018/queries.jsonl in {BENCH_DATA}"
    corpus = {d["_id"]: d["text"] for d in map(json.loads, (folder / "corpus.jsonl").open(encoding="utf-8"))}
    items = []
    for query in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8")):
        doc = query["_id"].rsplit("_QUERY_", 1)[0]
        if doc in corpus and query.get("metadata", {}).get("answers"):
            items.append((doc, query["text"], list(query["metadata"]["answers"])))
    return corpus, items


def squad() -> tuple[Passages, list[Item]] | str:
    path = dataset("squad2/dev-v2.0.json")
    if not path.exists():
        return f"no squad2/dev-v2.0.json in {BENCH_DATA}"
    corpus: Passages = {}
    items = []
    for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
        for n, paragraph in enumerate(article["paragraphs"]):
            pid = f"{article['title']}_{n}"
            corpus[pid] = paragraph["context"]
            for qa in paragraph["qas"]:
                if not qa.get("is_impossible") and qa["answers"]:
                    items.append((pid, qa["question"], [a["text"] for a in qa["answers"]]))
    return corpus, items


def sentences_of(reply: str) -> list[str]:
    """An answer's cited sentences, their citation markers removed."""
    parts = CITATION.split(reply)
    return [p.strip() for p in parts[0::2] if p.strip()]


def score(replies: list[tuple[str, list[str]]]) -> dict[str, float]:
    contained = [any(g in reply for g in gold) for reply, gold in replies]
    whole = [all(is_whole_sentence(s) for s in sentences_of(r)) for r, _ in replies if CITATION.search(r)]
    return {
        "questions": len(replies),
        "containment": round(sum(contained) / max(1, len(contained)), 4),
        "whole_sentences": round(sum(whole) / max(1, len(whole)), 4),
    }


def through_skill(
    corpus: Passages, items: list[Item], skill: Callable[[str, list[str]], str]
) -> dict[str, float]:
    return score([(skill(question, [corpus[pid]]), gold) for pid, question, gold in items])


def through_api(name: str, corpus: Passages, items: list[Item]) -> dict[str, float]:
    from lore_common.testing.processes import start_service, wait_task

    work = Path(tempfile.mkdtemp(prefix="lore-offline-quality-"))
    wanted = {pid for pid, _, _ in items}
    docs = {pid: corpus[pid] for pid in corpus if pid in wanted}
    docdb, base = start_service("docdb", work, {"LORE__DOCDB__GRAPH_STORE__ENABLED": "false"})
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            ds, kb = "/api/v1/docdb/files/raw-files/datasets", "/api/v1/docdb/files/knowledge-bases"
            client.post(ds, json={"name": name})
            ids = list(docs)
            for start in range(0, len(ids), 200):
                files = [("files", (f"{i}.txt", docs[i].encode())) for i in ids[start : start + 200]]
                client.post(f"{ds}/{name}/files", files=files).raise_for_status()
            client.post(kb, json={"name": name})
            reply = client.post(f"{kb}/{name}/parse", json={"datasets": [name], "mode": 1}).json()
            task = wait_task(client, reply["data"]["tasks"][0]["task_id"], timeout=3600)
            if task["status"] != "completed":
                raise SystemExit(f"parse failed: {task}")
            found, retrieved = [], 0
            for pid, question, gold in items:
                body = {"query": question, "kb_id": name, "user_id": "bench"}
                data = client.post("/api/v1/docdb/chat", json=body).json()
                cited = {c.get("source_file", "").removesuffix(".txt") for c in data.get("citations") or []}
                if pid in cited:
                    retrieved += 1
                    found.append((str(data.get("response", "")), gold))
            figures = score(found)
            figures["gold_passage_cited"] = round(retrieved / max(1, len(items)), 4)
            return figures
    finally:
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)


def abstention(limit: int) -> dict[str, float] | str:
    folder = dataset("scifact")
    if not (folder / "qrels" / "test.tsv").exists():
        return f"no scifact/qrels/test.tsv in {BENCH_DATA}"
    corpus = {
        d["_id"]: f"{d.get('title', '')}. {d['text']}"
        for d in map(json.loads, (folder / "corpus.jsonl").open(encoding="utf-8"))
    }
    claims = {q["_id"]: q["text"] for q in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))}
    gold: dict[str, str] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, _ = line.split("\t")
        gold.setdefault(query, doc)
    terms = {doc: set(keywords(text)) for doc, text in corpus.items()}
    rng = random.Random(1)
    ids = list(corpus)
    answered = cited = abstained = unrelated = asked = 0
    for query, doc in list(gold.items())[: limit or None]:
        claim = claims[query]
        wanted = set(keywords(claim))
        others = sorted((d for d in corpus if d != doc), key=lambda d: -len(wanted & terms[d]))[:4]
        with_gold = answer(claim, [corpus[doc], *(corpus[d] for d in others)])
        without = answer(claim, [corpus[d] for d in others])
        drawn = answer(claim, [corpus[d] for d in rng.sample(ids, 5) if d != doc][:4])
        unrelated += drawn == NO_ANSWER
        asked += 1
        answered += with_gold != NO_ANSWER
        cited += "[1]" in with_gold
        abstained += without == NO_ANSWER
    return {
        "claims": asked,
        "answered_with_gold": round(answered / max(1, asked), 4),
        "gold_cited": round(cited / max(1, asked), 4),
        "abstained_unrelated": round(unrelated / max(1, asked), 4),
        "abstained_close_not_gold": round(abstained / max(1, asked), 4),
    }


def conll_sentences(path: Path) -> Iterator[tuple[list[str], list[tuple[int, int]]]]:
    """Sentences of a CoNLL-2003 file as tokens and their gold PER/ORG/LOC spans (IOB1 or IOB2)."""
    tokens: list[str] = []
    tags: list[str] = []
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if not line.strip() or line.startswith("-DOCSTART-"):
            if tokens:
                spans, start, label = [], None, ""
                for i, tag in enumerate([*tags, "O"]):
                    kind = tag[2:] if tag != "O" else ""
                    if start is not None and (tag == "O" or tag.startswith("B-") or kind != label):
                        if label in ("PER", "ORG", "LOC"):
                            spans.append((start, i))
                        start = None
                    if tag != "O" and start is None:
                        start, label = i, kind
                yield tokens, spans
            tokens, tags = [], []
            continue
        columns = line.split()
        tokens.append(columns[0])
        tags.append(columns[-1])


def entities(limit: int) -> dict[str, float] | str:
    path = dataset("conll2003/test.txt")
    if not path.exists():
        return f"no conll2003/test.txt in {BENCH_DATA}"
    hits = predicted = gold = 0
    for n, (tokens, spans) in enumerate(conll_sentences(path)):
        if limit and n >= limit:
            break
        found = set(entity_spans(tokens))
        hits += len(found & set(spans))
        predicted += len(found)
        gold += len(spans)
    return {"precision": round(hits / max(1, predicted), 4), "recall": round(hits / max(1, gold), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--through", choices=("skill", "api"), default="skill")
    parser.add_argument("--limit", type=int, default=0, help="questions per set (0: all)")
    parser.add_argument(
        "--sets", default="zh,en,abstain,entities", help="which of zh, en, abstain, entities to run"
    )
    args = parser.parse_args()
    figures: dict[str, Any] = {"through": args.through}
    started = time.perf_counter()
    sets = set(args.sets.split(","))
    for language, load in (("zh", cmrc), ("en", squad)):
        if language not in sets:
            continue
        loaded = load()
        if isinstance(loaded, str):
            figures[f"{language}_skipped"] = loaded
            print(f"{language}: skipped ({loaded})")
            continue
        corpus, items = loaded
        items = items[: args.limit] if args.limit else items
        got = (
            through_api(f"q{language}", corpus, items)
            if args.through == "api"
            else through_skill(corpus, items, lambda q, ps: answer(q, ps))
        )
        figures |= {f"{language}_{key}": value for key, value in got.items()}
        print(
            f"{language}: {got['questions']} answers, containment {got['containment']} (goal >= 0.70), "
            f"whole sentences {got['whole_sentences']} (goal >= 0.95)"
        )
    if "abstain" in sets:
        held = abstention(args.limit)
        if isinstance(held, str):
            figures["abstain_skipped"] = held
            print(f"abstain: skipped ({held})")
        else:
            figures |= {f"abstain_{key}": value for key, value in held.items()}
            print(
                f"abstain: {held['claims']} claims, answered with the gold abstract "
                f"{held['answered_with_gold']} (goal >= 0.90; cited {held['gold_cited']}), abstained "
                f"on unrelated abstracts {held['abstained_unrelated']} (goal >= 0.90), on close abstracts "
                f"without the gold one {held['abstained_close_not_gold']}"
            )
    ner = entities(args.limit * 10) if "entities" in sets else "not asked for"
    if isinstance(ner, str):
        figures["entities_skipped"] = ner
        print(f"entities: skipped ({ner})")
    else:
        figures |= {f"entities_{key}": value for key, value in ner.items()}
        print(f"entities: precision {ner['precision']} (goal >= 0.70), recall {ner['recall']} (goal >= 0.50)")
    figures["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
