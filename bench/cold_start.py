"""Cold start: from a fresh clone, the README's first command to a healthy stack and a first answered chat.

Clones this repository (`git clone -q`, committed state only) into a temporary folder and runs the
README's first command there, `uv run just up` (uv builds the clone's own `.venv` from the package
cache, then `lore-up` starts the gateway, docdb, gen and mem on embedded stores), on free loopback
ports. It times, wall and CPU:

- the command to the gateway's `/health` answering 200 (all three services up), with its phases: the
  environment synced (the recipe's line, echoed by just), the launcher started, each service healthy;
- `uv run lore --help`: the first run (nothing of the CLI compiled yet), then `--runs` more (p50);
- a first answered chat: `uv run lore ingest examples/people --kb people`, then `uv run lore chat`
  (whose answer must name Hopper), and `--runs` more chats (p50); the command to the first answer is
  the sum of the health, ingest and chat times (the `--help` runs in between are the bench's own);
- Ctrl-C to everything stopped, then `uv run just up` again in the same clone (data and compiled
  modules in place: a second start).

Every process it started is stopped and the clone removed. The package cache is expected warm (the
goal is for that case); `--where` puts the clone elsewhere: uv hardlinks from its cache only within one
file system and copies otherwise. The machine's load average at start comes first: on a shared
machine wall times are upper bounds. CPU seconds are those of the process tree (reaped children
included), so they hold where wall times do not.

    uv run python bench/cold_start.py [--runs 5] [--where DIR] [--no-second-start]

Goals (issue #45): fresh clone to healthy stack ≤ 25 s, `uv run lore --help` ≤ 0.5 s warm. The last
line is one JSON object of figures, with `*_goal_ratio` (measured / goal; ≤ 1 meets it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
STACK_GOAL_S = 25.0
HELP_GOAL_S = 0.5
START_TIMEOUT_S = 300.0
QUESTION = "Who developed the first compiler?"
SERVICES = ("docdb", "gen", "mem")
UV_SAYS = ("Prepared", "Installed", "warning: Failed to hardlink")


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports (held together while picked, so no two are the same)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def clean_env(ports: dict[str, int]) -> dict[str, str]:
    """This shell's environment without the bench's own virtual environment or Lore settings, plus ports."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LORE_", "UV_PROJECT", "VIRTUAL_ENV", "PYTEST")) and k != "CONDA_PREFIX"
    }
    outer = os.environ.get("VIRTUAL_ENV")
    if outer:
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(outer)
        )
    env["LORE__GATEWAY__PORT"] = str(ports["gateway"])
    for name in SERVICES:
        env[f"LORE__{name.upper()}__SERVER__PORT"] = str(ports[name])
    env["LORE_URL"] = f"http://127.0.0.1:{ports['gateway']}"
    return env


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # loopback only
            return bool(response.status == 200)
    except Exception:
        return False


def tree_cpu(root: psutil.Process, known: dict[int, psutil.Process]) -> float:
    """CPU seconds of `root` and every descendant seen so far (live ones, plus what they reaped)."""
    try:
        for child in root.children(recursive=True):
            known.setdefault(child.pid, child)
    except psutil.NoSuchProcess:
        pass
    total = 0.0
    for process in [root, *known.values()]:
        try:
            t = process.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


@dataclass
class Stack:
    """`uv run just up` in the clone, its output lines with the second each arrived, its process tree."""

    clone: Path
    env: dict[str, str]
    ports: dict[str, int]
    started: float = 0.0
    process: subprocess.Popen[str] | None = None
    lines: list[tuple[float, str]] = field(default_factory=list)
    known: dict[int, psutil.Process] = field(default_factory=dict)
    cpu_before: float = 0.0

    def start(self) -> None:
        self.lines.clear()
        self.known.clear()
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            ["uv", "run", "just", "up"],
            cwd=self.clone,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.perf_counter() - self.started, line.rstrip()))

    def first(self, text: str) -> float | None:
        return next((t for t, line in list(self.lines) if text in line), None)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    def cpu(self) -> float:
        assert self.process is not None
        try:
            return tree_cpu(psutil.Process(self.process.pid), self.known)
        except psutil.NoSuchProcess:
            return 0.0

    def wait_healthy(self) -> dict[str, float]:
        """Seconds from the start to each service's and then the gateway's `/health` answering 200."""
        assert self.process is not None
        ready: dict[str, float] = {}
        deadline = self.started + START_TIMEOUT_S
        while "gateway" not in ready:
            if self.process.poll() is not None:
                tail = "\n".join(line for _, line in self.lines[-30:])
                raise SystemExit(f"`uv run just up` exited with {self.process.returncode}:\n{tail}")
            if time.perf_counter() > deadline:
                raise SystemExit(f"not healthy after {START_TIMEOUT_S:.0f} s")
            for name in (*SERVICES, "gateway"):
                if name not in ready and healthy(f"{self.url(name)}/health"):
                    ready[name] = time.perf_counter() - self.started
            self.cpu()  # note the children while they live, so their CPU is counted
            time.sleep(0.05)
        return ready

    def stop(self) -> float:
        """Ctrl-C (SIGINT to the command's process group), as a user would; seconds until it exits."""
        if self.process is None or self.process.poll() is not None:
            return 0.0
        self.cpu()
        began = time.perf_counter()
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        seconds = time.perf_counter() - began
        # Whatever outlived it (it should be nothing): each process this stack started, by its id.
        for process in self.known.values():
            try:
                if process.is_running():
                    process.kill()
            except psutil.NoSuchProcess:
                pass
        return seconds


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (its whole waited-for tree) of one command, and its output; fails loudly."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return wall, cpu, done.stdout + done.stderr


