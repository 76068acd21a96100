# From the repository's root while `uv run just up` serves: `uv run python docs/example.py`.
from lore_client import Lore

with Lore("http://127.0.0.1:8000") as lore:
    if "people" not in lore.list_datasets():
        lore.create_dataset("people")
        lore.upload("people", ["examples/people"], on_progress=lambda e: print(e.filename, e.sent_bytes))
    if "people" not in {kb.name for kb in lore.list_knowledge_bases()}:
        lore.create_knowledge_base("people")
        task = lore.parse("people", ["people"]).tasks[0]
        lore.wait(task, on_progress=lambda p: print(p.status, p.stage))
    answer = lore.chat("people", "Who developed the first compiler?", mode="rerank")
    print(answer.response)
    for citation in answer.citations or []:
        print(f"[{citation.index}] {citation.source_file}")
    lore.add_memory("I am allergic to peanuts.", user_id="alice")
    print([m.memory for m in lore.search_memories("peanuts allergy", user_id="alice")])
