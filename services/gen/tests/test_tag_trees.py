from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import xlwt

from lore_common.testing.asgi import wait_done
from lore_common.testing.fake_docdb import FakeDocdb
from lore_common.testing.replies import prompt_of, reply

GENERATE = "/api/v1/gen/tag-tree/generate"
SUBMIT = "/api/v1/gen/tag-tree/submit"
STATUS = "/api/v1/gen/tag-tree/status"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ROWS: list[list[Any]] = [
    ["Science", "Physics", "Optics"],
    ["Science", "Physics", "Mechanics"],
    ["Science", "Chemistry"],
    ["Arts", "Music", None, "ignored after a blank"],
    [None, "no first cell: skipped"],
]


def xlsx(rows: list[list[Any]], rows_first: bool = False) -> bytes:
    """A workbook with sheets `Other` (a decoy row) and `Topics` (the rows); `rows_first` swaps them."""
    import openpyxl  # here: every xdist worker collects this module

    book = openpyxl.Workbook()
    decoy, topics = book.active, book.create_sheet("Topics")
    decoy.title = "Other"
    if rows_first:
        decoy, topics = topics, decoy
    decoy.append(["not", "this", "sheet"])
    for row in rows:
        topics.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def xls(rows: list[list[Any]]) -> bytes:
    book = xlwt.Workbook()
    sheet = book.add_sheet("Topics")
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            if value is not None:
                sheet.write(r, c, value)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def find(nodes: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for node in nodes:
        if node["node_name"] == name:
            return node
        try:
            return find(node["children"], name)
        except KeyError:
            continue
    raise KeyError(name)


def check_sheet_tree(result: dict[str, Any]) -> None:
    assert [n["node_name"] for n in result["nodes"]] == ["Science", "Arts"]
    physics = find(result["nodes"], "Physics")
    assert physics["category"] == "Science"
    assert [c["node_name"] for c in physics["children"]] == ["Optics", "Mechanics"]
    assert find(result["nodes"], "Optics")["category"] == "Science -> Physics"
    assert find(result["nodes"], "Music")["children"] == []
    # Science, Physics, Optics, Mechanics, Chemistry, Arts, Music
    assert result["node_count"] == 7


@pytest.mark.parametrize(
    ("filename", "content", "sheet"),
    [("topics.xlsx", xlsx(ROWS), "Topics"), ("topics.xlsx", xlsx(ROWS), "1"), ("legacy.xls", xls(ROWS), "0")],
)
async def test_spreadsheet_rows_become_paths_of_one_tree(
    gen_factory: Any, filename: str, content: bytes, sheet: str
) -> None:
    async with gen_factory() as client:
        response = await client.post(
            SUBMIT,
            files={"file": (filename, content, XLSX)},
            data={"tree_name": "catalogue", "tree_description": "subjects", "sheet_name": sheet},
        )
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "completed"
        status = (await client.get(f"{STATUS}/{response.json()['task_id']}")).json()
        assert status["status"] == "completed"
        assert status["result"]["tree_name"] == "catalogue"
        assert status["result"]["tree_description"] == "subjects"
        check_sheet_tree(status["result"])


async def test_spreadsheet_defaults_and_the_stored_result_after_a_restart(
    gen_factory: Any, tmp_path: Path
) -> None:
    content = xlsx(ROWS, rows_first=True)
    async with gen_factory() as client:
        response = await client.post(SUBMIT, files={"file": ("t.xlsx", content, XLSX)})
        task_id = response.json()["task_id"]
    assert not (tmp_path / "gen" / "tasks").exists()  # in the relational store, not in files
    async with gen_factory() as client:
        status = (await client.get(f"{STATUS}/{task_id}")).json()
        assert status["result"]["tree_name"] == "tag_tree" and status["result"]["tree_description"] == ""
        check_sheet_tree(status["result"])


@pytest.mark.parametrize(
    ("files", "data", "says"),
    [
        ({"file": ("notes.csv", b"a,b\n", "text/csv")}, {}, "upload an .xlsx or .xls workbook"),
        ({"file": ("broken.xlsx", b"not a zip", XLSX)}, {}, "not a readable .xlsx workbook"),
        ({"file": ("broken.xls", b"not an xls", "application/vnd.ms-excel")}, {}, "not a readable .xls"),
        ({"file": ("t.xlsx", xlsx(ROWS), XLSX)}, {"sheet_name": "Missing"}, "sheet 'Missing' not found"),
        ({"file": ("t.xlsx", xlsx(ROWS), XLSX)}, {"sheet_name": "7"}, "sheet '7' not found"),
        ({"other": ("t.xlsx", xlsx(ROWS), XLSX)}, {}, "multipart field `file`"),
        ({"file": ("t.xlsx", xlsx([[None, "x"]]), XLSX)}, {"sheet_name": "1"}, "has no rows"),
    ],
)
async def test_bad_spreadsheets_are_400_with_a_reason(
    gen_factory: Any, files: dict[str, Any], data: dict[str, str], says: str
) -> None:
    async with gen_factory() as client:
        response = await client.post(SUBMIT, files=files, data=data)
        assert response.status_code == 400
        assert says in response.json()["message"]


async def test_a_workbook_sent_as_a_text_field_is_a_400_not_a_crash(gen_factory: Any) -> None:
    """A file part without a filename reaches the form parser as text; bytes that are not UTF-8 there
    are the client's mistake, and the answer says how to send the workbook."""
    boundary = "b355269733026f4ed37e61987928d228"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"\r\n\r\n'.encode()
        + b"\x89PNG\r\n\x1a\n\x00\x00"
        + f"\r\n--{boundary}--\r\n".encode()
    )
    async with gen_factory() as client:
        response = await client.post(
            SUBMIT, content=body, headers={"content-type": f"multipart/form-data; boundary={boundary}"}
        )
        assert response.status_code == 400, response.text
        assert "send files as file parts (with a filename)" in response.json()["message"]


