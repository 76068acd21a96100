from __future__ import annotations

from typing import Any

SCHEMAS = "/api/v1/docdb/schemas"
Client = Any
PEOPLE = {
    "name": "people",
    "entities": [
        {"type": "客观实体", "subtype": "人物", "attributes": ["出生日期", "国籍"]},
        {"type": "文献实体", "subtype": "论文"},
    ],
}


async def exercise_schemas(client: Client) -> None:
    created = await client.post(SCHEMAS, json=PEOPLE)
    assert created.status_code == 201, created.text
    assert (await client.post(SCHEMAS, json=PEOPLE)).status_code == 409
    listing = (await client.get(SCHEMAS)).json()
    assert [(s["name"], s["entity_count"]) for s in listing] == [("people", 2)]
    assert listing[0]["created_at"]
    detail = (await client.get(f"{SCHEMAS}/people")).json()
    assert detail["entities"][0] == {
        "type": "客观实体",
        "subtype": "人物",
        "attributes": ["出生日期", "国籍"],
    }
    assert detail["entities"][1]["attributes"] == []
    preview = detail["prompt_preview"]
    assert "客观实体 / 人物: 出生日期, 国籍" in preview and "文献实体 / 论文" in preview
    assert (await client.delete(f"{SCHEMAS}/people")).status_code == 200
    assert (await client.get(f"{SCHEMAS}/people")).status_code == 404
    assert (await client.delete(f"{SCHEMAS}/people")).status_code == 404


async def test_schema_lifecycle_on_sqlite(docdb: Client) -> None:
    await exercise_schemas(docdb)


async def test_schema_lifecycle_on_postgres(docdb_factory: Any, postgres_url: str) -> None:
    async with docdb_factory(LORE__DOCDB__DATABASE__URL=postgres_url) as client:
        await exercise_schemas(client)


async def test_invalid_entity_type_is_422_naming_the_allowed_types(docdb: Client) -> None:
    r = await docdb.post(SCHEMAS, json={"name": "bad", "entities": [{"type": "Person", "subtype": "x"}]})
    assert r.status_code == 422
    assert "'Person'" in r.json()["message"] and r.json()["detail"]["allowed_types"][0] == "客观实体"


async def test_malformed_schemas_are_400(docdb: Client) -> None:
    assert (await docdb.post(SCHEMAS, json={"name": "x", "entities": []})).status_code == 400
    assert (
        await docdb.post(SCHEMAS, json={"name": "bad name", "entities": PEOPLE["entities"]})
    ).status_code == 400
    assert (await docdb.post(SCHEMAS, json={"entities": PEOPLE["entities"]})).status_code == 400
