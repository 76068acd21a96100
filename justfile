# Lore tasks. `just up` runs everything on embedded stores; `just test` runs the whole suite.
set positional-arguments

# Start gateway + docdb + gen + mem on embedded stores (gateway at http://127.0.0.1:8000); Ctrl-C stops all.
# `exec`: the shell hands the terminal to lore-up, so Ctrl-C stops the stack cleanly (a shell left waiting
# would die of the SIGINT itself, and just would report the recipe "terminated by signal 2").
up *args:
    exec uv run --frozen lore-up "$@"

# The same stack on real servers: PostgreSQL + pgvector, one FalkorDB server, S3 (see lore-servers --help).
up-postgres *args:
    uv run --frozen lore-servers "$@"

# The whole test suite (unit, API, e2e), on SQLite and on the PostgreSQL at 127.0.0.1:5432 when it runs.
# Six workers (whole-stack tests mostly wait on their child processes). A module's tests run on one worker
# (a stack started once per module serves them all) unless the module is marked `spread` (conftest.py);
# modules start in the order of `testpaths` (whole-stack tests first). The 15 slowest tests are listed
# last: the suite must stay under 8 minutes on a 2-core machine. `just test -p no:xdist …` runs in one
# process (for a debugger).
test *args:
    uv run --frozen pytest -q -n 6 --dist loadfile --no-loadscope-reorder --durations=15 "$@"

# ruff lint + format check, mypy strict on the packages.
lint:
    uv run --frozen ruff check .
    uv run --frozen ruff format --check .
    uv run --frozen mypy

# The documentation site (docs/, MkDocs Material) at http://127.0.0.1:8008, rebuilt on each change.
docs *args:
    DISABLE_MKDOCS_2_WARNING=true uv run --frozen mkdocs serve -a 127.0.0.1:8008 "$@"

fmt:
    uv run --frozen ruff format .
    uv run --frozen ruff check --fix .

# Benchmarks: `just bench gateway`, `just bench embedders`.
bench name *args:
    uv run --frozen python bench/{{name}}.py "${@:2}"

# Container images, one per process (needs a Docker engine): `just images 0.1.0`.
images tag="0.1.0" registry="ghcr.io/lore-dev":
    docker build -f deploy/docker/Dockerfile --build-arg PACKAGE=lore-gateway --build-arg APP=lore_gateway.app:build_app --build-arg PORT=8000 -t {{registry}}/lore-gateway:{{tag}} .
    docker build -f deploy/docker/Dockerfile --build-arg PACKAGE=lore-docdb --build-arg APP=lore_docdb.app:build_app --build-arg PORT=8101 -t {{registry}}/lore-docdb:{{tag}} .
    docker build -f deploy/docker/Dockerfile --build-arg PACKAGE=lore-gen --build-arg APP=lore_gen.app:build_app --build-arg PORT=8102 -t {{registry}}/lore-gen:{{tag}} .
    docker build -f deploy/docker/Dockerfile --build-arg PACKAGE=lore-mem --build-arg APP=lore_mem.app:build_app --build-arg PORT=8103 -t {{registry}}/lore-mem:{{tag}} .

# Soak: 10 minutes of mixed traffic through the gateway; errors, p50/p99 per minute, RSS (bench/soak.py).
soak *args:
    uv run --frozen python bench/soak.py "$@"
