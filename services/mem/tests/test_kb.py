from __future__ import annotations

import asyncio
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from PIL import Image, ImageDraw, ImageFont

from lore_common.testing.asgi import AppClient
from lore_common.testing.replies import prompt_of, reply
from lore_mem.kb.media import ffmpeg_path

INSERT = "/api/v1/mem/kb/insert"
QUERY = "/api/v1/mem/kb/query"
LLM = "https://llm.example.test/v1"
FACT = "Captain Ilsa Varga has kept the Zanzibar lighthouse burning since 1923."
MODEL = {
    "LORE__MEM__MEMORYKB__LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__LLM__BASE_URL": LLM,
    "LORE__MEM__MEMORYKB__LLM__API_KEY": "sk-test-kb",
    "LORE__MEM__MEMORYKB__LLM__MODEL": "gpt-4o-mini",
    "LORE__MEM__MEMORYKB__LLM__MAX_RETRIES": "0",
}
STT = {
    "LORE__MEM__MEMORYKB__STT__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__STT__BASE_URL": LLM,
    "LORE__MEM__MEMORYKB__STT__API_KEY": "sk-test-stt",
    "LORE__MEM__MEMORYKB__STT__MODEL": "whisper-1",
}
PM = {
    "LORE__MEM__MEMORYKB__PM_LLM__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__PM_LLM__BASE_URL": "https://pm.example.test/v1",
    "LORE__MEM__MEMORYKB__PM_LLM__API_KEY": "sk-test-pm",
    "LORE__MEM__MEMORYKB__PM_LLM__MODEL": "qwen2.5-7b-instruct",
}


async def insert(client: AppClient, text: str, files: dict[str, Any] | None = None) -> dict[str, Any]:
    response = await client.post(INSERT, data={"query": text}, files=files or None)
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] == "accepted" and job["query"] == text
    assert set(job) == {"id", "query", "status", "videocaption", "audiocaption", "imagecaption"}
    return dict(job)


async def finished(client: AppClient, job_id: str, limit: float = 30.0) -> dict[str, Any]:
    async with asyncio.timeout(limit):
        while True:
            job: dict[str, Any] = (await client.get(f"{INSERT}/{job_id}")).json()
            if job["status"] in ("done", "failed"):
                return job
            await asyncio.sleep(0.02)


async def ask(client: AppClient, question: str, **body: Any) -> dict[str, Any]:
    response = await client.post(QUERY, json={"query": question, **body})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def communities_ready(client: AppClient, limit: float = 10.0) -> None:
    async with asyncio.timeout(limit):
        while not client.app.state.kb.store.communities:
            await asyncio.sleep(0.02)


async def test_an_insert_is_queryable_in_every_mode_offline(mem: AppClient) -> None:
    job = await insert(mem, FACT)
    done = await finished(mem, job["id"], limit=5.0)
    assert done["status"] == "done" and done["chunks"] == 1 and done["entities"] >= 2
    await insert(mem, "The Oslo ferry timetable changes every spring.")
    await communities_ready(mem)
    for mode in ("naive", "local", "global", "hybrid"):
        answer = await ask(mem, "Who keeps the Zanzibar lighthouse burning?", mode=mode)
        assert answer["mode"] == mode and answer["pm_used"] is False and answer["pm_memory"] is None
        assert FACT in answer["rag_memory"], (mode, answer["rag_memory"])
        assert "Ilsa Varga" in answer["final_answer"]
    local = await ask(mem, "Who keeps the Zanzibar lighthouse burning?", mode="local")
    assert "-----Entities-----" in local["rag_memory"] and "Zanzibar" in local["rag_memory"]
    assert "-----Relations-----" in local["rag_memory"]
    assert (await ask(mem, "Zanzibar lighthouse?"))["mode"] == "hybrid"


async def test_global_mode_answers_from_community_summaries(mem_factory: Any) -> None:
    summary = "The Varga family has tended the Zanzibar light for a century (community report)."
    summaries: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        system, user = prompt_of(request)
        if system.startswith("Extract"):
            return reply(
                {
                    "entities": [
                        {
                            "name": "Ilsa Varga",
                            "type": "person",
                            "description": "Keeper of the Zanzibar lighthouse.",
                        },
                        {
                            "name": "Zanzibar lighthouse",
                            "type": "place",
                            "description": "A lighthouse lit since 1923.",
                        },
                    ],
                    "relations": [
                        {
                            "source": "Ilsa Varga",
                            "target": "Zanzibar lighthouse",
                            "description": "Ilsa Varga keeps the Zanzibar lighthouse burning.",
                            "weight": 2,
                        }
                    ],
                }
            )
        if system.startswith("You summarise"):
            summaries.append(user)
            return reply(summary)
        assert system.startswith("Answer the question from the memory context")
        return reply("Ilsa Varga keeps it burning [1].")

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/chat/completions").mock(side_effect=model)
        async with mem_factory(**MODEL) as client:
            assert (await finished(client, (await insert(client, FACT))["id"]))["status"] == "done"
            await communities_ready(client)
            answer = await ask(client, "Who tends the light?", mode="global")
            assert "-----Communities-----" in answer["rag_memory"]
            assert summary in answer["rag_memory"]
            assert FACT not in answer["rag_memory"]  # global reads summaries, not chunks
            assert answer["final_answer"] == "Ilsa Varga keeps it burning [1]."
            assert "Keeper of the Zanzibar lighthouse" in summaries[0]
            naive = await ask(client, "Who tends the light?", mode="naive")
            assert summary not in naive["rag_memory"] and FACT in naive["rag_memory"]


