"""Captions for the media of a `kb` insert: speech-to-text, OCR or a vision model, and video.

- audio → an OpenAI-compatible `/audio/transcriptions` endpoint (`mem.memorykb.stt`);
- image → a vision chat model when `mem.memorykb.vision` is set, else RapidOCR (its ONNX models ship
  inside the `rapidocr-onnxruntime` wheel: no download);
- video → ffmpeg (the system's, else the binary inside `imageio-ffmpeg`) extracts the audio track,
  transcribed as above, and one frame every few seconds, each captioned as an image.

A medium nothing can caption gets a null caption and a note saying why; it never fails the insert.
ffmpeg runs with an argument list (no shell) on files this service named itself.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import structlog

from lore_common.providers.chat import describe_failure
from lore_core.settings import LLMConfig

log = structlog.get_logger("lore.mem.kb.media")

FRAME_INTERVAL_S = 5
MAX_FRAMES = 4
FFMPEG_TIMEOUT_S = 120
VISION_PROMPT = "Transcribe every piece of text in this image, then describe what it shows in one sentence."

Caption = tuple[str | None, str | None]  # (caption, note explaining a missing caption)

_ocr_lock = threading.Lock()
_ocr_engine: Any = None


def _ocr(path: Path) -> str:
    global _ocr_engine
    from rapidocr_onnxruntime import RapidOCR

    with _ocr_lock:
        if _ocr_engine is None:
            _ocr_engine = RapidOCR()
        result, _ = _ocr_engine(str(path))
    return " ".join(str(line[1]).strip() for line in (result or []) if str(line[1]).strip())


def ocr_available() -> bool:
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def ffmpeg_path() -> str | None:
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg

        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except Exception:
        return None


def _image_mime(path: Path) -> str | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.verify()
            return Image.MIME.get(image.format or "", "image/png")
    except (UnidentifiedImageError, OSError, ValueError):
        return None


class Captioner:
    def __init__(self, stt: LLMConfig | None, vision: LLMConfig | None) -> None:
        self.stt = stt
        self.vision = vision
        self._clients: dict[str, Any] = {}

    def _client(self, kind: str, config: LLMConfig) -> Any:
        if kind not in self._clients:
            import openai

            self._clients[kind] = openai.AsyncOpenAI(
                api_key=config.api_key or "not-needed",
                base_url=config.base_url,
                timeout=config.timeout,
                max_retries=config.max_retries,
                http_client=openai.DefaultAioHttpClient(),
            )
        return self._clients[kind]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()

    async def audio(self, path: Path, filename: str) -> Caption:
        if self.stt is None:
            return None, "no speech-to-text provider is configured (mem.memorykb.stt)"
        try:
            client = self._client("stt", self.stt)
            response = await client.audio.transcriptions.create(
                model=self.stt.model, file=(filename, await asyncio.to_thread(path.read_bytes))
            )
        except Exception as exc:
            return None, f"speech-to-text at {self.stt.base_url} failed: {describe_failure(exc)}"
        text = str(getattr(response, "text", "") or "").strip()
        return (text, None) if text else (None, "speech-to-text returned no text")

    async def image(self, path: Path) -> Caption:
        mime = await asyncio.to_thread(_image_mime, path)
        if mime is None:
            return None, "the image could not be read (send PNG, JPEG, WebP, GIF or BMP)"
        if self.vision is not None:
            return await self._vision(path, mime)
        if not ocr_available():
            return None, "no OCR: install rapidocr-onnxruntime or configure mem.memorykb.vision"
        try:
            text = await asyncio.to_thread(_ocr, path)
        except Exception as exc:
            return None, f"OCR failed: {type(exc).__name__}: {exc}"
        return (text, None) if text else (None, "OCR found no text in the image")

    async def _vision(self, path: Path, mime: str) -> Caption:
        assert self.vision is not None
        encoded = base64.b64encode(await asyncio.to_thread(path.read_bytes)).decode()
        try:
            response = await self._client("vision", self.vision).chat.completions.create(
                model=self.vision.model,
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": VISION_PROMPT},
                            {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}},
                        ],
                    }
                ],
                max_tokens=self.vision.max_tokens,
            )
        except Exception as exc:
            return None, f"vision model at {self.vision.base_url} failed: {describe_failure(exc)}"
        text = (response.choices[0].message.content or "").strip() if response.choices else ""
        return (text, None) if text else (None, "the vision model returned no text")

    async def video(self, path: Path) -> Caption:
        ffmpeg = ffmpeg_path()
        if ffmpeg is None:
            return None, "ffmpeg is not available (install it or the imageio-ffmpeg package)"
        notes: list[str] = []
        parts: list[str] = []
        with tempfile.TemporaryDirectory(prefix="lore-video-") as work:
            folder = Path(work)
            wav = folder / "audio.wav"
            ok, error = await _run(
                ffmpeg, "-i", str(path), "-vn", "-ac", "1", "-ar", "16000", "-f", "wav", str(wav)
            )
            size = await asyncio.to_thread(lambda: wav.stat().st_size if wav.exists() else 0)
            if ok and size > 44:  # more than a WAV header
                transcript, note = await self.audio(wav, "audio.wav")
                if transcript:
                    parts.append(transcript)
                elif note:
                    notes.append(f"audio track: {note}")
            else:
                notes.append(f"no audio track could be extracted ({error})")
            ok, error = await _run(
                # The first frame, then one every FRAME_INTERVAL_S seconds.
                ffmpeg, "-i", str(path),
                "-vf", f"select='isnan(prev_selected_t)+gte(t-prev_selected_t\\,{FRAME_INTERVAL_S})'",
                "-fps_mode", "vfr", "-frames:v", str(MAX_FRAMES), str(folder / "frame_%02d.png"),
            )  # fmt: skip
            frames = sorted(await asyncio.to_thread(lambda: list(folder.glob("frame_*.png"))))
            if not frames:
                notes.append(f"no frames could be extracted ({error})")
            seen: list[str] = []
            for frame in frames:
                text, note = await self.image(frame)
                if text and text not in seen:
                    seen.append(text)
                elif note and not text:
                    notes.append(f"frame {frame.stem}: {note}")
            parts.extend(seen)
        caption = " ".join(parts).strip()
        if caption:
            return caption, "; ".join(notes) or None
        return None, "; ".join(notes) or "nothing in the video could be captioned"


async def _run(executable: str, *args: str) -> tuple[bool, str]:
    process = await asyncio.create_subprocess_exec(
        executable, "-nostdin", "-v", "error", "-y", *args,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), FFMPEG_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return False, f"ffmpeg took longer than {FFMPEG_TIMEOUT_S} s"
    message = stderr.decode(errors="replace").strip().splitlines()
    return process.returncode == 0, (message[-1][:200] if message else f"exit code {process.returncode}")