TREE = {
    "description": "A taxonomy of renewable energy",
    "nodes": [
        {
            "node_name": "Renewable energy",
            "description": "Energy from replenished sources",
            "children": [
                {"node_name": "Solar power", "description": "Photovoltaics and solar thermal", "children": [
                    {"node_name": "Photovoltaics", "description": "Cells that turn light into current"}
                ]},
                {"node_name": "Wind power", "description": "Turbines on land and at sea", "children": []},
            ],
        }
    ],
}  # fmt: skip


async def test_pure_llm_tree_gets_categories_and_counts_computed(gen_factory: Any) -> None:
    prompts: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        prompts.append(prompt_of(request)[1])
        # The model claims a category; Lore computes it from the ancestors instead.
        tree = json.loads(json.dumps(TREE))
        tree["nodes"][0]["category"] = "made up"
        return reply(f"Here is the tree:\n```json\n{json.dumps(tree)}\n```")

    async with gen_factory(llm=model) as client:
        response = await client.post(GENERATE, json={"topic": "renewable energy", "mode": "pure_llm"})
        assert response.status_code == 200
        done = await wait_done(client, f"{STATUS}/{response.json()['task_id']}")
        assert done["status"] == "completed", done
        result = done["result"]
        assert result["tree_name"] == "renewable energy"
        assert result["tree_description"] == "A taxonomy of renewable energy"
        assert result["node_count"] == 4
        assert result["nodes"][0]["category"] == ""
        assert find(result["nodes"], "Photovoltaics")["category"] == "Renewable energy -> Solar power"
        assert "Knowledge-base entities" not in prompts[0]


async def test_kb_tree_is_grounded_in_the_kb_entities(gen_factory: Any, docdb_fake: FakeDocdb) -> None:
    docdb_fake.add_kb(
        "energy",
        {"solar.txt": "Renewable energy: photovoltaics convert sunlight. Wind power uses turbines."},
        entities=[
            {"name": "Photovoltaics", "type": "客观实体", "description": "solar cells", "degree": 4},
            {"name": "Wind power", "type": "抽象实体", "description": "turbines", "degree": 2},
        ],
    )
    prompts: list[str] = []

    def model(request: httpx.Request) -> httpx.Response:
        prompts.append(prompt_of(request)[1])
        return reply(TREE)

    async with gen_factory(llm=model) as client:
        response = await client.post(
            GENERATE, json={"topic": "renewable energy", "mode": "kb", "kb_name": "energy"}
        )
        done = await wait_done(client, f"{STATUS}/{response.json()['task_id']}")
        assert done["status"] == "completed", done
        assert '"name": "Photovoltaics"' in prompts[0] and "Wind power uses turbines" in prompts[0]
        assert done["result"]["kb_name"] == "energy"
        assert done["result"]["kb_entity_nodes"] == 2
    assert docdb_fake.queries == ["renewable energy"]


