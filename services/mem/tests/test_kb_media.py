"""mem `kb` inserts of media: audio by speech-to-text, images by the offline OCR, video by both."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from lore_common.testing.asgi import AppClient
from lore_common.testing.flows import ask, finished, insert, text_png
from lore_mem.kb.media import ffmpeg_path

LLM = "https://llm.example.test/v1"

STT = {
    "LORE__MEM__MEMORYKB__STT__PROVIDER": "openai",
    "LORE__MEM__MEMORYKB__STT__BASE_URL": LLM,
    "LORE__MEM__MEMORYKB__STT__API_KEY": "sk-test-stt",
    "LORE__MEM__MEMORYKB__STT__MODEL": "whisper-1",
}


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
