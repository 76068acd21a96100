"""The web console in a real headless Chromium (Debian's `chromium`, driven by Playwright): each flow a
user would follow, against `lore-up`, with a screenshot per test under `test-artifacts/console/` and
no browser console error allowed. Without Chromium the tests skip, saying how to install it."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lore_client import Lore, NotFound
from lore_common.testing.processes import ServerProcess, free_port, start_lore_up

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "console"
PEOPLE = ROOT / "examples" / "people"
CHROMIUM = os.environ.get("LORE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: install Debian's (apt-get install chromium) or set LORE_CHROMIUM to its path",
)


@dataclass
class Stack:
    url: str
    env: dict[str, str]
    kb: str = "people"
    sources: Path = Path()  # folder sources may lie under it


@dataclass
class Tab:
    """A page with the browser console's errors collected."""

    page: Any
    url: str
    errors: list[str] = field(default_factory=list)

    def open(self, section: str) -> Any:
        self.page.goto(f"{self.url}/console/#{section}")
        self.page.wait_for_selector(f"section[aria-labelledby='{section}-title']", state="visible")
        return self.page.locator(f"section[aria-labelledby='{section}-title']")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data = tmp_path_factory.mktemp("console-stack")
    roots = {"LORE__DOCDB__SOURCES__FOLDER_ROOTS": str([str(data / "sources")])}
    running = start_lore_up(data, ROOT / "config", roots)
    try:
        with Lore(running.url) as lore:  # a parsed KB for the chat, graph and table tests
            lore.create_dataset("people")
            lore.upload("people", [PEOPLE])
            lore.create_knowledge_base("people")
            lore.wait(lore.parse("people", ["people"]).tasks[0], timeout=60)
        yield Stack(running.url, running.env, sources=data / "sources")
    finally:
        running.process.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def new_tab(browser: Any, url: str, viewport: dict[str, int]) -> Tab:
    page = browser.new_page(viewport=viewport)
    tab = Tab(page, url)
    page.on("console", lambda message: tab.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    page.on(
        "response",
        lambda response: (
            tab.errors.append(f"{response.status} {response.url}") if response.status >= 400 else None
        ),
    )
    return tab


@pytest.fixture
def tab(browser: Any, stack: Stack, request: pytest.FixtureRequest) -> Iterator[Tab]:
    opened = new_tab(browser, stack.url, DESKTOP)
    yield opened
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    opened.page.close()
    assert opened.errors == [], f"browser console errors: {opened.errors}"


def test_ingest_a_folder_and_watch_the_parse_complete(tab: Tab, stack: Stack, tmp_path: Path) -> None:
    name = unique("papers")
    section = tab.open("knowledge")
    section.locator("#new-dataset").fill(name)
    section.get_by_role("button", name="Create").first.click()
    section.get_by_role("heading", name=f"Files of {name}").wait_for()
    section.locator("input[type=file]").set_input_files([str(PEOPLE / "curie.md"), str(PEOPLE / "hopper.md")])
    files = section.get_by_role("table", name="Files")
    files.get_by_role("cell", name="hopper.md", exact=True).wait_for()
    files.get_by_role("cell", name="curie.md", exact=True).wait_for()
    assert section.get_by_role("list", name="Uploads").get_by_text("stored").count() == 2
    # A file over 8 MiB goes as a chunked upload (init, chunks in parallel, complete).
    large = tmp_path / "scan.bin"
    large.write_bytes(os.urandom(9 * 1024 * 1024 + 17))
    section.locator("input[type=file]").set_input_files([str(large)])
    files.get_by_role("cell", name="scan.bin", exact=True).wait_for(timeout=60_000)
    with Lore(stack.url) as lore:
        stored = {f.name: f.size for f in lore.list_files(name)}
    assert stored["scan.bin"] == large.stat().st_size

    section.locator("#new-kb").fill(name)
    section.get_by_role("button", name="Create").nth(1).click()
    section.get_by_role("heading", name=f"Parse into {name}").wait_for()
    section.locator("#parse-datasets").select_option([name])
    section.get_by_role("button", name="Parse").click()
    tasks = section.get_by_role("table", name="Parse tasks")
    row = tasks.locator("tr", has=tab.page.get_by_role("cell", name=name, exact=True)).first
    row.locator("td.status", has_text="completed").wait_for(timeout=60_000)
    assert row.get_attribute("data-status") == "completed"
    row.get_by_text("1 file(s) skipped").click()  # the file no converter reads, and why
    assert "scan.bin: unsupported type .bin" in row.inner_text()
    # The knowledge base's files as the parse left them: chunks, or why a file has none.
    parsed = section.get_by_role("table", name="Parse result of each file")
    parsed.get_by_role("cell", name="skipped: unsupported type .bin").wait_for()
    curie = parsed.locator("tr", has=tab.page.get_by_role("cell", name="curie.md", exact=True))
    assert curie.get_attribute("data-skipped") == "no" and "parsed" in curie.inner_text()
    with Lore(stack.url) as lore:
        assert lore.get_knowledge_base(name).datasets[0].parsed


def test_a_datasets_source_shows_its_last_sync_and_syncs_now(tab: Tab, stack: Stack) -> None:
    name = unique("synced")
    folder = stack.sources / name
    folder.mkdir(parents=True)
    (folder / "intro.md").write_text("Welcome.")
    with Lore(stack.url) as lore:
        lore.create_dataset(name)
        lore.set_source(name, {"kind": "folder", "path": str(folder)})
        assert lore.wait_sync(name, lore.sync(name).task_id).status == "completed"
    section = tab.open("knowledge")
    section.get_by_role("button", name=name, exact=True).click()
    source = section.locator(".source")
    source.get_by_text(f"folder {folder}").wait_for()
    source.locator(".sync-report", has_text="1 added, 0 changed, 0 deleted").wait_for()
    (folder / "intro.md").write_text("Welcome!")
    source.get_by_role("button", name="Sync now").click()
    source.locator(".sync-report", has_text="0 added, 1 changed, 0 deleted").wait_for(timeout=30_000)


def test_chat_and_open_a_citation(tab: Tab, stack: Stack) -> None:
    section = tab.open("chat")
    section.locator("#chat-kb").select_option(stack.kb)
    section.locator("#chat-mode").select_option("rerank")
    section.locator("#chat-query").fill("Who developed the first compiler?")
    section.get_by_role("button", name="Ask").click()
    citation = section.get_by_role("button", name="citation 1").first
    citation.wait_for()
    assert "Grace Hopper" in section.locator(".response").inner_text()
    citation.click()
    passage = section.get_by_role("region", name="Cited passage")
    passage.wait_for()
    assert "hopper.md" in passage.inner_text() and "first compiler" in passage.inner_text()
    assert passage.locator("small").inner_text() == "Grace Hopper"  # the cited passage's heading path
    assert "[1] hopper.md" in section.locator(".sources").inner_text()
    # No object storage, so no file_url: the file comes from the dataset's file route, in a new tab.
    with tab.page.context.expect_page() as opened:
        passage.get_by_role("button", name="open the file").click()
    file_tab = opened.value
    file_tab.wait_for_function("document.body && document.body.innerText.includes('first compiler')")
    assert file_tab.url.startswith("blob:")
    file_tab.close()


def test_the_graph_draws_the_knowledge_bases_entities(tab: Tab, stack: Stack) -> None:
    section = tab.open("graph")
    section.locator("#graph-kb").select_option(stack.kb)
    section.locator("#graph-limit").fill("300")
    section.get_by_role("button", name="Draw").click()
    tab.page.wait_for_function("document.querySelector('.count').textContent !== '0'")
    with Lore(stack.url) as lore:
        expected = lore.graph(stack.kb, limit=300)
    assert len(expected.nodes) == expected.total_nodes > 3
    assert int(section.locator(".count").inner_text()) == len(expected.nodes)
    assert int(tab.page.locator("[data-edges]").inner_text()) == len(expected.edges)
    drawn = tab.page.evaluate("document.querySelector('#graph canvas') !== null")
    assert drawn
    section.locator("#graph-search").fill("Grace")
    section.get_by_role("heading", name="Grace Hopper").wait_for()


CONTRACT_TYPES = ("客观实体", "抽象实体", "事件实体", "文献实体")


def test_the_graph_shows_entity_types_in_english_while_the_api_keeps_the_contracts_values(
    tab: Tab, stack: Stack
) -> None:
    section = tab.open("graph")
    section.locator("#graph-kb").select_option(stack.kb)
    section.get_by_role("button", name="Draw").click()
    tab.page.wait_for_function("document.querySelector('.count').textContent !== '0'")
    section.locator("#graph-search").fill("Grace")
    section.get_by_role("heading", name="Grace Hopper").wait_for()
    with Lore(stack.url) as lore:
        wire = {node.type for node in lore.graph(stack.kb, limit=300).nodes}
    assert wire & set(CONTRACT_TYPES), wire  # the API still says 客观实体
    legend = section.locator(".legend").inner_text()
    assert "Physical entity" in legend, legend
    shown = tab.page.locator("body").inner_text()
    assert not [t for t in CONTRACT_TYPES if t in shown], shown
    family = tab.page.evaluate("getComputedStyle(document.body).fontFamily")
    assert "Noto Sans CJK SC" in family and "Microsoft YaHei" in family


def test_search_and_delete_a_vg_memory(tab: Tab, stack: Stack) -> None:
    user = unique("user")
    with Lore(stack.url) as lore:
        kept = lore.add_memory("I live in Lisbon.", user_id=user, infer=False).results[0].id
        gone = lore.add_memory("I am allergic to peanuts.", user_id=user, infer=False).results[0].id
    section = tab.open("memory")
    section.locator("#mem-scope").fill(user)
    section.locator("#mem-query").fill("peanut allergy")
    section.get_by_role("button", name="Search").click()
    memories = section.get_by_role("table", name="Memories")
    memories.get_by_role("cell", name="I am allergic to peanuts.", exact=True).wait_for()
    memories.get_by_role("button", name="delete memory I am allergic to peanuts.").click()
    memories.get_by_role("cell", name="I am allergic to peanuts.", exact=True).wait_for(state="detached")
    with Lore(stack.url) as lore:
        with pytest.raises(NotFound):
            lore.get_memory(gone)
        assert lore.get_memory(kept).memory == "I live in Lisbon."


def test_a_table_streams_its_steps_and_renders_sortable_rows(tab: Tab, stack: Stack) -> None:
    section = tab.open("gen")
    section.locator("#table-question").fill("What do we know about Marie Curie and Grace Hopper?")
    section.locator("#table-kb").select_option(stack.kb)
    section.get_by_role("button", name="Build").click()
    table = section.get_by_role("table", name="Generated table")
    table.get_by_role("cell", name="Grace Hopper", exact=True).wait_for(timeout=60_000)
    steps = section.get_by_role("list", name="Steps").inner_text()
    assert "step 1" in steps and "step 4" in steps
    assert "SELECT" in section.locator(".sql").inner_text()
    table.get_by_role("button", name="name").click()
    first = table.locator("tbody tr").first.locator("td").first.inner_text()
    table.get_by_role("button", name="name ▲").click()
    assert table.locator("tbody tr").first.locator("td").first.inner_text() != first


def test_kb_memory_insert_and_query_and_a_tree_import(tab: Tab, tmp_path: Path) -> None:
    from openpyxl import Workbook

    section = tab.open("memory")
    section.get_by_label("Text").fill("Rosalind Franklin photographed DNA in 1952.")
    section.get_by_role("button", name="Insert").click()
    section.locator(".job-status", has_text="done").wait_for(timeout=60_000)
    section.get_by_label("Question").fill("Who photographed DNA?")
    section.get_by_label("Mode").select_option("naive")
    section.get_by_role("button", name="Ask").click()
    tab.page.wait_for_function(
        "document.querySelector('[x-text=\"reply && reply.final_answer\"]').textContent.includes('Rosalind')"
    )

    book = Workbook()
    for row in (["Energy", "Solar", "Panels"], ["Energy", "Wind"]):
        book.active.append(row)
    book.save(tmp_path / "energy.xlsx")
    gen = tab.open("gen")
    gen.locator("input[type=file]").set_input_files(str(tmp_path / "energy.xlsx"))
    gen.get_by_role("button", name="Import").click()
    tree = gen.get_by_role("tree", name="Tag tree")
    tree.get_by_text("Panels").wait_for()
    assert [item.inner_text().split("\n")[0] for item in tree.locator(":scope > li").all()] == ["Energy"]


def test_keyboard_reaches_every_section(tab: Tab) -> None:
    tab.open("knowledge")
    page = tab.page
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for label in ("Knowledge", "Chat", "Graph", "Memory", "Tables & trees"):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == label
    page.keyboard.press("Enter")
    page.wait_for_function("location.hash === '#gen'")
    # Alpine shows the section on the hashchange that follows: wait for it (fails after 5 s).
    page.locator("section[aria-labelledby='gen-title']").wait_for(state="visible", timeout=5000)


@pytest.mark.parametrize("section", ["knowledge", "chat", "graph", "memory", "gen"])
def test_every_section_fits_a_phone(browser: Any, stack: Stack, section: str) -> None:
    phone = new_tab(browser, stack.url, PHONE)
    phone.open(section)
    phone.page.wait_for_timeout(300)
    overflow = phone.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    phone.page.screenshot(path=str(ARTIFACTS / f"phone-{section}.png"), full_page=True)
    phone.page.close()
    assert overflow <= 0, f"{section} is {overflow}px wider than a 390px screen"
    assert phone.errors == []


def test_with_api_keys_the_console_asks_for_one_and_uses_it(
    browser: Any, stack: Stack, tmp_path: Path
) -> None:
    port = free_port()
    env = {**stack.env, "LORE__GATEWAY__PORT": str(port), "LORE__GATEWAY__API_KEYS": '["console-test-key"]'}
    gateway = ServerProcess(
        [sys.executable, "-m", "lore_gateway"], env=env, log_path=tmp_path / "gateway.log"
    )
    try:
        gateway.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=60)
        keyed = new_tab(browser, f"http://127.0.0.1:{port}", DESKTOP)
        keyed.open("knowledge")
        dialog = keyed.page.get_by_role("dialog", name="API key")
        dialog.wait_for()
        dialog.get_by_label("Key").fill("console-test-key")
        dialog.get_by_role("button", name="Use this key").click()
        datasets = keyed.page.get_by_role("list", name="Datasets")
        datasets.get_by_role("button", name="people").wait_for()
        section = keyed.open("gen")  # the WebSocket carries the key too
        section.locator("#table-question").fill("What do we know about Grace Hopper?")
        section.locator("#table-kb").select_option(stack.kb)
        section.get_by_role("button", name="Build").click()
        section.get_by_role("table", name="Generated table").get_by_role(
            "cell", name="Grace Hopper", exact=True
        ).wait_for()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        keyed.page.screenshot(path=str(ARTIFACTS / "api-key.png"), full_page=True)
        keyed.page.close()
        # The refused requests before the key was given are the only console errors.
        assert all("401" in error for error in keyed.errors), keyed.errors
    finally:
        gateway.stop()


