# Lore tasks. `just up` runs everything on embedded stores; `just test` runs the whole suite.
set positional-arguments

# Start gateway + docdb + gen + mem on embedded stores (gateway at http://127.0.0.1:8000); Ctrl-C stops all.
up *args:
    uv run --frozen lore-up "$@"

# The whole test suite (unit, API, e2e), on SQLite and on the PostgreSQL at 127.0.0.1:5432 when it runs.
test *args:
    uv run --frozen pytest -q "$@"

# ruff lint + format check, mypy strict on the packages.
lint:
    uv run --frozen ruff check .
    uv run --frozen ruff format --check .
    uv run --frozen mypy

fmt:
    uv run --frozen ruff format .
    uv run --frozen ruff check --fix .

# Benchmarks: `just bench gateway`, `just bench embedders`.
bench name *args:
    uv run --frozen python bench/{{name}}.py "${@:2}"
