// Lore console: Alpine.js components that talk only to the public /api/v1 API.
"use strict";

const API = "/api/v1";
const CHUNK = 8 * 1024 * 1024; // files larger than this are sent in chunks
const STREAMS = 3; // chunks in flight per file
const KEY = "lore.apiKey";

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra) {
  const key = localStorage.getItem(KEY);
  return Object.assign(key ? { authorization: "Bearer " + key } : {}, extra || {});
}

// The server's message: every module answers {success, code, message, detail}; a proxy in front may say {detail}.
function messageOf(body, status) {
  if (body && typeof body.message === "string") return body.message;
  if (body && typeof body.detail === "string") return body.detail;
  return "HTTP " + status;
}

async function api(method, path, body, isForm) {
  const init = { method, headers: headers(isForm || body === undefined ? {} : { "content-type": "application/json" }) };
  if (body !== undefined) init.body = isForm ? body : JSON.stringify(body);
  const response = await fetch(API + path, init);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (response.status === 401) {
    document.dispatchEvent(new CustomEvent("lore-key-needed"));
  }
  if (!response.ok) throw new ApiError(response.status, messageOf(data, response.status));
  return data;
}

// An upload with progress: XHR is the browser API that reports upload progress.
function send(method, path, body, onProgress, type) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, API + path);
    for (const [k, v] of Object.entries(headers(type ? { "content-type": type } : {}))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress && onProgress(e.loaded);
    xhr.onload = () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch (e) { data = null; }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data);
      else reject(new ApiError(xhr.status, messageOf(data, xhr.status)));
    };
    xhr.onerror = () => reject(new ApiError(0, "the gateway could not be reached"));
    xhr.send(body);
  });
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// What a person reads for each entity type value (客观实体 is "Physical entity" in English): the
// gateway serves the labels of its display.language setting; the API's values never change.
const TYPE_LABELS = {};
const labelsLoaded = fetch("/console/labels.json")
  .then((response) => (response.ok ? response.json() : { types: {} }))
  .then((body) => Object.assign(TYPE_LABELS, body.types))
  .catch(() => {});
function typeLabel(type) {
  return TYPE_LABELS[type] || type;
}
function labelTypes(text) {
  return String(text).replace(/客观实体|抽象实体|事件实体|文献实体/g, typeLabel);
}

function notify(text) {
  document.dispatchEvent(new CustomEvent("lore-message", { detail: text }));
}

// Run an action; a failure becomes a visible message instead of an uncaught error.
async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    notify(error.message || String(error));
    return undefined;
  }
}