def repeated(cmd: list[str], cwd: Path, env: dict[str, str], runs: int) -> tuple[float, float]:
    """p50 wall and p50 CPU seconds of `runs` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, _ = run(cmd, cwd, env)
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def measure(args: argparse.Namespace, clone: Path, figures: dict[str, Any]) -> None:
    names = ["gateway", *SERVICES]
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    env = clean_env(ports)
    began = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
    figures["clone_s"] = round(time.perf_counter() - began, 2)

    stack = Stack(clone, env, ports)
    try:
        measure_stack(args, stack, figures)
    finally:
        stack.stop()  # a no-op once stopped; here for a run that failed half-way


def measure_stack(args: argparse.Namespace, stack: Stack, figures: dict[str, Any]) -> None:
    clone, env = stack.clone, stack.env
    stack.start()
    ready = stack.wait_healthy()
    cpu = stack.cpu()
    health_s = ready["gateway"]
    figures["up_to_health_s"] = round(health_s, 2)
    figures["up_to_health_cpu_s"] = round(cpu, 2)
    figures["clone_to_health_s"] = round(figures["clone_s"] + health_s, 2)
    synced = stack.first("lore-up")  # just echoes the recipe's line once uv has synced and run it
    launched = stack.first("lore: starting")
    figures["sync_s"] = round(synced, 2) if synced is not None else None
    figures["launcher_s"] = round(launched, 2) if launched is not None else None
    for name in SERVICES:
        figures[f"{name}_healthy_s"] = round(ready[name], 2)
    # uv's own summary: the workspace's packages built, the environment linked (or copied, when the
    # clone is on another file system than uv's cache: "Failed to hardlink files; falling back to full copy").
    said = [line.strip() for _, line in stack.lines if line.strip().startswith(UV_SAYS)]
    installed = "; ".join(said)
    figures["uv_copied"] = any("full copy" in line for line in said)
    print(f"clone                  {figures['clone_s']:6.2f} s")
    print(f"uv sync + just         {figures['sync_s']} s  ({installed or 'uv said nothing'})")
    print(f"lore-up started        {figures['launcher_s']} s")
    for name in SERVICES:
        print(f"{name:<6} healthy         {ready[name]:6.2f} s")
    print(f"gateway /health 200    {health_s:6.2f} s wall, {cpu:.1f} CPU-s (uv, just, lore-up, services)")
    print(f"fresh clone to healthy {figures['clone_to_health_s']:6.2f} s   (goal {STACK_GOAL_S:.0f} s)")

    wall, cpu_help, _ = run(["uv", "run", "lore", "--help"], clone, env)
    figures["lore_help_first_s"], figures["lore_help_first_cpu_s"] = round(wall, 3), round(cpu_help, 3)
    wall, cpu_help = repeated(["uv", "run", "lore", "--help"], clone, env, args.runs)
    figures["lore_help_warm_p50_s"], figures["lore_help_warm_p50_cpu_s"] = round(wall, 3), round(cpu_help, 3)
    print(
        f"uv run lore --help     first {figures['lore_help_first_s']:.2f} s "
        f"({figures['lore_help_first_cpu_s']:.2f} CPU-s), warm p50 {wall:.2f} s ({cpu_help:.2f} CPU-s) "
        f"of {args.runs}   (goal {HELP_GOAL_S} s)"
    )
    # The venv's own `lore`, without uv run's check of the environment.
    lore = str(clone / ".venv" / "bin" / "lore")
    wall, cpu_help = repeated([lore, "--help"], clone, env, args.runs)
    figures["venv_lore_help_p50_s"], figures["venv_lore_help_p50_cpu_s"] = round(wall, 3), round(cpu_help, 3)
    print(f".venv/bin/lore --help  p50 {wall:.2f} s ({cpu_help:.2f} CPU-s)")

    stack_cpu = stack.cpu()
    wall, cpu_cli, _ = run(["uv", "run", "lore", "ingest", "examples/people", "--kb", "people"], clone, env)
    figures["ingest_s"], figures["ingest_cli_cpu_s"] = round(wall, 2), round(cpu_cli, 2)
    figures["ingest_stack_cpu_s"] = round(stack.cpu() - stack_cpu, 2)
    stack_cpu = stack.cpu()
    wall, cpu_cli, out = run(["uv", "run", "lore", "chat", "people", QUESTION], clone, env)
    if "hopper" not in out.lower():
        raise SystemExit(f"the first chat's answer does not name Hopper:\n{out}")
    figures["first_chat_s"], figures["first_chat_cli_cpu_s"] = round(wall, 2), round(cpu_cli, 2)
    figures["first_chat_stack_cpu_s"] = round(stack.cpu() - stack_cpu, 2)
    # A user's timeline: the command, then ingest and chat (the --help runs above are the bench's own).
    answered = health_s + figures["ingest_s"] + figures["first_chat_s"]
    figures["up_to_first_chat_s"] = round(answered, 2)
    figures["clone_to_first_chat_s"] = round(figures["clone_s"] + answered, 2)
    wall, cpu_cli = repeated(["uv", "run", "lore", "chat", "people", QUESTION], clone, env, args.runs)
    figures["chat_warm_p50_s"], figures["chat_warm_p50_cpu_s"] = round(wall, 3), round(cpu_cli, 3)
    print(
        f"lore ingest (2 files)  {figures['ingest_s']:6.2f} s  "
        f"(CLI {figures['ingest_cli_cpu_s']:.1f} CPU-s, services {figures['ingest_stack_cpu_s']:.1f} CPU-s)"
    )
    print(
        f"lore chat, first       {figures['first_chat_s']:6.2f} s  "
        f"(CLI {figures['first_chat_cli_cpu_s']:.1f} CPU-s, "
        f"services {figures['first_chat_stack_cpu_s']:.1f} CPU-s)"
    )
    print(f"lore chat, warm p50    {wall:6.2f} s  ({cpu_cli:.2f} CPU-s of the CLI)")
    with_clone = figures["clone_to_first_chat_s"]
    print(f"command to first chat  {answered:6.2f} s  (clone included: {with_clone:.2f} s)")
    figures["stack_cpu_total_s"] = round(stack.cpu(), 2)
    figures["stop_s"] = round(stack.stop(), 2)
    print(f"Ctrl-C to stopped      {figures['stop_s']:6.2f} s")

    if args.second_start:
        stack.start()
        ready = stack.wait_healthy()
        figures["second_up_to_health_s"] = round(ready["gateway"], 2)
        figures["second_up_to_health_cpu_s"] = round(stack.cpu(), 2)
        figures["second_stop_s"] = round(stack.stop(), 2)
        print(
            f"second start, healthy  {figures['second_up_to_health_s']:6.2f} s "
            f"({figures['second_up_to_health_cpu_s']:.1f} CPU-s; stop {figures['second_stop_s']:.2f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone (default: this one)")
    parser.add_argument("--runs", type=int, default=5, help="warm runs of lore --help and lore chat (p50)")
    parser.add_argument(
        "--where", type=Path, default=None, help="folder for the clone (default: the temp dir)"
    )
    parser.add_argument("--no-second-start", dest="second_start", action="store_false")
    args = parser.parse_args()
    for tool in ("git", "uv"):
        if shutil.which(tool) is None:
            raise SystemExit(f"cold_start needs {tool} on PATH")
    load = os.getloadavg()
    commit = subprocess.run(
        ["git", "-C", str(args.repo), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    figures: dict[str, Any] = {
        "commit": commit,
        "load_avg_1m_at_start": round(load[0], 2),
        "load_avg_5m_at_start": round(load[1], 2),
        "cpus": os.cpu_count(),
        "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
    }
    print(f"commit {commit}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    work = Path(tempfile.mkdtemp(prefix="lore-cold-", dir=args.where))
    try:
        measure(args, work / "lore", figures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures["stack_goal_ratio"] = round(figures["clone_to_health_s"] / STACK_GOAL_S, 2)
    figures["lore_help_goal_ratio"] = round(figures["lore_help_warm_p50_s"] / HELP_GOAL_S, 2)
    print(
        f"goals: clone to healthy {figures['stack_goal_ratio']:.2f} × 25 s, "
        f"uv run lore --help warm {figures['lore_help_goal_ratio']:.2f} × 0.5 s"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
