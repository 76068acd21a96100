"""lore-client installs light: no Lore server package, no model SDK, and the CLI's libraries only with
the `cli` extra."""

from __future__ import annotations

import subprocess
import sys

from lore_common.testing.packaging import installed_closure


def test_the_client_library_needs_only_httpx_msgspec_and_websockets() -> None:
    closure = installed_closure("lore-client")
    assert {"httpx", "msgspec", "websockets"} <= closure
    heavy = {
        "lore-core",
        "lore-common",
        "litestar",
        "numpy",
        "openai",
        "anthropic",
        "sqlalchemy",
        "typer",
        "rich",
        "langchain-core",
        "llama-index-core",
    }
    assert closure & heavy == set()


def test_importing_the_client_loads_no_server_code_or_cli() -> None:
    # Not rich: httpx imports it itself (for its own command line) wherever it is installed.
    modules = "('lore_core', 'lore_common', 'litestar', 'typer', 'lore_client.cli')"
    probe = f"import sys, lore_client; print(sorted(m for m in {modules} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_command_without_its_extra_says_how_to_install_it() -> None:
    probe = (
        "import sys, builtins; real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] == 'typer': raise ModuleNotFoundError(name='typer')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "from lore_client.__main__ import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert out.returncode == 1 and "pip install 'lore-client[cli]'" in out.stderr


def test_the_retrievers_without_their_extra_say_how_to_install_it() -> None:
    for module, package, extra in (
        ("langchain", "langchain_core", "langchain"),
        ("llamaindex", "llama_index", "llamaindex"),
    ):
        probe = (
            "import builtins; real = builtins.__import__\n"
            "def guard(name, *a, **k):\n"
            f"    if name.split('.')[0] == {package!r}: raise ModuleNotFoundError(name={package!r})\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = guard\n"
            f"import lore_client.{module}"
        )
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
        assert out.returncode == 1 and f"pip install 'lore-client[{extra}]'" in out.stderr