def leaves(nodes: list[dict[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in nodes:
        found.update(
            leaves(node["children"]) if node["children"] else {node["node_name"]: node["description"]}
        )
    return found


async def test_kb_tree_offline_is_the_topic_entities_with_one_line_descriptions(
    gen_factory: Any, docdb_fake: FakeDocdb
) -> None:
    """The offline tree listed the KB's top entities whatever the topic (IBM and Ohio under a football
    career), each described by 300 characters of raw passage."""
    docdb_fake.add_kb(
        "corp",
        {
            "roberts.txt": "His football career started at Watford as a trainee in 1986. In July 1997 "
            "Norwich City manager Mike Walker paid Wolves for him, and his career there lasted seven "
            "seasons, with goals against Ipswich Town in the East Anglian derby that fans still recall "
            "today in songs, columns and the club's own histories of its greatest players and seasons. "
            "Julius Pitrap patented a computing scale in Dayton, Ohio in 1885.",
            "ibm.txt": "IBM was founded in Endicott, New York, as CTR by Thomas J. Watson.",
        },
        entities=[
            {"name": "IBM", "type": "客观实体", "description": "IBM was founded in Endicott."},
            {"name": "Thomas J. Watson", "type": "客观实体", "description": "Watson led CTR."},
            {"name": "Watford", "type": "客观实体", "description": "His football career started at Watford."},
        ],
    )
    async with gen_factory() as client:
        response = await client.post(
            GENERATE, json={"topic": "Football career of the forward", "mode": "kb", "kb_name": "corp"}
        )
        done = await wait_done(client, f"{STATUS}/{response.json()['task_id']}")
    result = done["result"]
    found = leaves(result["nodes"])
    assert {"Watford", "Norwich City", "Mike Walker"} <= set(found)
    assert not {"IBM", "Thomas J. Watson", "Ohio", "Dayton", "Julius Pitrap"} & set(found)
    assert find(result["nodes"], "Watford")["category"] == "Football career of the forward -> Physical entity"
    assert "实体" not in json.dumps(result["nodes"], ensure_ascii=False)
    assert all(len(line) <= 120 and "\n" not in line for line in found.values()), found
    assert found["Watford"].startswith("His football career started at Watford")
    assert result["kb_entity_nodes"] == 1  # Watford, the one top entity of the topic


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"topic": " ", "mode": "pure_llm"}, 400, "topic is empty"),
        ({"topic": "x", "mode": "kb"}, 400, "kb_name is required"),
        ({"topic": "x", "mode": "kb", "kb_name": "missing"}, 404, "'missing' does not exist"),
        ({"topic": "x", "mode": "kb", "kb_name": "a/b"}, 400, "invalid knowledge base name"),
        ({"topic": "x", "mode": "guess"}, 400, "mode"),
        ({"mode": "pure_llm"}, 400, "topic"),
    ],
)
async def test_bad_generate_requests_are_refused(
    gen_factory: Any, body: dict[str, Any], status: int, says: str
) -> None:
    async with gen_factory() as client:
        response = await client.post(GENERATE, json=body)
        assert response.status_code == status
        assert says in json.dumps(response.json())


async def test_unknown_tree_task_is_404_and_table_ids_are_not_trees(gen_factory: Any) -> None:
    async with gen_factory() as client:
        assert (await client.get(f"{STATUS}/missing")).status_code == 404
        table = await client.post("/api/v1/gen/pipeline/submit", json={"question": "Compare Paris and Rome"})
        assert (await client.get(f"{STATUS}/{table.json()['task_id']}")).status_code == 404
