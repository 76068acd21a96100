"""Pictures inside PDF and DOCX files are captioned by the vision model of `docdb.vlm` (through the
openai SDK, HTTP mocked with respx) and the captions are parsed with the text; without one, nothing
changes."""

from __future__ import annotations

import base64
import io
import json
import random
from typing import Any

import httpx
import respx
from PIL import Image

from lore_common.testing.flows import KB, parse, upload, wait_task
from lore_common.testing.replies import chat_completion

VLM = {
    "LORE__DOCDB__VLM__PROVIDER": "openai",
    "LORE__DOCDB__VLM__API_KEY": "sk-vision",
    "LORE__DOCDB__VLM__BASE_URL": "http://vlm.test/v1",
    "LORE__DOCDB__VLM__MODEL": "gpt-4o-mini",
}
CAPTION = "A bar chart of ferry crossings to Skye per year, peaking at 4,200 in 1923."


def noisy_png(seed: int) -> bytes:
    """A picture big enough to count (noise does not compress below the small-picture cut)."""
    rng = random.Random(seed)
    image = Image.new("RGB", (64, 64))
    image.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(64 * 64)])
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def scanned_pdf() -> bytes:
    """A PDF whose only page is a picture (a scan): no text layer at all."""
    out = io.BytesIO()
    Image.open(io.BytesIO(noisy_png(1))).save(out, "PDF")
    return out.getvalue()


def report_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Harbour report for the island ferries.")
    document.add_picture(io.BytesIO(noisy_png(2)))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


async def test_pictures_are_captioned_into_the_parsed_text(docdb_factory: Any) -> None:
    seen: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        return httpx.Response(200, json=chat_completion(CAPTION))

    with respx.mock(assert_all_called=True, using="httpx") as router:
        router.route(host="docdb.test").pass_through()
        router.post("http://vlm.test/v1/chat/completions").mock(side_effect=answer)
        async with docdb_factory(**VLM) as client:
            await upload(client, "harbour", {"scan.pdf": scanned_pdf(), "report.docx": report_docx()})
            await client.post(KB, json={"name": "harbour"})
            [task_id] = await parse(client, "harbour", ["harbour"], mode=1)
            task = await wait_task(client, task_id)
            assert task["status"] == "completed", task
            assert "skipped_files" not in task["metadata"]  # the scan has text now: its caption
            found = await client.post(
                "/api/v1/docdb/retrieve", json={"kb_id": "harbour", "query": "ferry crossings Skye 1923"}
            )
            chunks = await client.app.state.kb_store.chunks_of_kb("harbour")
    assert {file for _, text, _, file in chunks if f"[Picture 1: {CAPTION}]" in text} == {
        "scan.pdf",
        "report.docx",
    }
    assert any("Harbour report" in text and CAPTION in text for _, text, _, _ in chunks)  # beside its text
    assert CAPTION in found.json()["data"][0]["content"]  # and a question about the picture finds it
    assert len(seen) == 2
    for body in seen:  # what the vision model was sent: the prompt and the picture, as the API takes them
        assert body["model"] == "gpt-4o-mini"
        [message] = body["messages"]
        kinds = [part["type"] for part in message["content"]]
        assert kinds == ["text", "image_url"]
        url = message["content"][1]["image_url"]["url"]
        assert url.startswith("data:image/")
        assert base64.b64decode(url.split(",", 1)[1])[:4] in (
            b"\x89PNG",
            b"\xff\xd8\xff\xe0",
            b"\xff\xd8\xff\xdb",
        )


async def test_without_a_vision_model_a_scan_is_skipped_with_its_reason(docdb_factory: Any) -> None:
    async with docdb_factory() as client:
        await upload(client, "scans", {"scan.pdf": scanned_pdf(), "note.txt": b"A note about ferries."})
        await client.post(KB, json={"name": "scans"})
        [task_id] = await parse(client, "scans", ["scans"], mode=1)
        task = await wait_task(client, task_id)
    assert task["status"] == "completed"
    assert task["metadata"]["skipped_files"] == [{"file": "scan.pdf", "reason": "no text"}]


async def test_a_failing_vision_model_leaves_the_text_parsed(docdb_factory: Any) -> None:
    env = {**VLM, "LORE__DOCDB__VLM__MAX_RETRIES": "0"}
    with respx.mock(assert_all_called=True, using="httpx") as router:
        router.route(host="docdb.test").pass_through()
        router.post("http://vlm.test/v1/chat/completions").mock(
            return_value=httpx.Response(
                400, json={"error": {"message": "image too large", "type": "invalid"}}
            )
        )
        async with docdb_factory(**env) as client:
            await upload(client, "reports", {"report.docx": report_docx()})
            await client.post(KB, json={"name": "reports"})
            [task_id] = await parse(client, "reports", ["reports"], mode=1)
            task = await wait_task(client, task_id)
            found = await client.post(
                "/api/v1/docdb/retrieve", json={"kb_id": "reports", "query": "harbour report island ferries"}
            )
    assert task["status"] == "completed", task
    assert any("Harbour report" in item["content"] for item in found.json()["data"])