@pytest.mark.parametrize("relevant", [True, False])
async def test_parametric_memory_first_when_asked(mem_factory: Any, relevant: bool) -> None:
    def pm(request: httpx.Request) -> httpx.Response:
        return reply({"answer": "Paris is the capital of France.", "relevant": relevant})

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        route = router.post("https://pm.example.test/v1/chat/completions").mock(side_effect=pm)
        async with mem_factory(**PM) as client:
            await finished(client, (await insert(client, FACT))["id"])
            answer = await ask(client, "What is the capital of France? Zanzibar?", use_pm=True)
            assert route.call_count == 1
            assert answer["pm_memory"] == "Paris is the capital of France."
            assert answer["pm_relevant"] is relevant and answer["pm_used"] is relevant
            if relevant:
                assert (
                    answer["rag_memory"] == "" and answer["final_answer"] == "Paris is the capital of France."
                )
            else:
                assert FACT in answer["rag_memory"]
            plain = await ask(client, "Zanzibar?")
            assert route.call_count == 1 and plain["pm_used"] is False and plain["pm_memory"] is None


async def test_use_pm_without_a_pm_model_runs_retrieval(mem: AppClient) -> None:
    await finished(mem, (await insert(mem, FACT))["id"])
    answer = await ask(mem, "Zanzibar lighthouse?", use_pm=True, mode="naive")
    assert answer["pm_used"] is False and answer["pm_memory"] is None and FACT in answer["rag_memory"]


def wav_bytes() -> bytes:
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x10" * 16000)
    return buffer.getvalue()


async def test_audio_is_transcribed_by_the_speech_to_text_endpoint(mem_factory: Any) -> None:
    transcript = "Remember that the spare key to the boathouse is under the blue stone."
    uploads: list[bytes] = []

    def transcribe(request: httpx.Request) -> httpx.Response:
        uploads.append(request.content)
        return httpx.Response(200, json={"text": transcript})

    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/audio/transcriptions").mock(side_effect=transcribe)
        async with mem_factory(**STT) as client:
            job = await insert(client, "Voice note", {"audio": ("note.wav", wav_bytes(), "audio/wav")})
            done = await finished(client, job["id"])
            assert done["status"] == "done" and done["audiocaption"] == transcript
            assert b"whisper-1" in uploads[0] and b"RIFF" in uploads[0]
            answer = await ask(client, "Where is the boathouse key?", mode="naive")
            assert "blue stone" in answer["rag_memory"]
    # No speech-to-text configured: the caption stays null and the job says why.
    async with mem_factory() as client:
        job = await insert(client, "Voice note", {"audio": ("note.wav", wav_bytes(), "audio/wav")})
        done = await finished(client, job["id"])
        assert done["status"] == "done" and done["audiocaption"] is None
        assert "mem.memorykb.stt" in done["notes"]["audio"]


def text_png(text: str) -> bytes:
    image = Image.new("RGB", (900, 140), "white")
    ImageDraw.Draw(image).text((20, 40), text, fill="black", font=ImageFont.load_default(size=48))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


async def test_an_image_is_read_by_the_offline_ocr(mem: AppClient) -> None:
    job = await insert(
        mem, "Photo of a sign", {"image": ("sign.png", text_png("Harbour gate code 4471"), "image/png")}
    )
    done = await finished(mem, job["id"], limit=60)
    assert done["status"] == "done", done
    assert "4471" in done["imagecaption"] and "Harbour" in done["imagecaption"]
    answer = await ask(mem, "What is the harbour gate code?", mode="naive")
    assert "4471" in answer["rag_memory"]
    broken = await insert(mem, "Not really a picture", {"image": ("x.png", b"plain text", "image/png")})
    done = await finished(mem, broken["id"])
    assert (
        done["status"] == "done"
        and done["imagecaption"] is None
        and "could not be read" in done["notes"]["image"]
    )


