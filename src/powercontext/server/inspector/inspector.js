// The Context Inspector. Plain DOM: every value from the Server is set as text, never parsed as markup.
"use strict";

(() => {
  const SVG = "http://www.w3.org/2000/svg";
  let token = null; // only in this tab's memory: never in storage or the URL

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

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
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
    select.replaceChildren(...list.items.map((s) => el("option", { value: s.scope_id }, `${s.scope_id} — ${s.title}`)));
    if (wanted && list.items.some((s) => s.scope_id === wanted)) select.value = wanted;
    select.dataset.loaded = String(list.items.length);
    return true;
  }

  function showError(id, text) {
    const node = $(id);
    node.textContent = text;
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

  function settings(which) {
    const sections = parseSections($(`sections-${which}`).value);
    const request = {
      scope_id: $("scope").value,
      query: $("query").value,
      max_bytes: Number($(`max-bytes-${which}`).value),
      include_code: $(`code-${which}`).checked,
      include_receipt: true,
    };
    if (sections !== null) request.assembly = { sections };
    return request;
  }

  async function prepare(request) {
    return api("POST", "/v1/context/prepare", request);
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

  // -- Rendering ---------------------------------------------------------------------------------

  function section(title, ...children) {
    return el("div", { class: "block" }, el("h3", {}, title), ...children);
  }

  function table(headers, rows, emptyText) {
    if (!rows.length) return el("p", { class: "empty" }, emptyText);
    return el(
      "table",
      {},
      el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))),
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
    const chart = svg("svg", {
      width: labelWidth + barWidth + 90,
      height: row * stages.length,
      id: "stage-chart",
      role: "img",
      "aria-label": "stage timings",
    });
    stages.forEach((stage, i) => {
      const y = i * row;
      const label = svg("text", { x: 0, y: y + 14, class: "chart-label" });
      label.textContent = stage.count > 1 ? `${stage.stage} ×${stage.count}` : stage.stage;
      const width = Math.max(1, Math.round((stage.duration_ms / longest) * barWidth));
      const value = svg("text", { x: labelWidth + width + 6, y: y + 14, class: "chart-label" });
      value.textContent = `${stage.duration_ms.toFixed(2)} ms`;
      chart.append(label, svg("rect", { x: labelWidth, y: y + 3, width, height: 14, class: "bar-stage" }), value);
    });
    return chart;
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
    return el(
      "table",
      { id: "selected" },
      el("thead", {}, el("tr", {}, ...["#", "family", "Scope", "identity", "bytes", "truncated", ""].map((h) => el("th", {}, h)))),
      body,
    );
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

  function omissionTable(receipt) {
    const rows = receipt.omitted.map((g) => [g.family, g.reason, String(g.count), OMISSION_REASONS[g.reason] || ""]);
    return table(["family", "reason", "count", "meaning"], rows, "nothing was omitted");
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

  function renderResult(prepared, request) {
    const start = performance.now();
    const receipt = prepared.receipt;
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
    parts.push(section("Injected content", el("pre", { id: "content" }, prepared.content === null ? "(empty)" : prepared.content)));
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
    result.replaceChildren(...parts);
    result.hidden = false;
    document.body.dataset.renderMs = (performance.now() - start).toFixed(3);
  }

  function renderComparison(a, b, requestA, requestB) {
    const ids = (p) => (p.receipt ? p.receipt.selected.map(identityOf) : []);
    const left = ids(a);
    const right = ids(b);
    const column = (title, prepared, request, own, other) => {
      const items = prepared.receipt ? prepared.receipt.selected : [];
      const list = el("ol", { class: "compare-list" });
      items.forEach((item, i) => {
        const id = own[i];
        const at = other.indexOf(id);
        const mark = at === -1 ? (own === left ? "removed" : "added") : at === i ? "same" : "moved";
        const label = labelOf(item);
        list.append(el("li", { class: `mark-${mark}`, "data-identity": id, "data-mark": mark }, `${item.family} ${label.scope} ${label.id}`, el("span", { class: "mark" }, mark)));
      });
      const note = prepared.receipt ? null : el("p", { class: "banner" }, "no Receipt: the selection cannot be compared");
      return el("div", { class: "compare-column" }, el("h3", {}, title), el("p", { class: "hint" }, `max_bytes ${request.max_bytes}, ${prepared.content_bytes} bytes used`), note, list);
    };
    const view = $("comparison");
    view.replaceChildren(
      el("h2", {}, "Compare"),
      el("div", { class: "compare" }, column("A", a, requestA, left, right), column("B", b, requestB, right, left)),
    );
    view.hidden = false;
  }

  // -- Wiring ------------------------------------------------------------------------------------

  const prefill = Object.fromEntries(new URLSearchParams(location.hash.slice(1)));

  async function run(event) {
    event.preventDefault();
    hideError("request-error");
    try {
      const request = settings("a");
      renderResult(await prepare(request), request);
      $("comparison").hidden = true;
    } catch (error) {
      showError("request-error", error.describe ? error.describe() : error.message);
    }
  }

  async function compare() {
    hideError("request-error");
    try {
      const requestA = settings("a");
      const requestB = settings("b");
      const a = await prepare(requestA);
      const b = await prepare(requestB);
      renderResult(a, requestA);
      renderComparison(a, b, requestA, requestB);
    } catch (error) {
      showError("request-error", error.describe ? error.describe() : error.message);
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (prefill.q) $("query").value = prefill.q;
    if (prefill.max_bytes) $("max-bytes-a").value = prefill.max_bytes;
    $("request-form").addEventListener("submit", run);
    $("compare").addEventListener("click", compare);
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      token = $("token").value.trim() || null;
      $("token").value = "";
      loadScopes();
    });
    loadScopes();
  });
})();