document.addEventListener("alpine:init", () => {
  const store = Alpine.reactive({ kbs: [], datasets: [], schemas: [] });
  const refreshKbs = async () => { store.kbs = (await api("GET", "/docdb/files/knowledge-bases")).data; };
  const refreshDatasets = async () => { store.datasets = (await api("GET", "/docdb/files/raw-files/datasets")).data; };

  Alpine.data("consoleApp", () => ({
    tabs: [
      { id: "knowledge", label: "Knowledge" },
      { id: "chat", label: "Chat" },
      { id: "graph", label: "Graph" },
      { id: "memory", label: "Memory" },
      { id: "gen", label: "Tables & trees" },
    ],
    tab: "knowledge",
    health: { status: "", label: "…" },
    message: "",
    keyDraft: "",
    start() {
      const route = () => {
        const wanted = location.hash.slice(1).split("?")[0];
        this.tab = this.tabs.some((t) => t.id === wanted) ? wanted : "knowledge";
      };
      window.addEventListener("hashchange", route);
      route();
      document.addEventListener("lore-message", (e) => { this.message = e.detail; setTimeout(() => { if (this.message === e.detail) this.message = ""; }, 6000); });
      document.addEventListener("lore-key-needed", () => { if (!this.$refs.keyDialog.open) this.$refs.keyDialog.showModal(); });
      this.checkHealth();
      attempt(() => Promise.all([refreshKbs(), refreshDatasets()]));
    },
    async checkHealth() {
      try {
        const response = await fetch("/health");
        const body = await response.json();
        this.health = { status: body.status, label: body.status === "ok" ? "all services up" : body.detail || body.status };
      } catch (e) {
        this.health = { status: "down", label: "gateway unreachable" };
      }
    },
    saveKey() {
      localStorage.setItem(KEY, this.keyDraft);
      this.keyDraft = "";
      this.$refs.keyDialog.close();
      attempt(() => Promise.all([refreshKbs(), refreshDatasets()]));
    },
    closeDialogs() { this.message = ""; },
  }));

  Alpine.data("knowledge", () => ({
    store,
    get datasets() { return store.datasets; },
    get kbs() { return store.kbs; },
    get schemas() { return store.schemas; },
    newDataset: "",
    newKb: "",
    dataset: "",
    files: [],
    uploads: [],
    dragging: false,
    kb: null,
    kbFiles: null, // the open KB's files as its parses left them: {total, files}
    settled: new Set(), // ids of the open KB's tasks seen ended, to load its files again when one ends
    // Replace: a file dropped again replaces the dataset's file of its name (PUT ?path=); off, the
    // contract's upload keeps both (menu.md, menu_1.md).
    replace: true,
    // incremental: parse only what changed since the KB's last parse of a dataset (on by default
    // when the KB has parsed one of those chosen; without it such a parse is refused).
    parseForm: { datasets: [], mode: 0, schema: "", force: false, incremental: false },
    tasks: [],
    timer: null,
    init() {
      this.poll();
      this.timer = setInterval(() => { if (this.tab === "knowledge") this.poll(); }, 1000);
      attempt(async () => { store.schemas = await api("GET", "/docdb/schemas"); });
    },
    async poll() {
      try {
        this.tasks = await api("GET", "/docdb/files/processing/tasks?limit=50");
        if (this.kb) {
          const ended = this.tasks.filter((t) => t.metadata.kb_name === this.kb.name && ["completed", "failed", "cancelled"].includes(t.status));
          if (ended.some((t) => !this.settled.has(t.task_id))) {
            ended.forEach((t) => this.settled.add(t.task_id));
            // its datasets' parsed flags changed: they set incremental's default
            this.kb = await api("GET", `/docdb/files/knowledge-bases/${encodeURIComponent(this.kb.name)}`);
            this.chosen();
            await this.loadKbFiles();
          }
        }
      } catch (e) { /* the health badge says when the gateway is down */ }
    },
    size(bytes) {
      return bytes < 1024 ? bytes + " B" : bytes < 1048576 ? (bytes / 1024).toFixed(1) + " KiB" : (bytes / 1048576).toFixed(1) + " MiB";
    },
    createDataset() {
      return attempt(async () => {
        await api("POST", "/docdb/files/raw-files/datasets", { name: this.newDataset });
        await refreshDatasets();
        await this.openDataset(this.newDataset);
        this.newDataset = "";
      });
    },
    openDataset(name) {
      this.dataset = name;
      this.loadSource(name);
      return attempt(async () => { this.files = (await api("GET", `/docdb/files/raw-files/datasets/${encodeURIComponent(name)}/files`)).files; });
    },
    // The dataset's source (docs/sources.md) with its last sync and report; none: null.
    source: null,
    async loadSource(name) {
      try { // the list answers 200 whether or not this dataset has a source (its own route: 404)
        const all = (await api("GET", "/docdb/files/raw-files/sources")).data;
        this.source = all.find((s) => s.dataset === name) || null;
      } catch (e) { this.source = null; }
    },
    sourceText(s) {
      const src = s.source;
      const where = { folder: src.path, s3: `s3://${src.bucket}/${src.prefix || ""}`, git: `${src.url}${src.branch ? " (" + src.branch + ")" : ""}`,
        web: src.sitemap || (src.urls || []).join(", ") }[src.kind];
      return `${src.kind} ${where}` + (src.interval ? `, every ${src.interval} s` : "");
    },
    reportText(task) {
      const r = task && task.report;
      if (!r) return task ? task.status + (task.error ? ": " + task.error : "") : "never synced";
      return `${task.status} ${task.updated_at}: ${r.added.length} added, ${r.changed.length} changed, ` +
        `${r.deleted.length} deleted, ${r.unchanged} unchanged, ${r.failed.length} failed`;
    },
    syncNow() {
      const name = this.dataset;
      return attempt(async () => {
        const task = (await api("POST", `/docdb/files/raw-files/datasets/${encodeURIComponent(name)}/sync`)).data;
        while (this.dataset === name) {
          const now = (await api("GET", `/docdb/files/raw-files/datasets/${encodeURIComponent(name)}/syncs/${task.task_id}`)).data;
          if (now.status === "completed" || now.status === "failed") break;
          await new Promise((done) => setTimeout(done, 500));
        }
        await this.openDataset(name);
      });
    },
    deleteFile(name) {
      return attempt(async () => {
        await api("DELETE", `/docdb/files/raw-files/datasets/${encodeURIComponent(this.dataset)}/files/${encodeURIComponent(name)}`);
        await this.openDataset(this.dataset);
      });
    },
    dropped(event) { this.dragging = false; this.upload([...event.dataTransfer.files]); },
    picked(event) { this.upload([...event.target.files]); event.target.value = ""; },
    async upload(files) {
      const base = `/docdb/files/raw-files/datasets/${encodeURIComponent(this.dataset)}`;
      await Promise.all(files.map(async (file) => {
        const row = Alpine.reactive({ id: Math.random().toString(36).slice(2), name: file.name, percent: 0, state: "sending" });
        this.uploads.unshift(row);
        const progress = (n) => { row.percent = Math.round((100 * n) / Math.max(file.size, 1)); };
        try {
          let state = "stored";
          if (file.size > CHUNK) {
            state = await this.chunked(base, file, row);
          } else if (this.replace) {
            const put = await send("PUT", `${base}/files?path=${encodeURIComponent(file.name)}`, file, progress, "application/octet-stream");
            state = { added: "stored", replaced: "replaced", unchanged: "unchanged (same content)" }[put.data.status] || put.data.status;
          } else {
            const form = new FormData();
            form.append("files", file, file.name);
            const stored = (await send("POST", base + "/files", form, progress)).files[0].filename;
            if (stored !== file.name) state = "stored as " + stored;
          }
          row.percent = 100;
          row.state = state;
        } catch (error) {
          row.state = "failed: " + error.message;
        }
      }));
      await this.openDataset(this.dataset);
    },
    // A large file in chunks; to replace, the file of its name is deleted once every chunk is in, so
    // that complete stores the new one under that name. Returns the upload's state.
    async chunked(base, file, row) {
      const total = Math.ceil(file.size / CHUNK);
      const name = file.name.replace(/%/g, "%25"); // as docdb stores a path's name
      const init = await api("POST", base + "/upload/init", { filename: name, total_chunks: total, total_size: file.size });
      const id = init.upload_id;
      const sent = new Array(total).fill(0);
      const queue = [...Array(total).keys()];
      const worker = async () => {
        while (queue.length) {
          const index = queue.shift();
          const piece = file.slice(index * CHUNK, Math.min(file.size, (index + 1) * CHUNK));
          await send("POST", `${base}/upload/${id}/chunk?chunk_index=${index}`, piece, (n) => {
            sent[index] = n;
            row.percent = Math.round((100 * sent.reduce((a, b) => a + b, 0)) / file.size);
          });
        }
      };
      await Promise.all(Array.from({ length: Math.min(STREAMS, total) }, worker));
      row.state = "joining";
      const replacing = this.replace && this.files.some((f) => f.name === name);
      if (replacing) await api("DELETE", `${base}/files/${encodeURIComponent(name)}`);
      const stored = (await api("POST", `${base}/upload/${id}/complete`)).data.filename;
      return replacing ? "replaced" : stored === name ? "stored" : "stored as " + stored;
    },
    createKb() {
      return attempt(async () => {
        await api("POST", "/docdb/files/knowledge-bases", { name: this.newKb });
        await refreshKbs();
        await this.openKb(this.newKb);
        this.newKb = "";
      });
    },
    openKb(name) {
      return attempt(async () => {
        this.kb = await api("GET", `/docdb/files/knowledge-bases/${encodeURIComponent(name)}`);
        this.parseForm.datasets = this.dataset ? [this.dataset] : [];
        this.chosen();
        this.settled = new Set(this.tasks.filter((t) => t.metadata.kb_name === name).map((t) => t.task_id));
        await this.loadKbFiles();
      });
    },
    async loadKbFiles() {
      if (!this.kb) return;
      const page = await api("GET", `/docdb/files/knowledge-bases/${encodeURIComponent(this.kb.name)}/files?limit=500`);
      this.kbFiles = { total: page.total, files: page.files };
    },
    // The datasets to parse changed: incremental is on when the KB has parsed one of them.
    chosen() {
      const parsed = new Set(this.kb ? this.kb.datasets.filter((d) => d.parsed).map((d) => d.name) : []);
      this.parseForm.incremental = this.parseForm.datasets.some((d) => parsed.has(d));
    },
    parse() {
      return attempt(async () => {
        const body = { datasets: this.parseForm.datasets, mode: Number(this.parseForm.mode), force: this.parseForm.force, schema_name: this.parseForm.schema || null };
        if (this.parseForm.incremental) body.incremental = true; // only when set, as lore-client sends it
        const reply = await api("POST", `/docdb/files/knowledge-bases/${encodeURIComponent(this.kb.name)}/parse`, body);
        notify(reply.message);
        await this.poll();
      });
    },
    cancel(taskId) {
      return attempt(async () => { await api("POST", `/docdb/files/processing/tasks/${taskId}/cancel`); await this.poll(); });
    },
  }));

  Alpine.data("chat", () => ({
    get kbs() { return store.kbs; },
    kb: "",
    mode: "naive",
    modes: ["naive", "rerank", "rewriter", "multihop", "direct"],
    query: "",
    busy: false,
    answer: null,
    passage: null,
    get pieces() {
      const text = ((this.answer && this.answer.response) || "").trim();
      return text.split(/(\[\d+\])/).filter(Boolean).map((part) => {
        const cited = part.match(/^\[(\d+)\]$/);
        return cited ? { cite: Number(cited[1]) } : { text: part };
      });
    },
    ask() {
      this.busy = true;
      this.passage = null;
      return attempt(async () => {
        const reply = await api("POST", "/docdb/chat", { query: this.query, kb_id: this.kb || (store.kbs[0] && store.kbs[0].name), user_id: "console", query_mode: this.mode });
        if (!reply.success) throw new Error(reply.message);
        this.answer = reply;
      }).finally(() => { this.busy = false; });
    },
    // Where a passage or citation sits: its pages (a PDF, a Word file) or slides (a presentation,
    // told by its file's suffix: PowerPoint's decks, shows and templates, OpenDocument's) and the
    // titles of its sections.
    place(p) {
      if (!p) return "";
      const slides = /\.(p(pt|ps|ot)[xm]?|odp|otp)$/i.test(p.source_file || p.kb_name || p.file || "");
      const [one, many] = slides ? ["slide", "slides"] : ["p.", "pp."];
      const pages = p.page == null ? "" : (p.page_end && p.page_end !== p.page ? `${many} ${p.page}-${p.page_end}` : `${one} ${p.page}`);
      return [pages, (p.heading_path || []).join(" › ")].filter(Boolean).join(", ");
    },
    // The passage behind [n]: the cited chunk itself (an older server names none: the file's first).
    openCitation(index) {
      const citation = (this.answer.citations || []).find((c) => c.index === index);
      if (!citation) return;
      const found = (citation.chunk_id && this.answer.data.find((p) => (p.source_id || []).includes(citation.chunk_id)))
        || this.answer.data.find((p) => p.kb_name === citation.source_file && p.dataset === citation.dataset)
        || this.answer.data.find((p) => p.kb_name === citation.source_file);
      this.passage = { index, file: citation.source_file, dataset: citation.dataset, place: this.place(citation), url: citation.file_url,
        page: citation.page, content: found ? found.content : "(the passage was not returned)" };
    },
    // Without object storage a citation has no URL: the file comes from the dataset's file route (with
    // the API key, so as a blob) and opens in a new tab, a PDF at the cited page.
    openFile() {
      const p = this.passage;
      if (!p) return undefined;
      const opened = window.open("", "_blank");
      return attempt(async () => {
        const stored = p.file.split("/").map((part) => part.replace(/%/g, "%25")).join("%2F");
        const response = await fetch(`${API}/docdb/files/raw-files/datasets/${encodeURIComponent(p.dataset)}/files/${encodeURIComponent(stored)}`, { headers: headers() });
        if (!response.ok) throw new ApiError(response.status, "the file could not be opened (HTTP " + response.status + ")");
        const link = URL.createObjectURL(await response.blob());
        const at = p.page && /\.pdf$/i.test(p.file) ? "#page=" + p.page : "";
        if (opened) opened.location.href = link + at; else window.location.href = link + at;
      });
    },
  }));

  Alpine.data("graph", () => ({
    get kbs() { return store.kbs; },
    kb: "",
    limit: 300,
    search: "",
    nodeCount: 0,
    edgeCount: 0,
    selected: null,
    colours: {},
    cy: null,
    entities: {},
    // A link can open a drawn graph: #graph?kb=<name>&nodes=<count>.
    init() {
      const open = () => {
        const [tab, query] = location.hash.slice(1).split("?");
        const params = new URLSearchParams(query || "");
        if (tab !== "graph" || !params.get("kb")) return;
        this.kb = params.get("kb");
        if (params.get("nodes")) this.limit = Number(params.get("nodes"));
        this.load();
      };
      window.addEventListener("hashchange", open);
      open();
    },
    palette: ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"],
    // The graph route gives up to 2,000 entities in one page, with the relations among them.
    load() {
      return attempt(async () => {
        const name = this.kb || (store.kbs[0] && store.kbs[0].name);
        this.kb = name; // the dropdown names the base drawn, whatever it showed before
        this.clear(); // a base that fails to load must not leave the last one drawn under its name
        const limit = Math.max(1, Math.min(2000, Number(this.limit) || 300));
        performance.mark("lore:graph-requested");
        const page = await api("GET", `/docdb/files/knowledge-bases/${encodeURIComponent(name)}/graph?limit=${limit}`);
        performance.mark("lore:graph-received");
        await labelsLoaded;
        this.draw({ top_entities: page.nodes, sample_relations: page.edges });
        performance.mark("lore:graph-drawn");
      });
    },
    clear() {
      if (this.cy) this.cy.destroy();
      this.cy = null;
      this.entities = {};
      this.colours = {};
      this.selected = null;
      this.nodeCount = 0;
      this.edgeCount = 0;
    },
    draw(overview) {
      this.entities = {};
      this.colours = {};
      const types = [...new Set(overview.top_entities.map((e) => typeLabel(e.type || "entity")))];
      types.forEach((t, i) => { this.colours[t] = this.palette[i % this.palette.length]; });
      // A large graph is laid out as a sunflower by rank (the best connected in the middle): no layout
      // engine to wait for. A smaller one gets cose, force-directed.
      const large = overview.top_entities.length > 600;
      const nodes = overview.top_entities.map((e, i) => {
        this.entities[e.name] = Object.assign({ neighbours: [] }, e);
        // A large graph names only its 150 best connected entities (measuring 2,000 labels is most of
        // the drawing); a found or selected entity is always named.
        const node = { data: { id: e.name, label: large && i >= 150 ? "" : e.name, colour: this.colours[typeLabel(e.type || "entity")], size: 12 + Math.min(30, 3 * e.degree) } };
        if (large) node.position = { x: 30 * Math.sqrt(i) * Math.cos(i * 2.39996), y: 30 * Math.sqrt(i) * Math.sin(i * 2.39996) };
        return node;
      });
      const edges = overview.sample_relations
        .filter((r) => this.entities[r.source] && this.entities[r.target])
        .map((r, i) => {
          this.entities[r.source].neighbours.push(r.target);
          this.entities[r.target].neighbours.push(r.source);
          return { data: { id: "e" + i, source: r.source, target: r.target, label: r.description } };
        });
      this.nodeCount = nodes.length;
      this.edgeCount = edges.length;
      if (this.cy) this.cy.destroy();
      this.cy = cytoscape({
        container: document.getElementById("graph"),
        elements: { nodes, edges },
        style: [
          // Labels appear once zoomed in enough to read them: drawing 2,000 small labels costs more than the graph.
          { selector: "node", style: { "background-color": "data(colour)", label: "data(label)", width: "data(size)", height: "data(size)", "font-size": 9, "font-family": getComputedStyle(document.body).fontFamily, color: "#222", "min-zoomed-font-size": 7 } },
          { selector: "edge", style: { width: 1, "line-color": "#bbb", "curve-style": "haystack" } },
          { selector: ".hit", style: { "border-width": 3, "border-color": "#111", label: "data(id)" } },
          { selector: ":selected", style: { "border-width": 3, "border-color": "#c00", label: "data(id)" } },
        ],
        layout: large ? { name: "preset", fit: true } : { name: "cose", animate: false, numIter: 400 },
        minZoom: 0.05,
        maxZoom: 2.5,
        textureOnViewport: large,
        hideEdgesOnViewport: large,
      });
      this.cy.on("tap", "node", (event) => this.select(event.target.id()));
      this.selected = null;
    },
    select(name) {
      const entity = this.entities[name];
      if (!entity) return;
      this.selected = Object.assign({}, entity, { neighbours: [...new Set(entity.neighbours)] });
      this.cy.$(":selected").unselect();
      this.cy.getElementById(name).select();
    },
    find() {
      if (!this.cy) return;
      this.cy.nodes().removeClass("hit");
      const term = this.search.trim().toLowerCase();
      if (!term) return;
      const hits = this.cy.nodes().filter((n) => n.id().toLowerCase().includes(term));
      hits.addClass("hit");
      if (hits.length) { this.cy.fit(hits, 80); this.select(hits[0].id()); }
    },
  }));

  Alpine.data("memory", () => ({
    scopeKind: "user_id",
    scopeId: "",
    query: "",
    text: "",
    memories: [],
    changes: [],
    editing: null,
    draft: "",
    insertText: "",
    job: null,
    question: "",
    mode: "hybrid",
    reply: null,
    scope() { return { [this.scopeKind]: this.scopeId }; },
    list() {
      return attempt(async () => {
        const params = new URLSearchParams(this.scope());
        this.memories = (await api("GET", "/mem/vg?" + params)).results;
        this.changes = [];
      });
    },
    search() {
      return attempt(async () => {
        this.memories = (await api("POST", "/mem/vg/search", Object.assign({ query: this.query, limit: 20 }, this.scope()))).results;
      });
    },
    add() {
      return attempt(async () => {
        await api("POST", "/mem/vg/add", Object.assign({ messages: [{ role: "user", content: this.text }] }, this.scope()));
        this.text = "";
        await this.list();
      });
    },
    history(id) { return attempt(async () => { this.changes = await api("GET", `/mem/vg/${id}/history`); }); },
    edit(memory) { this.editing = memory.id; this.draft = memory.memory; },
    save(id) {
      return attempt(async () => { await api("PUT", `/mem/vg/${id}`, { data: this.draft }); this.editing = null; await this.list(); });
    },
    remove(id) {
      return attempt(async () => {
        await api("DELETE", `/mem/vg/${id}`);
        this.memories = this.memories.filter((m) => m.id !== id);
      });
    },
    insert() {
      return attempt(async () => {
        const form = new FormData();
        form.append("query", this.insertText);
        const media = this.$refs.media.files[0];
        if (media) {
          const kind = media.type.startsWith("image/") ? "image" : media.type.startsWith("audio/") ? "audio" : "video";
          form.append(kind, media, media.name);
        }
        this.job = await api("POST", "/mem/kb/insert", form, true);
        while (this.job && !["done", "failed"].includes(this.job.status)) {
          await new Promise((r) => setTimeout(r, 500));
          this.job = await api("GET", `/mem/kb/insert/${this.job.id}`);
        }
      });
    },
    ask() {
      return attempt(async () => { this.reply = await api("POST", "/mem/kb/query", { query: this.question, mode: this.mode }); });
    },
  }));

  Alpine.data("gen", () => ({
    get kbs() { return store.kbs; },
    question: "",
    kb: "",
    running: false,
    steps: [],
    error: "",
    result: null,
    sort: { column: "", descending: false },
    topic: "",
    treeKb: "",
    tree: null,
    treeStatus: "",
    get columns() {
      const rows = this.rows;
      return rows.length ? Object.keys(rows[0]) : [];
    },
    get rows() {
      if (!this.result) return [];
      return Array.isArray(this.result.query_results) ? this.result.query_results : this.result.csv_data;
    },
    get sortedRows() {
      const { column, descending } = this.sort;
      if (!column) return this.rows;
      return [...this.rows].sort((a, b) => {
        const x = a[column], y = b[column];
        const order = typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
        return descending ? -order : order;
      });
    },
    sortBy(column) {
      this.sort = { column, descending: this.sort.column === column ? !this.sort.descending : false };
    },
    // The table over the WebSocket: its steps as they happen, then the rows. A browser cannot set
    // headers on a WebSocket, so with API keys the key goes as the `access_token` query parameter.
    table() {
      this.running = true;
      this.steps = [];
      this.error = "";
      this.result = null;
      const url = new URL(API + "/gen/pipeline/stream", location.href);
      url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
      const key = localStorage.getItem(KEY);
      if (key) url.searchParams.set("access_token", key);
      const socket = new WebSocket(url);
      socket.onopen = () => {
        const body = { question: this.question };
        if (this.kb) body.kb_name = this.kb;
        socket.send(JSON.stringify(body));
      };
      socket.onmessage = (event) => {
        const message = JSON.parse(event.data);
        if (message.type === "progress") {
          const rows = message.total != null ? ` (${message.done}/${message.total} rows)` : "";
          this.steps.push(`step ${message.step}: ${message.name || ""}${rows}`);
        } else if (message.type === "result") {
          this.result = message.data;
        } else if (message.type === "error") {
          this.error = message.message;
        }
      };
      socket.onclose = (event) => {
        this.running = false;
        if (!this.result && !this.error) this.error = event.code === 1000 ? "the stream ended without a result" : `the stream closed (code ${event.code})`;
      };
    },
    async waitTree(taskId) {
      for (;;) {
        const task = await api("GET", `/gen/tag-tree/status/${taskId}`);
        this.treeStatus = `tree ${taskId.slice(0, 8)}: ${task.status}`;
        if (task.status === "failed") throw new Error(task.error || "the tree failed");
        if (task.status === "completed") return task.result;
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    generate() {
      return attempt(async () => {
        const body = this.treeKb ? { topic: this.topic, mode: "kb", kb_name: this.treeKb } : { topic: this.topic, mode: "pure_llm" };
        const task = await api("POST", "/gen/tag-tree/generate", body);
        this.tree = await this.waitTree(task.task_id);
      });
    },
    importTree() {
      return attempt(async () => {
        const form = new FormData();
        const file = this.$refs.sheet.files[0];
        form.append("file", file, file.name);
        form.append("tree_name", file.name.replace(/\.xlsx?$/i, ""));
        const task = await api("POST", "/gen/tag-tree/submit", form, true);
        this.tree = await this.waitTree(task.task_id);
      });
    },
    renderTree(nodes) {
      return nodes.map((n) => {
        const label = `<span class="node">${escapeHtml(labelTypes(n.node_name))}</span>` + (n.description ? ` <small>${escapeHtml(labelTypes(n.description))}</small>` : "");
        if (!n.children.length) return `<li role="treeitem">${label}</li>`;
        return `<li role="treeitem" aria-expanded="true"><details open><summary>${label}</summary><ul role="group">${this.renderTree(n.children)}</ul></details></li>`;
      }).join("");
    },
  }));
});