@pytest.mark.skipif(ffmpeg_path() is None, reason="needs ffmpeg (imageio-ffmpeg ships one)")
async def test_a_video_gets_its_audio_transcribed_and_its_frames_read(
    mem_factory: Any, tmp_path: Path
) -> None:
    frame = tmp_path / "frame.png"
    frame.write_bytes(text_png("Platform 9 departs 0815"))
    video = tmp_path / "clip.mp4"
    subprocess.run(
        [
            str(ffmpeg_path()), "-v", "error", "-y", "-loop", "1", "-i", str(frame),
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
            "-t", "2", "-vf", "scale=900:140", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-c:a", "aac",
            "-shortest", str(video),
        ],
        check=True,
    )  # fmt: skip
    with respx.mock(assert_all_called=False, using="httpx") as router:
        router.route(host="mem.test").pass_through()
        router.post(f"{LLM}/audio/transcriptions").mock(
            return_value=httpx.Response(200, json={"text": "The night train leaves from platform nine."})
        )
        async with mem_factory(**STT) as client:
            job = await insert(
                client, "Station clip", {"video": ("clip.mp4", video.read_bytes(), "video/mp4")}
            )
            done = await finished(client, job["id"], limit=90)
            assert done["status"] == "done", done
            assert "night train" in done["videocaption"] and "0815" in done["videocaption"], done["notes"]


async def test_bad_requests_are_400_and_unknown_jobs_404(mem: AppClient) -> None:
    assert (await mem.post(INSERT, data={"query": "  "})).status_code == 400
    assert (await mem.post(INSERT, files={"image": ("a.png", text_png("x"), "image/png")})).status_code == 400
    assert (await mem.post(QUERY, json={"query": ""})).status_code == 400
    bad_mode = await mem.post(QUERY, json={"query": "x", "mode": "deep"})
    assert bad_mode.status_code == 400 and "mode" in json.dumps(bad_mode.json())
    assert (await mem.get(f"{INSERT}/nope")).status_code == 404
    assert (await mem.get(f"{INSERT}/..%2F..%2Fetc")).status_code == 404


async def test_a_crash_mid_insert_leaves_the_store_readable_and_the_job_failed(
    mem_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async with mem_factory() as client:
        await finished(client, (await insert(client, FACT))["id"])
        store = client.app.state.kb.store

        def torn_write(segment: Any) -> None:
            (store.segments_dir / ".000000000002.seg.dead.tmp").write_bytes(b"\x85half a segm")
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(store, "write_segment", torn_write)
        done = await finished(client, (await insert(client, "The Oslo ferry sails at dawn."))["id"])
        assert done["status"] == "failed" and "No space left on device" in done["error"]
        assert "Oslo" not in (await ask(client, "Oslo ferry?", mode="naive"))["rag_memory"]
    # A job a killed process left half-way.
    jobs = tmp_path / "mem" / "kb" / "jobs"
    (jobs / "left-running.json").write_text(
        json.dumps({"id": "left-running", "query": "x", "status": "processing"})
    )
    async with mem_factory() as client:
        assert FACT in (await ask(client, "Zanzibar lighthouse?", mode="naive"))["rag_memory"]
        left = (await client.get(f"{INSERT}/left-running")).json()
        assert left["status"] == "failed" and "interrupted" in left["error"]
    assert not list((tmp_path / "mem" / "kb" / "segments").glob("*.tmp"))


async def test_fifty_concurrent_inserts_all_become_queryable_and_survive_a_restart(mem_factory: Any) -> None:
    async with mem_factory() as client:
        jobs = await asyncio.gather(
            *(
                insert(client, f"Locker {i} holds the parcel with tracking code ZX{i:04d}Q.")
                for i in range(50)
            )
        )
        results = await asyncio.gather(*(finished(client, job["id"]) for job in jobs))
        assert [r["status"] for r in results] == ["done"] * 50
        for i in (0, 17, 49):
            assert f"ZX{i:04d}Q" in (await ask(client, f"ZX{i:04d}Q", mode="naive"))["rag_memory"]
            # Local recall finds the entity the question names, punctuation around it or not.
            local = await ask(client, f"Which locker holds parcel ZX{i:04d}Q?", mode="local")
            assert f"Locker {i} holds" in local["rag_memory"].split("-----Sources-----")[1]
        await communities_ready(client)
    async with mem_factory() as client:
        store = client.app.state.kb.store
        assert len(store.chunks) == 50 and store.communities
        found = [
            f"ZX{i:04d}Q" in (await ask(client, f"ZX{i:04d}Q", mode="naive"))["rag_memory"] for i in range(50)
        ]
        assert all(found)


async def test_compaction_keeps_every_insert(mem_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lore_mem.kb.store.COMPACT_AFTER_SEGMENTS", 5)
    async with mem_factory() as client:
        for i in range(12):
            await finished(client, (await insert(client, f"Shelf {i} stores jar code QJ{i:03d}."))["id"])
        segments = client.app.state.kb.store.segments_dir
        assert len(list(segments.glob("*.seg"))) < 5
    async with mem_factory() as client:
        for i in range(12):
            assert f"QJ{i:03d}" in (await ask(client, f"QJ{i:03d}", mode="naive"))["rag_memory"]
