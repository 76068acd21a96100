"""What the offline model puts in a knowledge base's graph from real documentation (#42): names, never the
modal verbs, discourse words, licence boilerplate and hyphenation pieces that filled it before."""

from __future__ import annotations

from typing import Any

from lore_common.testing.flows import KB, parse, upload, wait_task

Client = Any

MAN_PAGE = b"""NAME
       asn1Parser - ASN.1 syntax tree viewer

DESCRIPTION
       See the manual. Returns zero on success. However, the parser MUST NOT fail. An implementation MAY
       reject input, and it SHOULD log. Linus Torvalds said the Linux kernel runs on ARM.
"""

LICENCE = b"""Permission is granted to copy, distribute and/or modify this Docu-
ment under the terms of the GNU Free Documentation License, Version 1.3 published by the Free Software
Foundation; with no Invariant Sections, no Front-Cover Texts, and no Back-Cover Texts. Hi-
story: Grace Hopper developed the first compiler at Remington Rand.
"""

NEVER = {"See", "Returns", "MUST", "MUST NOT", "MAY", "SHOULD", "However", "NAME", "DESCRIPTION"}
NEVER |= {"Cover Texts", "Front-Cover Texts", "Back-Cover Texts", "Invariant Sections", "Hi-", "Docu-"}


async def test_the_graph_and_overview_name_no_stop_words_or_word_pieces(docdb_factory: Any) -> None:
    async with docdb_factory(LORE__DOCDB__GRAPH_STORE__ENABLED="true") as client:
        await upload(client, "manuals", {"asn1parser.1.txt": MAN_PAGE, "COPYING.txt": LICENCE})
        await client.post(KB, json={"name": "manuals"})
        [task_id] = await parse(client, "manuals", ["manuals"])
        assert (await wait_task(client, task_id))["status"] == "completed"
        graph = (await client.get(f"{KB}/manuals/graph")).json()
        names = {node["name"] for node in graph["nodes"]}
        overview = (await client.get(f"{KB}/manuals/overview", params={"top_nodes": 50})).json()
        top = {entity["name"] for entity in overview["overview"]["top_entities"]}
    assert not names & NEVER and not top & NEVER, (names & NEVER, top & NEVER)
    assert {"Linus Torvalds", "Grace Hopper", "Free Software Foundation"} <= names, names
    assert not any(name.endswith("-") for name in names | top), names | top


GUIDE = b"""Contents

1 Dogs in Ferelden and Orzammar .......... 61
2 Alistair and Morrigan .......... 64

His dog is loyal. Usually the party rests in Ferelden. Here's the plan: Alistair meets Morrigan.
Existing Customers keep their saves. Across the valley lies Redcliffe Castle.
Morrigan said, "You've got some good sweepers on your side."

The save job calls VERIFY_GROUP_FOR_USER and writes TAX_ID to QIBM_DB_SECADM.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
"""

GUIDE_NEVER = {"His", "Usually", "Here's", "Existing", "Existing Customers", "Across", "EXPRESS OR IMPLIED"}
GUIDE_NEVER |= {"GROUP", "USER", "VERIFY", "ID", "TAX", "DB", "QIBM", "SECADM", "AS IS"}


async def test_a_game_guides_graph_names_things_keeps_identifiers_whole_and_skips_its_contents(
    docdb_factory: Any,
) -> None:
    """The trial's F10: openers, quoted speech, licence capitals and split identifiers filled the graph, and
    contents lines described its relations."""
    async with docdb_factory(LORE__DOCDB__GRAPH_STORE__ENABLED="true") as client:
        await upload(client, "guide", {"guide.txt": GUIDE})
        await client.post(KB, json={"name": "guide"})
        [task_id] = await parse(client, "guide", ["guide"])
        assert (await wait_task(client, task_id))["status"] == "completed"
        graph = (await client.get(f"{KB}/guide/graph")).json()
    names = {node["name"] for node in graph["nodes"]}
    assert not names & GUIDE_NEVER, names & GUIDE_NEVER
    assert not any(name.endswith((".", ",")) or len(name.split()) > 5 for name in names), names
    assert {"Ferelden", "Alistair", "Morrigan", "Redcliffe Castle", "VERIFY_GROUP_FOR_USER"} <= names, names
    assert {"TAX_ID", "QIBM_DB_SECADM"} <= names, names
    descriptions = [edge["description"] for edge in graph["edges"]]
    assert descriptions and not any("...." in d for d in descriptions), descriptions