LONG_NAME = "quarterly-report-" + "x" * 150 + ".md"


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return dict(box)


def test_long_file_names_leave_delete_and_the_upload_state_visible(tab: Tab, tmp_path: Path) -> None:
    name = unique("long")
    section = tab.open("knowledge")
    section.locator("#new-dataset").fill(name)
    section.get_by_role("button", name="Create").first.click()
    section.get_by_role("heading", name=f"Files of {name}").wait_for()
    (tmp_path / LONG_NAME).write_text("# Report\nA long-named file.")
    section.locator("input[type=file]").set_input_files([str(tmp_path / LONG_NAME)])
    files = section.get_by_role("table", name="Files")
    files.get_by_role("cell", name=LONG_NAME, exact=True).wait_for()
    card = files.locator("xpath=ancestor::div[contains(@class, 'card')]").first
    delete = files.get_by_role("button", name=f"delete {LONG_NAME}")
    assert _box(delete)["x"] + _box(delete)["width"] <= _box(card)["x"] + _box(card)["width"]
    assert card.evaluate("card => card.scrollWidth <= card.clientWidth")  # nothing hidden to its right
    upload = section.get_by_role("list", name="Uploads").locator("li").first
    upload.get_by_text("stored").wait_for()
    bar, state = _box(upload.locator("progress")), _box(upload.get_by_text("stored"))
    assert bar["x"] + bar["width"] <= state["x"], (bar, state)


