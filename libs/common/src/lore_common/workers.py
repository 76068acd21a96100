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


class _Pipes(asyncio.SubprocessProtocol):
    """The service's end of the child's pipes. Replies are read as they arrive, in the event loop's own
    callback: each whole frame resolves its request's future there, with no reader task and no stream
    between (a stream's two `readexactly` per reply, each with its own waiter and task switch, were
    about a tenth of a chat's instructions in docdb)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.buffer = bytearray()
        self.decoder = msgspec.msgpack.Decoder(tuple[int, bool, Any])
        self.paused = False
        self.resumed: list[asyncio.Future[None]] = []
        self.done: asyncio.Future[int | None] = worker.loop.create_future()
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd != 1:
            return
        buffer = self.buffer
        buffer += data  # type: ignore[arg-type]  # pipes carry bytes
        start, end = 0, len(buffer)
        while end - start >= HEADER.size:
            (size,) = HEADER.unpack_from(buffer, start)
            if end - start < HEADER.size + size:
                break
            body = bytes(buffer[start + HEADER.size : start + HEADER.size + size])
            start += HEADER.size + size
            self.worker._answer(*self.decoder.decode(body))
        if start:
            del buffer[:start]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.worker.finished = True  # its replies have ended: nothing new may wait on it

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        for waiter in self.resumed:
            if not waiter.done():
                waiter.set_result(None)
        self.resumed.clear()

    async def drain(self) -> None:
        """Wait while the child's stdin is full (a large upsert), as a stream's `drain` would."""
        if self.paused:
            waiter = self.worker.loop.create_future()
            self.resumed.append(waiter)
            await waiter

    # The child as a process (`kill`, `wait`, `returncode`, `pid`), for its owner and the tests.

    @property
    def pid(self) -> int | None:
        return self.transport.get_pid() if self.transport is not None else None

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode() if self.transport is not None else None

    def kill(self) -> None:
        if self.transport is not None:
            self.transport.kill()

    async def wait(self) -> int | None:
        return await asyncio.shield(self.done)

    def connection_lost(self, exc: Exception | None) -> None:
        """The child exited and every pipe closed: what still waits fails, with its exit code."""
        code = self.transport.get_returncode() if self.transport is not None else None
        self.worker._lost(code)
        self.resume_writing()
        if not self.done.done():
            self.done.set_result(code)


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
        self._pipes: _Pipes | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._starting = asyncio.Lock()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count()

    def usable(self) -> bool:
        """Still running (or not started) and on the caller's event loop: else the owner makes a new one."""
        return not self.finished and self.loop is asyncio.get_running_loop()

    @property
    def process(self) -> _Pipes | None:
        """The running child, None before the first call (and after `close`)."""
        return self._pipes

    async def _start(self) -> tuple[_Pipes, asyncio.WriteTransport]:
        async with self._starting:
            if self._pipes is None or self._stdin is None:
                pipes = _Pipes(self)
                transport, _ = await self.loop.subprocess_exec(
                    lambda: pipes,
                    *self.argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=None,
                )
                stdin = transport.get_pipe_transport(0)
                assert isinstance(stdin, asyncio.WriteTransport)
                self._pipes, self._stdin = pipes, stdin
            return self._pipes, self._stdin

    async def call(self, op: str, *args: Any) -> Any:
        if self.finished:
            raise self.error(f"{self.name}: the worker process has stopped")
        if self._pipes is not None and self._stdin is not None:
            pipes, stdin = self._pipes, self._stdin
        else:
            pipes, stdin = await self._start()
        if self.finished or stdin.is_closing():  # it died while starting, or since
            raise self.error(f"{self.name}: the worker process has stopped")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = self.loop.create_future()
        self._pending[request_id] = future
        stdin.write(frame((request_id, op, *args)))
        await pipes.drain()
        return await future

    def _answer(self, request_id: int, ok: bool, payload: Any) -> None:
        future = self._pending.pop(request_id, None)
        if future is None or future.done():
            return
        if ok:
            future.set_result(payload)
        else:
            future.set_exception(self.error(f"{self.name} failed: {payload}"))

    def _lost(self, code: int | None) -> None:
        self.finished = True
        error = self.error(
            f"{self.name}: the worker process exited with code {code} before answering; "
            "the next call starts a new one (see the service log for its error)"
        )
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()

    async def close(self) -> None:
        pipes, stdin = self._pipes, self._stdin
        self._pipes = self._stdin = None
        self.finished = True
        if pipes is None or pipes.transport is None:
            return
        if stdin is not None:
            stdin.close()  # end of input: the child finishes its batch and exits
        try:
            await asyncio.wait_for(pipes.wait(), 5)
        except TimeoutError:
            pipes.kill()
            await pipes.wait()
        pipes.transport.close()
