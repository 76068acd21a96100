# Run from the repository's root while `uv run just up` serves at 127.0.0.1:8000.
# 1. A folder into a knowledge base: the dataset and the KB are created, the files uploaded and parsed.
uv run lore ingest examples/people --kb people
# 2. A question, answered with numbered citations of the files.
uv run lore chat people "Who developed the first compiler?"
# 3. A memory for an agent's user, then a search of that user's memories.
uv run lore mem add "I am allergic to peanuts." --user alice
uv run lore mem search "peanuts allergy" --user alice