def test_an_answer_starts_with_its_first_word(tab: Tab, stack: Stack) -> None:
    section = tab.open("chat")
    section.locator("#chat-kb").select_option(stack.kb)
    section.locator("#chat-query").fill("Who developed the first compiler?")
    section.get_by_role("button", name="Ask").click()
    section.get_by_role("button", name="citation 1").first.wait_for()
    shown = section.locator(".response").inner_text()
    assert shown == shown.lstrip() and "Grace Hopper" in shown, repr(shown[:40])


def test_a_graph_that_fails_to_load_leaves_no_other_base_drawn(tab: Tab, stack: Stack) -> None:
    """Trial F3: a base whose graph failed kept the last base's graph drawn under its name."""
    tab.page.goto(f"{stack.url}/console/#graph?kb={stack.kb}&nodes=50")
    tab.page.wait_for_function("document.querySelector('.count').textContent !== '0'")
    tab.page.goto(f"{stack.url}/console/#graph?kb=no-such-base&nodes=50")  # a 404 from the graph route
    tab.page.wait_for_function("document.querySelector('.count').textContent === '0'")
    assert tab.page.evaluate("document.querySelector('#graph canvas') === null")
    assert tab.page.locator("[data-edges]").inner_text() == "0"
    assert tab.page.locator(".legend li").count() == 0  # nor its types' legend
    # The 404 was asked for: the browser's two lines about it are the only errors allowed.
    expected = [e for e in tab.errors if "no-such-base" in e or "status of 404" in e]
    assert len(expected) == 2, tab.errors
    tab.errors[:] = [e for e in tab.errors if e not in expected]


