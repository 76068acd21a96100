# Run from the repository's root while `uv run just up` serves at 127.0.0.1:8000.
LORE=http://127.0.0.1:8000/api/v1
# 1. A dataset, and every file of a folder uploaded into it.
curl -s -X POST $LORE/docdb/files/raw-files/datasets -H 'content-type: application/json' -d '{"name": "people"}'
for f in examples/people/*; do curl -s -F "files=@$f" $LORE/docdb/files/raw-files/datasets/people/files; done
# 2. A knowledge base, parsed from the dataset; wait until its task completes.
curl -s -X POST $LORE/docdb/files/knowledge-bases -H 'content-type: application/json' -d '{"name": "people"}'
curl -s -X POST $LORE/docdb/files/knowledge-bases/people/parse -H 'content-type: application/json' -d '{"datasets": ["people"]}'
until curl -s "$LORE/docdb/files/processing/tasks?status=completed" | grep -q '"kb_name":"people"'; do sleep 1; done
# 3. A question, answered with numbered citations of the files.
curl -s -X POST $LORE/docdb/chat -H 'content-type: application/json' -d '{"query": "Who developed the first compiler?", "kb_id": "people", "user_id": "me"}'
# 4. A memory for an agent's user, then a search of that user's memories.
curl -s -X POST $LORE/mem/vg/add -H 'content-type: application/json' -d '{"messages": [{"role": "user", "content": "I am allergic to peanuts."}], "user_id": "alice"}'
curl -s -X POST $LORE/mem/vg/search -H 'content-type: application/json' -d '{"query": "peanuts allergy", "user_id": "alice"}'
