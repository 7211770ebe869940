// The Context Inspector. Plain DOM: every value from the Server is set as text, never parsed as markup.
"use strict";

(() => {
  const SVG = "http://www.w3.org/2000/svg";
  let token = null; // only in this tab's memory: never in storage or the URL
  let baseline = null; // a pinned run: { label, explained }
  let lastRun = null; // the run on screen: { request, explained }
  let pendingRun = false; // the address asked for a run once the Scopes are loaded

  const OMISSION_REASONS = {
    duplicate: "the same Scope-qualified identity was already selected",
    blank: "empty identity or nothing to render",
    family_limit: "cut by the family's or the section's admission cap",
    entry_limit: "cut by the combined cap on injected items",
    below_min_bytes: "too little budget left to truncate it into",
    no_fitting_truncation: "no truncation of it fit the remaining budget",
    rerank_not_selected: "the reranker did not choose it",
    not_retrieved: "the family was requested but no search returned a candidate",
  };
  const FATE_NOTES = {
    not_retained: "found only by an expansion round the prepare abandoned; the Receipt counts no omission for it",
  };
  const WHERE = {
    candidate: "a candidate of this run",
    below_pool: "ranked by this run, below the pool depth",
    deeper_search: "only a deeper search ranks it",
    not_found: "not ranked for this query",
  };

  const $ = (id) => document.getElementById(id);

  // What the Server's renderer escapes in the injected text (text/visible.py): controls but newline, tab and CR, line
  // separators, bidi controls, tag characters and other invisible characters. Shown here as the same \uXXXX
  // escapes (a surrogate pair above U+FFFF), so the page is exactly as inert as what the agent gets.
  const INVISIBLE =
    /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;
  const escape16 = (unit) => "\\u" + unit.toString(16).padStart(4, "0");
  const escapeChar = (c) => (c.length === 1 ? escape16(c.charCodeAt(0)) : escape16(c.charCodeAt(0)) + escape16(c.charCodeAt(1)));
  function inert(text) {
    INVISIBLE.lastIndex = 0;
    return INVISIBLE.test(text) ? text.replace(INVISIBLE, escapeChar) : text;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" || typeof child === "number" ? inert(String(child)) : child);
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    return node;
  }

  // -- HTTP --------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
    describe() {
      return `${this.status} ${this.code}: ${this.message}`;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
        redirect: "error",
      });
    } catch (error) {
      throw new ApiError(0, "network-error", "the Server could not be reached");
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    if (!response.ok) {
      const detail = data && data.error ? data.error : {};
      throw new ApiError(response.status, detail.code || "http-error", detail.message || response.statusText);
    }
    return data;
  }

  const segment = (value) => encodeURIComponent(value);

  // -- Scopes and token --------------------------------------------------------------------------

  async function loadScopes() {
    let list;
    try {
      list = await api("GET", "/v1/scopes");
    } catch (error) {
      if (error.status === 401) {
        $("token-panel").hidden = false;
        if (token) showError("token-error", "that token was not accepted: " + error.describe());
        return false;
      }
      showError("request-error", error.describe());
      return false;
    }
    // A Server that asked for a token keeps the panel, so the viewer can switch principals.
    $("token-panel").hidden = token === null;
    $("token-state").textContent = token === null ? "" : "A token is in use (kept in this tab only).";
    hideError("token-error");
    const select = $("scope");
    const wanted = select.value || prefill.scope;
    const ids = list.items.map((s) => s.scope_id);
    select.replaceChildren(...list.items.map((s) => el("option", { value: s.scope_id }, `${s.scope_id} — ${s.title}`)));
    // A Scope the address (or the last choice) names but this list lacks is never swapped for another one.
    const missing = wanted && !ids.includes(wanted) ? wanted : null;
    if (missing) select.selectedIndex = -1;
    else if (wanted) select.value = wanted;
    select.dataset.loaded = String(list.items.length);
    loadReview();
    if (missing) {
      const run = pendingRun;
      pendingRun = false;
      await missingScope(missing, ids, run);
    } else if (pendingRun && select.value) {
      pendingRun = false;
      runA();
    }
    return true;
  }

  // The Server's own answer for the asked Scope (scope-not-found, or scope-forbidden) when the address asked to run,
  // and the nearest listed Scope as the likely typo; nothing runs against another Scope.
  async function missingScope(scope, ids, run) {
    const near = nearestScope(scope, ids);
    let said = `Scope ${scope} is not among the Scopes you can read here`;
    if (run) {
      let request;
      try {
        request = { ...settings("a"), scope_id: scope };
      } catch (error) {
        return showError("request-error", error.message);
      }
      try {
        const explained = await explain(request);
        $("scope").append(el("option", { value: scope }, scope)); // created since the list was read
        $("scope").value = scope;
        return showRun(explained, request);
      } catch (error) {
        said = `Scope ${scope}: ${error.describe()}`;
      }
    }
    showError("request-error", `${said}${near ? `; did you mean ${near}?` : ""} Choose a Scope above to run.`);
  }

  // The listed id closest to a likely typo (edit distance at most a third of its length, and at least 1 allowed).
  function nearestScope(scope, ids) {
    let best = null;
    let bestDistance = Math.max(1, Math.floor(scope.length / 3)) + 1;
    for (const id of ids) {
      const d = distance(scope, id);
      if (d < bestDistance) (best = id), (bestDistance = d);
    }
    return best;
  }

  function distance(a, b) {
    let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i += 1) {
      const row = [i];
      for (let j = 1; j <= b.length; j += 1) {
        row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      }
      previous = row;
    }
    return previous[b.length];
  }

  function showError(id, text) {
    const node = $(id);
    node.textContent = inert(text);
    node.hidden = false;
  }

  function hideError(id) {
    $(id).hidden = true;
  }

  // -- Requests ----------------------------------------------------------------------------------

  function parseSections(raw) {
    const text = raw.trim();
    if (!text) return null; // the default recall
    if (text === "none") return [];
    return text.split(",").map((part) => {
      const [family, limit] = part.split("=").map((s) => s.trim());
      if (!family || !/^\d+$/.test(limit || "")) throw new Error(`sections: "${part.trim()}" is not FAMILY=LIMIT`);
      return { family, limit: Number(limit) };
    });
  }

  // The input drops what is not a number ("abc" from an address reads as ""): say what it must be, not a bound.
  function maxBytes(which) {
    const input = $(`max-bytes-${which}`);
    const low = Number(input.min);
    const high = Number(input.max);
    const value = input.value.trim();
    if (!/^\d+$/.test(value) || Number(value) < low || Number(value) > high) {
      throw new Error(`max_bytes must be a whole number from ${low} to ${high}`);
    }
    return Number(value);
  }

  const expectedIds = () => $("expected").value.split(/[\s,]+/).filter(Boolean);

  function settings(which) {
    const sections = parseSections($(`sections-${which}`).value);
    const query = which === "b" && $("query-b").value.trim() ? $("query-b").value : $("query").value;
    const request = {
      scope_id: $("scope").value,
      query,
      max_bytes: maxBytes(which),
      include_code: $(`code-${which}`).checked,
      include_receipt: true,
      expected: expectedIds(),
    };
    if (sections !== null) request.assembly = { sections };
    return request;
  }

  const explain = (request) => api("POST", "/v1/context/explain", request);

  // The address of this run: opening it runs it again (the fragment never reaches the Server).
  function permalink(request) {
    const params = new URLSearchParams({ scope: request.scope_id, q: request.query, max_bytes: String(request.max_bytes) });
    if ($("sections-a").value.trim()) params.set("sections", $("sections-a").value.trim());
    if (request.include_code) params.set("code", "1");
    if (request.expected.length) params.set("expect", request.expected.join(","));
    params.set("run", "1");
    return `${location.pathname}#${params.toString().replace(/\+/g, "%20")}`;
  }

  // -- Identities --------------------------------------------------------------------------------

  function identityOf(item) {
    if (item.family === "code") {
      const c = item.code_evidence;
      return `code ${c.fingerprint} ${c.path}:${c.start_line}-${c.end_line} ${c.snippet_sha256}`;
    }
    const a = item.artifact_address;
    return `${a.scope_id} ${a.artifact.family} ${a.artifact.artifact_id}@${a.artifact.revision}`;
  }

  // Code candidates name the whole indexed range; an injected range may end earlier.
  const rangeOf = (item) =>
    item.family === "code" ? `code ${item.code_evidence.path}:${item.code_evidence.start_line}` : identityOf(item);

  function labelOf(item) {
    if (item.family === "code") {
      const c = item.code_evidence;
      return { scope: "", id: `${c.path}:${c.start_line}-${c.end_line}` };
    }
    const a = item.artifact_address;
    return { scope: a.scope_id, id: `${a.artifact.artifact_id} r${a.artifact.revision}` };
  }

  function exactReadPath(item, request) {
    if (item.family === "code") {
      const c = item.code_evidence;
      const query = new URLSearchParams({
        fingerprint: c.fingerprint,
        path: c.path,
        file_sha256: c.file_sha256,
        start_line: String(c.start_line),
        end_line: String(c.end_line),
      });
      return `/v1/scopes/${segment(request.scope_id)}/code/snippet?${query}`;
    }
    const a = item.artifact_address;
    const r = a.artifact;
    return `/v1/scopes/${segment(a.scope_id)}/artifacts/${segment(r.family)}/${segment(r.artifact_id)}/revisions/${r.revision}`;
  }

  function bodyText(view) {
    if (typeof view.text === "string") return view.text;
    if (typeof view.body === "string") return `${view.title || ""}\n\n${view.body}`;
    if (Array.isArray(view.entries)) return view.entries.map((e) => `${e.key}: ${e.value}`).join("\n");
    if (typeof view.situation === "string") {
      return [`Situation: ${view.situation}`, `What worked: ${view.what_worked || ""}`, `Avoid: ${view.what_to_avoid || ""}`].join("\n");
    }
    return JSON.stringify(view, null, 2);
  }

  // Bodies are read through the exact-read routes under the viewer's own token, a few at a time.
  const reads = new Map();
  let active = 0;
  const waiting = [];
  function readExact(path) {
    if (!reads.has(path)) {
      reads.set(
        path,
        new Promise((resolve) => waiting.push(resolve)).then(async () => {
          try {
            return await api("GET", path);
          } finally {
            active -= 1;
            if (waiting.length) (active += 1), waiting.shift()();
          }
        }),
      );
      if (active < 6) (active += 1), waiting.shift()();
    }
    return reads.get(path);
  }

  // Query terms are stemmed index terms ("releas" for "release"): a word matches when it starts with one.
  function highlight(text, terms) {
    const out = document.createDocumentFragment();
    const words = terms.filter((t) => t.length > 0);
    for (const part of text.split(/([\p{L}\p{N}]+)/u)) {
      const folded = part.toLowerCase();
      const hit = /[\p{L}\p{N}]/u.test(part) && words.some((t) => (t.length >= 3 ? folded.startsWith(t) : folded === t));
      out.append(hit ? el("mark", {}, part) : part);
    }
    return out;
  }

  const PREVIEW_CHARS = 320;
  async function fillPreview(cell, item, request, terms) {
    try {
      const view = await readExact(exactReadPath(item, request));
      let text = inert(bodyText(view));
      if (text.length > PREVIEW_CHARS) text = text.slice(0, PREVIEW_CHARS) + "…";
      const state = view.state && view.state !== "active" ? el("span", { class: "tag" }, view.state) : null;
      cell.replaceChildren(highlight(text, terms), state ? " " : "", state || "");
    } catch (error) {
      cell.replaceChildren(el("span", { class: "error read-error" }, error.describe ? error.describe() : String(error)));
    }
  }

  // -- Rendering ---------------------------------------------------------------------------------

  function section(title, ...children) {
    return el("div", { class: "block" }, el("h3", {}, title), ...children);
  }

  const scroll = (node) => el("div", { class: "scroll" }, node);

  function table(headers, rows, emptyText) {
    if (!rows.length) return el("p", { class: "empty" }, emptyText);
    return scroll(
      el(
        "table",
        {},
        el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))),
      ),
    );
  }

  function budgetBar(used, max) {
    const width = 400;
    const share = max > 0 ? Math.min(used / max, 1) : 0;
    const chart = svg("svg", { width, height: 18, viewBox: `0 0 ${width} 18`, role: "img", "aria-label": "bytes used" });
    chart.append(svg("rect", { x: 0, y: 0, width, height: 18, class: "bar-back" }));
    chart.append(svg("rect", { x: 0, y: 0, width: Math.round(share * width), height: 18, class: "bar-used" }));
    return el("div", { class: "budget" }, chart, el("span", { id: "budget-text" }, `${used} of ${max} bytes`));
  }

  function stageChart(stages) {
    if (!stages.length) return el("p", { class: "empty" }, "no stage timings");
    const longest = Math.max(...stages.map((s) => s.duration_ms), 0.001);
    const row = 20;
    const labelWidth = 170;
    const barWidth = 320;
    const width = labelWidth + barWidth + 90;
    const chart = svg("svg", {
      width,
      height: row * stages.length,
      viewBox: `0 0 ${width} ${row * stages.length}`,
      id: "stage-chart",
      role: "img",
      "aria-label": "stage timings",
    });
    stages.forEach((stage, i) => {
      const y = i * row;
      const label = svg("text", { x: 0, y: y + 14, class: "chart-label" });
      label.textContent = inert(stage.count > 1 ? `${stage.stage} ×${stage.count}` : stage.stage);
      const w = Math.max(1, Math.round((stage.duration_ms / longest) * barWidth));
      const value = svg("text", { x: labelWidth + w + 6, y: y + 14, class: "chart-label" });
      value.textContent = `${stage.duration_ms.toFixed(2)} ms`;
      chart.append(label, svg("rect", { x: labelWidth, y: y + 3, width: w, height: 14, class: "bar-stage" }), value);
    });
    return chart;
  }

  const number = (value) => (value === null || value === undefined ? "" : Number(value).toPrecision(4));

  function fateText(fate) {
    if (fate.outcome === "selected") return `injected #${fate.position} · ${fate.rendered_bytes} B${fate.truncated ? " · truncated" : ""}`;
    if (fate.outcome === "not_retained") return `round ${fate.round} not retained`;
    return fate.reason;
  }

  function channelRanks(candidate) {
    const best = {};
    for (const r of candidate.ranks) if (!(r.channel in best) || r.rank < best[r.channel]) best[r.channel] = r.rank;
    const parts = [];
    if (best.fts) parts.push(`fts ${best.fts}`);
    if (best.vector) parts.push(`vec ${best.vector}`);
    if (candidate.defines_query_identifier) parts.push("defines it");
    return parts.join(" · ");
  }

  const byFate = (a, b) => {
    const pa = a.fate.position || Infinity;
    const pb = b.fate.position || Infinity;
    return pa - pb || a.family.localeCompare(b.family) || a.rank - b.rank;
  };

  // RFC 1435's third level: the Sources an injected memory was written from (identity, never content).
  function sourceNotes(candidate) {
    return (candidate.source_refs || []).map((ref) => {
      const where = [ref.origin.host, ref.origin.session_id ? `session ${ref.origin.session_id}` : null].filter(Boolean);
      const text = `from ${ref.kind} ${ref.source_id}${where.length ? " · " + where.join(" · ") : ""} · ${ref.observed_at}`;
      return el("div", { class: "hint source-ref", "data-source": ref.source_id }, text);
    });
  }

  function whyTable(explained, request) {
    const candidates = [...explained.candidates].sort(byFate);
    if (!candidates.length) return el("p", { class: "empty" }, "no search returned a candidate");
    const terms = explained.query_terms;
    const body = el("tbody", {});
    candidates.forEach((c, i) => {
      const preview = el("td", { class: "preview" }, el("span", { class: "hint" }, "reading…"));
      const label = labelOf(c);
      const link = el("a", { href: exactReadPath(c, request), target: "_blank", rel: "noopener noreferrer", class: "mono" }, label.id);
      const fate = el("td", { class: `fate fate-${c.fate.outcome}`, title: OMISSION_REASONS[c.fate.reason] || FATE_NOTES[c.fate.outcome] || "" }, fateText(c.fate));
      const row = el(
        "tr",
        {
          id: `candidate-${i}`,
          class: `candidate-row${c.expected ? " expected" : ""}`,
          "data-identity": identityOf(c),
          "data-fate": c.fate.outcome === "omitted" ? c.fate.reason : c.fate.outcome,
        },
        fate,
        el("td", {}, c.family, label.scope ? el("div", { class: "hint" }, label.scope) : null),
        el("td", { class: "num" }, String(c.rank), el("div", { class: "hint" }, channelRanks(c))),
        el("td", { class: "num" }, number(c.bm25)),
        el("td", { class: "num" }, number(c.cosine)),
        el("td", { class: "num" }, number(c.fused)),
        el("td", { class: "terms" }, ...c.matched_terms.map((t) => el("span", { class: "term" }, t))),
        preview,
        el("td", {}, link, ...sourceNotes(c)),
      );
      body.append(row);
      fillPreview(preview, c, request, c.family === "code" ? explained.code_query_terms || [] : terms);
    });
    const heads = ["fate", "family", "rank", "bm25", "cosine", "fused", "matched", "text", "revision"];
    return scroll(el("table", { id: "why" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), body));
  }

  function expectedBox(explained) {
    if (!explained.expected.length) return null;
    const rowOf = (e) =>
      [...document.querySelectorAll("tr.candidate-row")].find((r) => r.dataset.identity.includes(` ${e.artifact_id}@`));
    const list = el("ul", { id: "expected-list" });
    for (const e of explained.expected) {
      const fate = e.fate ? ` — ${fateText(e.fate)}` : "";
      const item = el(
        "li",
        { "data-id": e.artifact_id, "data-where": e.where },
        el("span", { class: "mono" }, e.artifact_id),
        ` ${WHERE[e.where]}${fate}`,
        el("div", { class: "hint" }, e.explanation),
      );
      if (e.where === "candidate") {
        const jump = el("button", { type: "button", class: "jump" }, "show row");
        jump.addEventListener("click", () => {
          const row = rowOf(e);
          if (row) row.scrollIntoView({ block: "center" }), row.classList.add("flash");
        });
        item.append(jump);
      }
      list.append(item);
    }
    return section("Expected ids", list);
  }

  // The content is a preamble and one JSON array of items between markers: shown here item by item.
  function injectedItems(prepared) {
    const raw = el("pre", { id: "content", hidden: "" }, prepared.content === null ? "(empty)" : prepared.content);
    const toggle = el("button", { type: "button", id: "raw-toggle" }, "show raw");
    toggle.addEventListener("click", () => {
      raw.hidden = !raw.hidden;
      items.hidden = !raw.hidden;
      toggle.textContent = raw.hidden ? "show raw" : "show items";
    });
    const items = el("ol", { id: "injected" });
    const text = prepared.content || "";
    const start = text.indexOf("\n{");
    const end = text.lastIndexOf("}\n");
    try {
      const parsed = start >= 0 && end > start ? JSON.parse(text.slice(start + 1, end + 1)).items : [];
      for (const item of parsed) {
        const cite = item.citation;
        const label = cite.code_evidence
          ? `code ${cite.code_evidence.path}:${cite.code_evidence.start_line}-${cite.code_evidence.end_line}`
          : `${cite.artifact.family} ${cite.scope_id} ${cite.artifact.artifact_id} r${cite.artifact.revision}`;
        items.append(
          el(
            "li",
            { class: "injected-item" },
            el("div", { class: "hint mono" }, `${label} · ${item.kind}${item.truncated ? " · truncated" : ""}`),
            el("pre", { class: "body" }, item.content),
          ),
        );
      }
    } catch (error) {
      items.append(el("li", { class: "error" }, "the content could not be split into items; see raw"));
    }
    if (!items.childElementCount && !prepared.content) items.append(el("li", { class: "empty" }, "nothing was injected"));
    return section("Injected content", toggle, items, raw);
  }

  function selectedTable(receipt, request) {
    if (!receipt.selected.length) return el("p", { class: "empty" }, "nothing was selected");
    const body = el("tbody", {});
    receipt.selected.forEach((item, index) => {
      const label = labelOf(item);
      const detail = el("tr", { class: "detail", hidden: "" }, el("td", { colspan: "7" }));
      const button = el("button", { type: "button", class: "expand" }, "show");
      button.addEventListener("click", () => toggle(item, request, detail, button));
      const row = el(
        "tr",
        { class: "selected-row", "data-identity": identityOf(item) },
        el("td", {}, String(index + 1)),
        el("td", {}, item.family),
        el("td", {}, label.scope),
        el("td", { class: "mono" }, label.id),
        el("td", {}, String(item.rendered_bytes)),
        el("td", {}, item.truncated ? "yes" : "no"),
        el("td", {}, button),
      );
      body.append(row, detail);
    });
    const heads = ["#", "family", "Scope", "identity", "bytes", "truncated", ""];
    return scroll(el("table", { id: "selected" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), body));
  }

  async function toggle(item, request, detail, button) {
    if (!detail.hidden) {
      detail.hidden = true;
      button.textContent = "show";
      return;
    }
    const cell = detail.firstChild;
    cell.replaceChildren(el("span", { class: "hint" }, "reading the exact revision…"));
    detail.hidden = false;
    button.textContent = "hide";
    try {
      const view = await api("GET", exactReadPath(item, request));
      const state = view.state ? `; the Artifact is ${view.state} now` : "";
      cell.replaceChildren(el("p", { class: "hint" }, `exact revision${state}`), el("pre", { class: "body" }, bodyText(view)));
    } catch (error) {
      cell.replaceChildren(el("p", { class: "error read-error" }, error.describe()));
    }
  }

  // A family with no candidates lost nothing: it is said once, not listed as an omission.
  function omissionTable(receipt) {
    const groups = receipt.omitted.filter((g) => g.reason !== "not_retrieved");
    const rows = groups.map((g) => [g.family, g.reason, String(g.count), OMISSION_REASONS[g.reason] || ""]);
    return table(["family", "reason", "count", "meaning"], rows, "nothing was omitted");
  }

  function emptyFamilies(explained) {
    const empty = explained.families.filter((f) => f.candidates === 0).map((f) => f.family);
    if (!empty.length) return null;
    return el("p", { id: "no-candidates", class: "hint" }, `No candidates from: ${empty.join(", ")} (nothing there matched this query).`);
  }

  // Hits a channel found but did not retrieve: too weakly related to the query (each measure against its floor).
  const FLOOR_MEASURES = { query_idf_share: "share of query IDF", matched_idf: "matched IDF", cosine: "cosine" };
  function belowFloor(explained) {
    const rows = (explained.below_floor || []).map((d) => [
      d.artifact_address.artifact.artifact_id,
      String(d.round),
      d.channel,
      d.readings.map((r) => `${FLOOR_MEASURES[r.measure] || r.measure} ${r.value.toFixed(3)} < ${r.floor}`).join(" · "),
    ]);
    return el(
      "div",
      { id: "below-floor" },
      el("p", { class: "hint" }, "Found by a search but below its channel's relevance floor, so never a candidate (not a Receipt omission)."),
      table(["artifact", "round", "channel", "score against the floor"], rows, "no hit was below a floor"),
    );
  }

  function retrieval(receipt) {
    const r = receipt.retrieval;
    const prompt = (p) => (p ? `${p.key} ${p.selection} v${p.selected_version} ${p.compiled_digest.slice(0, 19)}…` : "none");
    return el(
      "div",
      {},
      el("h4", {}, "Rounds"),
      table(["round", "outcome", "retained"], r.rounds.map((x) => [String(x.round), x.outcome, x.retained ? "yes" : "no"]), "no rounds"),
      el("h4", {}, "Searches"),
      table(
        ["round", "family", "mode", "outcome", "fallback", "count"],
        r.searches.map((s) => [String(s.round), s.family, s.mode, s.outcome, s.fallback_reason, String(s.count)]),
        "no searches ran",
      ),
      el("h4", {}, "Rerank configs"),
      table(
        ["model", "policy", "prompt", "non-deterministic", "digest"],
        r.rerank_configs.map((c) => [c.model || "(deterministic)", c.policy_id, prompt(c.prompt), c.non_deterministic ? "yes" : "no", c.config_digest]),
        "no reranker ran",
      ),
      el("h4", {}, "Rerank groups"),
      table(
        ["round", "config", "outcome", "fallback", "count"],
        r.reranks.map((g) => [String(g.round), g.config_id.slice(0, 19) + "…", g.outcome, g.fallback_reason, String(g.count)]),
        "no rerank invocations",
      ),
    );
  }

  function summary(receipt) {
    const rows = [
      ["receipt_id", receipt.receipt_id],
      ["query_digest", receipt.query_digest],
      ["content_digest", receipt.content_digest || "null (empty)"],
      ["non_deterministic", String(receipt.non_deterministic)],
      ["truncated", String(receipt.truncated)],
    ];
    return el("dl", { id: "receipt-ids" }, ...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { class: "mono" }, v)]));
  }

  function renderResult(explained, request) {
    const start = performance.now();
    reads.clear(); // a revision's text never changes, but its state and the viewer's grant may have
    const prepared = explained.prepared;
    const receipt = prepared.receipt;
    const terms = explained.query_terms.length ? explained.query_terms.join(" ") : "none";
    const parts = [el("h2", {}, `Result: ${prepared.status}`), budgetBar(prepared.content_bytes, request.max_bytes)];
    if (!receipt) {
      parts.push(
        el(
          "p",
          { id: "receipt-dropped", class: "banner" },
          "The Server dropped the Receipt (fail-open). The content below is still exactly what an agent gets.",
        ),
      );
    }
    parts.push(
      expectedBox(explained),
      section(
        "Why: every candidate and its fate",
        el(
          "p",
          { class: "hint" },
          `Query terms (stemmed): ${terms}. Rank is the place in its family's pool; the default recall interleaves ` +
            "families by that rank (each family's first, then each second), so scores of two families are not compared.",
        ),
        emptyFamilies(explained),
        whyTable(explained, request),
      ),
      section("Below the relevance floor", belowFloor(explained)),
      injectedItems(prepared),
    );
    if (receipt) {
      parts.push(
        section("Receipt", summary(receipt)),
        section("Selected, in injection order", selectedTable(receipt, request)),
        section("Omitted", omissionTable(receipt)),
        section("Retrieval", retrieval(receipt)),
        section("Stage timings", stageChart(receipt.stages)),
      );
    }
    const result = $("result");
    result.replaceChildren(...parts.filter(Boolean));
    result.hidden = false;
    document.body.dataset.renderMs = (performance.now() - start).toFixed(3);
  }

  // -- Diff of two runs --------------------------------------------------------------------------

  function injected(explained) {
    return explained.candidates.filter((c) => c.fate.outcome === "selected").sort(byFate);
  }

  function renderDiff(before, after, labels) {
    const a = injected(before);
    const b = injected(after);
    const posA = new Map(a.map((c) => [rangeOf(c), c.fate.position]));
    const posB = new Map(b.map((c) => [rangeOf(c), c.fate.position]));
    const fateInB = new Map(after.candidates.map((c) => [rangeOf(c), c.fate]));
    const line = (c, note) => {
      const label = labelOf(c);
      return el("li", { "data-identity": identityOf(c) }, el("span", { class: "mono" }, `${c.family} ${label.scope} ${label.id}`), ` ${note}`);
    };
    const gained = b.filter((c) => !posA.has(rangeOf(c))).map((c) => line(c, `injected #${c.fate.position}`));
    const lost = a.filter((c) => !posB.has(rangeOf(c))).map((c) => {
      const fate = fateInB.get(rangeOf(c));
      return line(c, `was #${c.fate.position}; now ${fate ? fateText(fate) : "not a candidate"}`);
    });
    const moved = b
      .filter((c) => posA.has(rangeOf(c)) && posA.get(rangeOf(c)) !== c.fate.position)
      .map((c) => line(c, `#${posA.get(rangeOf(c))} → #${c.fate.position}`));
    const kept = b.filter((c) => posA.get(rangeOf(c)) === c.fate.position).length;
    const group = (title, id, items, cls) =>
      el("div", { class: `diff-group ${cls}` }, el("h3", {}, `${title} (${items.length})`), items.length ? el("ul", { id }, ...items) : el("p", { class: "empty", id }, "none"));
    const view = $("comparison");
    view.replaceChildren(
      el("h2", {}, "Diff of two runs"),
      el("p", { class: "hint", id: "diff-labels" }, `${labels[0]} → ${labels[1]}; ${kept} item(s) kept their place.`),
      el("div", { class: "diff" }, group("Gained", "diff-gained", gained, "mark-added"), group("Lost", "diff-lost", lost, "mark-removed"), group("Moved", "diff-moved", moved, "mark-moved")),
    );
    view.hidden = false;
  }

  const describe = (request) => `"${request.query.slice(0, 60)}" at ${request.max_bytes} B`;

  // -- Review inbox: extracted memories waiting for a decision ------------------------------------

  async function loadReview() {
    const scope = $("scope").value;
    const box = $("review");
    if (!scope) return;
    let page;
    let caps;
    try {
      page = await api("GET", `/v1/scopes/${segment(scope)}/memory-candidates?status=pending`);
      caps = await api("GET", "/v1/capabilities");
    } catch (error) {
      box.replaceChildren(el("h2", {}, "Review inbox"), el("p", { class: "error" }, error.describe()));
      box.hidden = false;
      return;
    }
    const pending = caps.extraction ? caps.extraction.pending_sources : 0;
    const rows = page.items.map((c) => {
      const decide = (decision) => async () => {
        try {
          await api("POST", `/v1/scopes/${segment(scope)}/memory-candidates/${segment(c.candidate_id)}/${decision}`, {});
        } catch (error) {
          showError("request-error", error.describe());
        }
        loadReview();
      };
      const approve = el("button", { type: "button", class: "approve" }, "Approve");
      const reject = el("button", { type: "button", class: "reject" }, "Reject");
      approve.addEventListener("click", decide("approve"));
      reject.addEventListener("click", decide("reject"));
      const shown = c.operation.target ? [c.operation.target] : c.operation.merged || [];
      const target = shown.map((a) => ` ${a.artifact.artifact_id}@${a.artifact.revision}`).join("");
      return el(
        "tr",
        { class: "review-row", "data-candidate": c.candidate_id },
        el("td", {}, c.operation.op + target),
        el("td", {}, c.operation.text || ""),
        el("td", { class: "mono" }, c.source_id),
        el("td", {}, approve, reject),
      );
    });
    const summaryLine = `${page.items.length} extracted write(s) waiting for review; ${pending} Source(s) not extracted yet.`;
    const heads = ["operation", "text", "source", "decision"];
    const list = rows.length
      ? scroll(el("table", { id: "review-table" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), el("tbody", {}, ...rows)))
      : el("p", { class: "empty" }, "nothing to review");
    box.replaceChildren(el("h2", {}, "Review inbox"), el("p", { class: "hint", id: "review-summary" }, summaryLine), list);
    box.hidden = false;
  }

  // -- Wiring ------------------------------------------------------------------------------------

  const prefill = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));

  function showRun(explained, request) {
    renderResult(explained, request);
    lastRun = { request, explained };
    $("pin").disabled = false;
    const link = permalink(request);
    $("permalink").href = link;
    $("permalink").hidden = false;
    history.replaceState(null, "", link);
  }

  async function runA() {
    hideError("request-error");
    try {
      const request = settings("a");
      const explained = await explain(request);
      showRun(explained, request);
      if (baseline) renderDiff(baseline.explained, explained, [`baseline ${baseline.label}`, `now ${describe(request)}`]);
      else $("comparison").hidden = true;
    } catch (error) {
      showError("request-error", error.describe ? error.describe() : error.message);
    }
  }

  async function compare() {
    hideError("request-error");
    try {
      const requestA = settings("a");
      const requestB = settings("b");
      const a = await explain(requestA);
      const b = await explain(requestB);
      showRun(a, requestA);
      renderDiff(a, b, [`A ${describe(requestA)}`, `B ${describe(requestB)}`]);
    } catch (error) {
      showError("request-error", error.describe ? error.describe() : error.message);
    }
  }

  function pin(on) {
    baseline = on && lastRun ? { label: describe(lastRun.request), explained: lastRun.explained } : null;
    $("unpin").hidden = baseline === null;
    $("pin").textContent = baseline ? "Baseline pinned" : "Pin as baseline";
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (prefill.q) $("query").value = prefill.q;
    if (prefill.max_bytes) $("max-bytes-a").value = prefill.max_bytes;
    if (prefill.sections) $("sections-a").value = prefill.sections;
    if (prefill.code === "1") $("code-a").checked = true;
    if (prefill.expect) $("expected").value = prefill.expect;
    pendingRun = prefill.run === "1" && Boolean(prefill.q);
    $("request-form").addEventListener("submit", (event) => {
      event.preventDefault();
      runA();
    });
    $("compare").addEventListener("click", compare);
    $("scope").addEventListener("change", loadReview);
    $("pin").addEventListener("click", () => pin(true));
    $("unpin").addEventListener("click", () => pin(false));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        runA();
      }
    });
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      token = $("token").value.trim() || null;
      $("token").value = "";
      loadScopes();
    });
    loadScopes();
  });
})();