def test_a_linked_graph_names_the_base_it_draws_in_its_dropdown(tab: Tab, stack: Stack) -> None:
    with Lore(stack.url) as lore:  # a base listed before the one the link draws
        lore.create_knowledge_base("aaa-" + uuid.uuid4().hex[:6])
    tab.page.goto(f"{stack.url}/console/#graph?kb={stack.kb}&nodes=50")
    tab.page.wait_for_function("document.querySelector('.count').textContent !== '0'")
    select = tab.page.locator("#graph-kb")
    assert select.evaluate("s => s.options[s.selectedIndex].textContent") == stack.kb
    assert select.input_value() == stack.kb


def test_a_file_dropped_again_replaces_its_old_version_and_parse_reads_only_the_change(
    tab: Tab, stack: Stack, tmp_path: Path
) -> None:
    """Trial F4: an updated file dropped again was stored beside the old one (menu.md, menu_1.md, both
    answered from), and Parse refused to parse the change: the console had no incremental choice."""
    name = unique("menu")
    menu = tmp_path / "menu.md"
    menu.write_text("On Fridays the cafeteria serves lutefisk and cloudberry cream.")
    section = tab.open("knowledge")
    section.locator("#new-dataset").fill(name)
    section.get_by_role("button", name="Create").first.click()
    section.get_by_role("heading", name=f"Files of {name}").wait_for()
    section.locator("input[type=file]").set_input_files([str(menu)])
    uploads = section.get_by_role("list", name="Uploads")
    uploads.get_by_text("stored").wait_for()
    section.locator("#new-kb").fill(name)
    section.get_by_role("button", name="Create").nth(1).click()
    section.get_by_role("heading", name=f"Parse into {name}").wait_for()
    incremental = section.get_by_role("checkbox", name="incremental")
    assert not incremental.is_checked()  # nothing parsed yet
    section.locator("#parse-datasets").select_option([name])
    section.get_by_role("button", name="Parse").click()
    tasks = section.get_by_role("table", name="Parse tasks")
    tasks.locator("tr", has_text=name).locator("td.status", has_text="completed").first.wait_for(
        timeout=60_000
    )
    section.get_by_text(f"{name} (parsed)").wait_for()
    assert incremental.is_checked()  # the KB has parsed the dataset: Parse reads only the changes

    menu.write_text("On Fridays the cafeteria now serves tacos and churros.")
    assert section.get_by_role("checkbox", name="replace files of the same name").is_checked()
    section.locator("input[type=file]").set_input_files([str(menu)])
    uploads.get_by_text("replaced").wait_for()
    files = section.get_by_role("table", name="Files")
    assert files.get_by_role("cell", name="menu.md", exact=True).count() == 1
    assert files.get_by_role("cell", name="menu_1.md", exact=True).count() == 0
    section.get_by_role("button", name="Parse").click()
    done = tasks.locator("tr", has_text=name).locator("td.status", has_text="completed")
    tab.page.wait_for_function(
        "name => [...document.querySelectorAll('tr')].filter(r => r.innerText.includes(name)"
        " && r.innerText.includes('completed')).length === 2",
        arg=name,
        timeout=60_000,
    )
    assert done.count() == 2
    with Lore(stack.url) as lore:
        assert [f.name for f in lore.list_files(name)] == ["menu.md"]
        passages = " ".join(p.content for p in lore.retrieve(name, "cafeteria Fridays").data)
    assert "tacos" in passages and "lutefisk" not in passages

    section.get_by_role("checkbox", name="replace files of the same name").uncheck()
    section.locator("input[type=file]").set_input_files([str(menu)])
    uploads.get_by_text("stored as menu_1.md").wait_for()  # kept beside it, and said so
