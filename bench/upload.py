"""Chunked upload throughput: a 1 GiB file of random bytes through the gateway as 8 MiB chunks on 4
parallel streams, then complete; compared with a plain dd-style 1 GiB write (fsynced, as the upload's
complete is) to the same disk, in alternating rounds.
Also the peak RSS of the gateway and of docdb. Starts both on loopback; stops them at the end.

Goal: upload MB/s >= 0.5 x disk MB/s; peak RSS of each process < 200 MB.

`--client` adds, in each round, the same file through `lore-client`'s `AsyncLore.upload()` (chunked,
`--streams` in parallel, resumable), so the client's rate is measured beside the raw HTTP one and the
disk's on the same minute (same goal: >= 0.5 x disk).

    uv run python bench/upload.py [--size-mib 1024] [--chunk-mib 8] [--streams 4] [--client]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import aiohttp

from lore_client import AsyncLore
from lore_common.testing.processes import ServerProcess, free_port

MIB = 1024 * 1024


def make_source(path: Path, size: int, block: int) -> str:
    digest = hashlib.sha256()
    with path.open("wb") as out:
        left = size
        while left:
            piece = os.urandom(min(block, left))
            digest.update(piece)
            out.write(piece)
            left -= len(piece)
    return digest.hexdigest()


def disk_write_mb_s(folder: Path, size: int, block: int) -> float:
    """dd if=/dev/urandom-like data of=folder/file bs=block, fsync at the end (data pre-generated)."""
    data = os.urandom(block)
    target = folder / "dd.bin"
    started = time.perf_counter()
    with target.open("wb") as out:
        for _ in range(size // block):
            out.write(data)
        out.flush()
        os.fsync(out.fileno())
    elapsed = time.perf_counter() - started
    target.unlink()
    return size / MIB / elapsed


class PeakRss(threading.Thread):
    def __init__(self, processes: dict[str, ServerProcess]) -> None:
        super().__init__(daemon=True)
        self.processes = processes
        self.peak = {name: 0 for name in processes}
        self.peak_single = {name: 0 for name in processes}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for name, process in self.processes.items():
                self.peak[name] = max(self.peak[name], process.rss_bytes())
                self.peak_single[name] = max(self.peak_single[name], process.largest_rss_bytes())
            time.sleep(0.05)


async def upload(base: str, source: Path, size: int, chunk: int, streams: int) -> tuple[float, dict]:
    total_chunks = -(-size // chunk)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session:
        await session.post(f"{base}", json={"name": "bench"})
        started = time.perf_counter()
        async with session.post(
            f"{base}/bench/upload/init",
            json={"filename": "random.bin", "total_chunks": total_chunks, "total_size": size},
        ) as r:
            upload_id = (await r.json())["upload_id"]
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(total_chunks):
            queue.put_nowait(index)

        async def stream() -> None:
            with source.open("rb") as handle:
                while not queue.empty():
                    index = queue.get_nowait()
                    handle.seek(index * chunk)
                    body = handle.read(chunk)
                    url = f"{base}/bench/upload/{upload_id}/chunk?chunk_index={index}"
                    async with session.post(url, data=body) as r:
                        if r.status != 200:
                            raise RuntimeError(f"chunk {index}: {r.status} {await r.text()}")

        await asyncio.gather(*(stream() for _ in range(streams)))
        async with session.post(f"{base}/bench/upload/{upload_id}/complete") as r:
            result = await r.json()
            if r.status != 200:
                raise RuntimeError(f"complete: {r.status} {result}")
        return time.perf_counter() - started, result


async def client_upload(url: str, source: Path, chunk: int, streams: int, state: Path) -> tuple[float, str]:
    """The same file through lore-client: returns the seconds and the stored name."""
    async with AsyncLore(url) as lore:
        started = time.perf_counter()
        [stored] = await lore.upload("bench", [source], chunk_size=chunk, parallel=streams, state_dir=state)
        return time.perf_counter() - started, stored.filename


def sha256_of(path: Path, block: int) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while piece := handle.read(block):
            digest.update(piece)
    return digest.hexdigest()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--chunk-mib", type=int, default=8)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--client", action="store_true", help="also upload through lore-client, side by side")
    args = parser.parse_args()
    size, chunk = args.size_mib * MIB, args.chunk_mib * MIB
    work = Path(tempfile.mkdtemp(prefix="lore-bench-upload-", dir=os.environ.get("LORE_BENCH_DIR")))
    print(f"generating {args.size_mib} MiB of random bytes in {work} …", flush=True)
    source = work / "source.bin"
    expected = make_source(source, size, chunk)
    # This disk's fsynced write speed swings between runs (350 to 2,200 MB/s seen here), so each round
    # writes the plain file and then uploads, back to back, and the figures are medians of the rounds.

    docdb_port, gateway_port = free_port(), free_port()
    env = {
        "LORE_CONFIG_DIR": str(work),
        "LORE__LOGGING__LEVEL": "WARNING",
        "LORE__DOCDB__SERVER__PORT": str(docdb_port),
        "LORE__DOCDB__SERVER__DATA_DIR": str(work / "docdb"),
        "LORE__DOCDB__EMBEDDING_API__PROVIDER": "hashing",
        "LORE__GATEWAY__PORT": str(gateway_port),
        "LORE__GATEWAY__DOCDB_URL": f"http://127.0.0.1:{docdb_port}",
    }
    docdb = ServerProcess([sys.executable, "-m", "lore_docdb"], env=env, log_path=work / "docdb.log")
    gateway = ServerProcess([sys.executable, "-m", "lore_gateway"], env=env, log_path=work / "gateway.log")
    try:
        docdb.wait_healthy(f"http://127.0.0.1:{docdb_port}/health", timeout=120)
        gateway.wait_healthy(f"http://127.0.0.1:{gateway_port}/", timeout=60)
        sampler = PeakRss({"gateway": gateway, "docdb": docdb})
        baseline = {"gateway": gateway.rss_bytes(), "docdb": docdb.rss_bytes()}
        sampler.start()
        base = f"http://127.0.0.1:{gateway_port}/api/v1/docdb/files/raw-files/datasets"
        disks, rates, ratios, client_rates, client_ratios = [], [], [], [], []
        client_identical = True
        raw_dir = work / "docdb" / "raw" / "bench"
        gateway_url = f"http://127.0.0.1:{gateway_port}"
        for round_ in range(args.rounds):
            disks.append(disk_write_mb_s(work, size, chunk))
            # With --client the two uploads take turns going first, so neither always follows the other.
            client_first = args.client and round_ % 2 == 1
            if client_first:
                seconds, name = await client_upload(gateway_url, source, chunk, args.streams, work / "state")
            elapsed, result = await upload(base, source, size, chunk, args.streams)
            if args.client and not client_first:
                seconds, name = await client_upload(gateway_url, source, chunk, args.streams, work / "state")
            rates.append(size / MIB / elapsed)
            ratios.append(rates[-1] / disks[-1])
            line = f"round {round_ + 1}: disk {disks[-1]:.0f} MB/s, upload {rates[-1]:.0f} MB/s"
            line += f", ratio {ratios[-1]:.2f}"
            if args.client:
                client_rates.append(size / MIB / seconds)
                client_ratios.append(client_rates[-1] / disks[-1])
                line += f"; lore-client {client_rates[-1]:.0f} MB/s, ratio {client_ratios[-1]:.2f}"
                if round_ == args.rounds - 1:
                    client_identical = sha256_of(raw_dir / name, chunk) == expected
                (raw_dir / name).unlink()
            print(line, flush=True)
            if round_ < args.rounds - 1:
                (raw_dir / result["data"]["filename"]).unlink()
        # The same upload straight to docdb, to show what the gateway costs.
        direct = f"http://127.0.0.1:{docdb_port}/api/v1/docdb/files/raw-files/datasets"
        direct_elapsed, _ = await upload(direct, source, size, chunk, args.streams)
        direct_rate = size / MIB / direct_elapsed
        sampler.done.set()
        sampler.join()
        identical = sha256_of(raw_dir / result["data"]["filename"], chunk) == expected and client_identical
    finally:
        gateway.stop()
        docdb.stop()
        shutil.rmtree(work, ignore_errors=True)
    rate, disk, ratio = statistics.median(rates), statistics.median(disks), statistics.median(ratios)
    figures = {
        "upload_mb_s": round(rate, 1),
        "disk_write_mb_s": round(disk, 1),
        "disk_write_min_mb_s": round(min(disks), 1),
        "disk_write_max_mb_s": round(max(disks), 1),
        "upload_vs_disk_ratio": round(ratio, 3),
        "upload_min_mb_s": round(min(rates), 1),
        "upload_max_mb_s": round(max(rates), 1),
        "rounds": args.rounds,
        "gateway_peak_rss_mb": round(sampler.peak["gateway"] / MIB, 1),
        "docdb_peak_rss_mb": round(sampler.peak["docdb"] / MIB, 1),
        "gateway_worker_peak_rss_mb": round(sampler.peak_single["gateway"] / MIB, 1),
        "docdb_worker_peak_rss_mb": round(sampler.peak_single["docdb"] / MIB, 1),
        "direct_upload_mb_s": round(direct_rate, 1),
        "gateway_start_rss_mb": round(baseline["gateway"] / MIB, 1),
        "docdb_start_rss_mb": round(baseline["docdb"] / MIB, 1),
        "byte_identical": int(identical),
        "goal_ratio": 0.5,
        **(
            {
                "client_upload_mb_s": round(statistics.median(client_rates), 1),
                "client_vs_disk_ratio": round(statistics.median(client_ratios), 3),
                "client_vs_raw_http_ratio": round(statistics.median(client_rates) / rate, 3),
                "client_upload_min_mb_s": round(min(client_rates), 1),
                "client_upload_max_mb_s": round(max(client_rates), 1),
            }
            if args.client
            else {}
        ),
        "goal_peak_rss_mb": 200,
    }
    print(
        f"uploaded {args.size_mib} MiB: median {rate:.0f} MB/s, median ratio {ratio:.2f} x disk "
        f"(goal >= 0.5; straight to docdb {direct_rate:.0f} MB/s); peak RSS (whole process tree / worker) "
        f"gateway {figures['gateway_peak_rss_mb']}/{figures['gateway_worker_peak_rss_mb']} MB, docdb "
        f"{figures['docdb_peak_rss_mb']}/{figures['docdb_worker_peak_rss_mb']} MB (goal < 200); "
        f"byte-identical: {identical}"
    )
    if args.client:
        print(
            f"lore-client: median {figures['client_upload_mb_s']} MB/s, ratio "
            f"{figures['client_vs_disk_ratio']} x disk (goal >= 0.5), "
            f"{figures['client_vs_raw_http_ratio']} x the raw HTTP upload"
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
