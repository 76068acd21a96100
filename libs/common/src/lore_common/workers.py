"""Child processes for numpy-heavy work (the local embedding model, vector search), spoken to over
their stdin and stdout in length-prefixed msgpack frames.

Why processes: a forward pass or a search is dozens of numpy calls, each of which releases and retakes
the GIL. In a thread beside a busy event loop every retake waits for the loop's thread (up to the 5 ms
switch interval), so under load a 20 ms batch took 35-40 ms and slowed the loop too. A child has a GIL
and a core of its own, and the service's loop reads its replies like any other socket, with no thread.

Requests are `(id, op, *args)`; replies `(id, ok, payload)`, where a failed request's payload is the
error message. Requests queue up in the pipe while the child works, so the next batch takes what has
arrived meanwhile. End of input ends the child, so it never outlives the service, even one killed
with SIGKILL."""

from __future__ import annotations

import asyncio
import itertools
import os
import select
import struct
import sys
from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec

HEADER = struct.Struct("<I")
Request = tuple[Any, ...]
Reply = tuple[int, bool, Any]


def frame(message: Any) -> bytes:
    body = msgspec.msgpack.encode(message)
    return HEADER.pack(len(body)) + body


# ------------------------------------------------------------------ the child's side


class Inbox:
    """Requests read from a pipe: blocking for the first, then whatever else has already arrived."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.requests: deque[Request] = deque()
        self.closed = False
        self._decoder = msgspec.msgpack.Decoder(tuple[Any, ...])

    def _read(self) -> None:
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            self.closed = True
            return
        self.buffer += chunk
        while len(self.buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self.buffer)
            if len(self.buffer) < HEADER.size + size:
                break
            body = bytes(self.buffer[HEADER.size : HEADER.size + size])
            del self.buffer[: HEADER.size + size]
            self.requests.append(self._decoder.decode(body))

    def fill(self) -> None:
        while not self.requests and not self.closed:
            self._read()
        while not self.closed and select.select([self.fd], [], [], 0)[0]:
            self._read()


def serve(handle: Callable[[Inbox], list[Reply]]) -> None:
    """The child's main loop: `handle` takes the requests it will answer now from the inbox (at least
    one) and returns one reply for each."""
    fd_out = os.dup(1)
    os.dup2(2, 1)  # the protocol owns the real stdout; a stray print from a library goes to stderr
    inbox = Inbox(0)
    while True:
        inbox.fill()
        if not inbox.requests:
            return  # end of input: the service has gone
        data = memoryview(b"".join(frame(reply) for reply in handle(inbox)))
        while data:
            data = data[os.write(fd_out, data) :]


def failed(request: Request, exc: BaseException) -> Reply:
    return (int(request[0]), False, f"{type(exc).__name__}: {exc}")


# ------------------------------------------------------------------ the service's side


class Worker:
    """The service's end of one child (`python -m MODULE ARGS…`), started on first call. When the
    child dies, what it was doing fails with `error`, `finished` turns true, and the
    owner starts a new one for the next call."""

    def __init__(
        self,
        name: str,
        module: str,
        args: list[str],
        error: type[Exception],
    ) -> None:
        self.name = name
        self.argv = [sys.executable, "-m", module, *args]
        self.error = error
        self.finished = False
        self.loop = asyncio.get_running_loop()
        self._process: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count()
        self._reader: asyncio.Task[None] | None = None

    def usable(self) -> bool:
        """Still running (or not started) and on the caller's event loop: else the owner makes a new one."""
        return not self.finished and self.loop is asyncio.get_running_loop()

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self._process

    async def _start(self) -> asyncio.subprocess.Process:
        async with self._starting:
            if self._process is None:
                self._process = await asyncio.create_subprocess_exec(
                    *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
                )
                self._reader = self.loop.create_task(self._read(self._process))
            return self._process

    async def call(self, op: str, *args: Any) -> Any:
        if self.finished:
            raise self.error(f"{self.name}: the worker process has stopped")
        process = self._process or await self._start()
        assert process.stdin is not None
        request_id = next(self._ids)
        future: asyncio.Future[Any] = self.loop.create_future()
        if self.finished:  # the child died while it was starting: its reader has failed what it knew of
            raise self.error(f"{self.name}: the worker process has stopped")
        self._pending[request_id] = future
        try:
            process.stdin.write(frame((request_id, op, *args)))
            await process.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._pending.pop(request_id, None)
            if future.done():
                future.exception()  # the reader failed it too; this error is the one the caller sees
            raise self.error(f"{self.name}: the worker process is gone ({exc})") from exc
        return await future

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        decoder = msgspec.msgpack.Decoder(tuple[int, bool, Any])
        try:
            while True:
                (size,) = HEADER.unpack(await process.stdout.readexactly(HEADER.size))
                request_id, ok, payload = decoder.decode(await process.stdout.readexactly(size))
                future = self._pending.pop(request_id, None)
                if future is None or future.done():
                    continue
                if ok:
                    future.set_result(payload)
                else:
                    future.set_exception(self.error(f"{self.name} failed: {payload}"))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.finished = True
            code = await process.wait()
            error = self.error(
                f"{self.name}: the worker process exited with code {code} before answering; "
                "the next call starts a new one (see the service log for its error)"
            )
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(error)
            self._pending.clear()

    async def close(self) -> None:
        process, self._process = self._process, None
        self.finished = True
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # end of input: the child finishes its batch and exits
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
