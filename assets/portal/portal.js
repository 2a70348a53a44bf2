// Lantern portal page: reads the Server-Sent Events of /events (see engine/portal/protocol.py)
// and draws them with the DOM and two canvases. No library, no build step.
"use strict";

const HISTORY = 300; // timeline columns (frames and gap markers)
const PALETTE = ["#56b4e9", "#e69f00", "#009e73", "#f0e442", "#cc79a7", "#d55e00", "#0072b2",
  "#aaaaaa", "#96dc5a", "#ff8282", "#b0a0ff", "#60e0e0"];
const COUNTERS = ["tested", "frustum_culled", "small_culled", "occluded", "visible",
  "drawn_early", "drawn_late", "shadow_casters"];
const PIE = [["frustum_culled", "#e65a50"], ["small_culled", "#f0be3c"],
  ["occluded", "#966ee6"], ["visible", "#5ac86e"]];
const STALE_MS = 2000;

const $ = (id) => document.getElementById(id);
const state = {
  session: null, names: [], frames: [], lastSeq: null, missed: 0, latest: null,
  log: new Map(), dirty: false, lastFrameAt: 0, connected: false, barKey: "", statsKey: "",
  pushed: 0, seen: new Set(),
};

function resetSession(session) {
  Object.assign(state, { session, names: [], frames: [], lastSeq: null, missed: 0, latest: null,
    barKey: "", statsKey: "", seen: new Set() });
  tl.key = "";
  renderLegend();
  state.log.clear();
  $("log").textContent = "";
  for (const id of ["frame-ms", "fps", "frame-index", "seq"]) $(id).textContent = "-";
  $("missed").textContent = "0";
  document.body.dataset.seq = -1; // nothing of the new session rendered yet
  renderSession();
}

// -- stream ----------------------------------------------------------------------------------
function connect() {
  const es = new EventSource("/events");
  es.onopen = () => { state.connected = true; setStatus(); };
  es.onerror = () => { state.connected = false; setStatus(); }; // EventSource retries by itself
  es.addEventListener("session", (e) => {
    const s = JSON.parse(e.data);
    const old = state.session;
    if (!old || old.pid !== s.pid || old.started !== s.started) resetSession(s);
    else { state.session = s; renderSession(); } // same process, new settings
  });
  es.addEventListener("names", (e) => {
    const { names, full } = JSON.parse(e.data);
    if (full) state.names = names.slice(); // the whole table (on connect)
    else state.names.push(...names); // ids continue
  });
  es.addEventListener("frame", (e) => onFrame(JSON.parse(e.data)));
  es.addEventListener("log", (e) => onLog(JSON.parse(e.data)));
}

// the benchmark reads these: [seq, epoch ms] per frame event, and ms per render
const arrivals = (window.lanternArrivals = []);
const renderMs = (window.lanternRenderMs = []);

function onFrame(msg) {
  arrivals.push([msg.seq, performance.timeOrigin + performance.now()]);
  if (arrivals.length > 2000) arrivals.splice(0, 1000);
  if (state.lastSeq !== null && msg.seq > state.lastSeq + 1) {
    const n = msg.seq - state.lastSeq - 1;
    state.missed += n;
    push({ gap: n });
  }
  state.lastSeq = msg.seq;
  state.latest = msg;
  state.lastFrameAt = performance.now();
  const name = (id) => state.names[id];
  const scopes = (list) => list && list.map(([id, b, e]) => [name(id), (e - b) / 1e6]);
  push({ seq: msg.seq, gpu: scopes(msg.gpu), cpu: scopes(msg.cpu), wall: msg.wall_ms });
  schedule();
}

function push(entry) {
  state.frames.push(entry);
  state.pushed++;
  if (state.frames.length > HISTORY) state.frames.splice(0, state.frames.length - HISTORY);
}

function schedule() {
  if (state.dirty || state.paused) return;
  state.dirty = true;
  requestAnimationFrame(() => {
    state.dirty = false;
    if (state.paused) return; // paused after this render was scheduled
    const t0 = performance.now();
    render();
    renderMs.push(performance.now() - t0);
    if (renderMs.length > 2000) renderMs.splice(0, 1000);
  });
}

// -- drawing ---------------------------------------------------------------------------------
const fmt = (v, d = 3) => (v === null || v === undefined ? "n/a" : v.toFixed(d));
const colorOf = (name) => PALETTE[Math.max(0, state.names.indexOf(name)) % PALETTE.length];

function setStatus() {
  const stale = state.connected && performance.now() - state.lastFrameAt > STALE_MS;
  const [cls, text] = !state.connected ? ["disconnected", "disconnected, reconnecting"]
    : stale ? ["stale", "connected, no frames"] : ["live", "live"];
  const el = $("status");
  el.className = "status " + cls;
  el.textContent = text;
  document.body.dataset.state = cls;
}
setInterval(setStatus, 500);

function render() {
  const m = state.latest;
  if (!m) return;
  const last = state.frames[state.frames.length - 1];
  const frameStat = (m.stats || []).find((r) => r[0] === "wall");
  const meanWall = frameStat ? frameStat[3] : m.wall_ms;
  $("frame-ms").textContent = fmt(m.wall_ms, 2);
  $("fps").textContent = meanWall ? (1000 / meanWall).toFixed(1) : "-";
  $("frame-index").textContent = m.frame;
  $("seq").textContent = m.seq;
  $("missed").textContent = state.missed;
  const hot = new Set((m.stats || []).filter((r) => r[8] === 1)
    .map((r) => r[0] + ":" + state.names[r[1]])); // outliers: "clock:name"
  renderBars(last, hot);
  renderTimeline();
  renderStats(m.stats || []);
  renderCull(m.cull);
  document.body.dataset.seq = m.seq; // the frame every panel now shows (tests read it)
  setStatus();
}

function renderBars(frame, hot) {
  const rows = new Map();
  for (const [n, ms] of frame.gpu || []) rows.set(n, { gpu: ms, cpu: null });
  for (const [n, ms] of frame.cpu || []) {
    const r = rows.get(n) || { gpu: null, cpu: null };
    r.cpu = ms;
    rows.set(n, r);
  }
  const key = [...rows.keys()].join("|");
  const box = $("bars");
  if (key !== state.barKey) {
    state.barKey = key;
    box.textContent = "";
    for (const n of rows.keys()) {
      const row = document.createElement("div");
      row.className = "bar-row";
      row.dataset.pass = n;
      row.innerHTML = '<span class="name"></span><span class="bars"><i class="gpu"></i>' +
        '<i class="cpu"></i></span><span class="num gpu"></span><span class="num cpu"></span>';
      row.querySelector(".name").textContent = n;
      box.appendChild(row);
    }
  }
  let max = 0;
  for (const r of rows.values()) max = Math.max(max, r.gpu || 0, r.cpu || 0);
  for (const row of box.children) {
    const r = rows.get(row.dataset.pass);
    const [g, c] = row.querySelectorAll("i");
    g.style.width = max > 0 ? (100 * (r.gpu || 0) / max) + "%" : "0";
    c.style.width = max > 0 ? (100 * (r.cpu || 0) / max) + "%" : "0";
    const [ng, nc] = row.querySelectorAll(".num");
    ng.textContent = fmt(r.gpu);
    nc.textContent = fmt(r.cpu);
    row.classList.toggle("outlier", hot.has("gpu:" + row.dataset.pass) || hot.has("cpu:" + row.dataset.pass));
    row.dataset.gpuMs = r.gpu === null ? "" : r.gpu;
    row.dataset.cpuMs = r.cpu === null ? "" : r.cpu;
  }
}

// The timeline scrolls: a new frame shifts the drawn columns left and draws only itself; the
// whole chart is redrawn only when its scale, clock or width changes.
const tl = { key: "", drawn: 0, width: 0 };
new ResizeObserver(([e]) => {
  tl.width = Math.round(e.contentRect.width);
  schedule();
}).observe($("timeline"));

function renderTimeline() {
  const cv = $("timeline");
  const w = tl.width || cv.width; // never read layout here: that would force a reflow
  if (cv.width !== w) cv.width = w;
  const ctx = cv.getContext("2d");
  const h = cv.height;
  const frames = state.frames;
  const useGpu = frames.some((f) => f.gpu);
  let vmax = 1;
  for (const f of frames) {
    const list = (useGpu ? f.gpu : f.cpu) || [];
    let sum = 0;
    for (const s of list) sum += s[1];
    vmax = Math.max(vmax, sum);
  }
  vmax = niceCeil(vmax);
  const colW = Math.max(1, Math.floor(w / HISTORY));
  const key = `${w}|${vmax}|${useGpu}`;
  let k = state.pushed - tl.drawn; // entries not drawn yet
  if (key !== tl.key || k >= frames.length) {
    tl.key = key;
    k = frames.length;
    ctx.clearRect(0, 0, w, h);
    drawAxes(vmax, w, h, useGpu);
  } else if (k > 0) {
    ctx.globalCompositeOperation = "copy"; // shift, not draw over: the chart is transparent
    ctx.drawImage(cv, -k * colW, 0);
    ctx.globalCompositeOperation = "source-over";
    ctx.clearRect(w - k * colW, 0, k * colW, h);
  }
  tl.drawn = state.pushed;
  for (let i = frames.length - k; i < frames.length; i++) {
    const f = frames[i];
    const x = w - (frames.length - i) * colW;
    if (f.gap) { // missed frames: a red marker where they would have been
      ctx.fillStyle = "rgba(255,80,70,0.55)";
      ctx.fillRect(x, 0, colW, h);
      continue;
    }
    let y = h;
    for (const [n, ms] of (useGpu ? f.gpu : f.cpu) || []) {
      const bh = (ms / vmax) * h;
      ctx.fillStyle = colorOf(n);
      ctx.fillRect(x, y - bh, Math.max(1, colW - 1), bh);
      y -= bh;
      if (!state.seen.has(n)) { state.seen.add(n); renderLegend(); }
    }
  }
  $("timeline-count").textContent = frames.filter((f) => !f.gap).length;
}

function drawAxes(vmax, w, h, useGpu) {
  const ax = $("timeline-axes");
  if (ax.width !== w) ax.width = w;
  ax.height = h;
  const ctx = ax.getContext("2d");
  ctx.clearRect(0, 0, w, h);
  ctx.fillStyle = "#80828c";
  ctx.fillText(vmax.toFixed(vmax < 1 ? 2 : 1) + " ms", 4, 12);
  const budget = h - (16.667 / vmax) * h;
  if (budget > 14) {
    ctx.strokeStyle = "rgba(255,255,255,0.25)";
    ctx.beginPath(); ctx.moveTo(0, budget); ctx.lineTo(w, budget); ctx.stroke();
    ctx.fillText("16.7 ms", 4, budget - 2);
  }
  $("timeline-clock").textContent = useGpu ? "GPU ms per pass, stacked" : "CPU ms per scope, stacked";
}

function renderLegend() {
  const legend = $("legend");
  legend.innerHTML = "";
  for (const n of state.seen) {
    const s = document.createElement("span");
    s.innerHTML = `<i style="background:${colorOf(n)}"></i>`;
    s.appendChild(document.createTextNode(n));
    legend.appendChild(s);
  }
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const k of [1, 2, 2.5, 5, 10]) if (v <= k * p) return k * p;
  return 10 * p;
}

function renderStats(rows) {
  const body = $("stats").tBodies[0];
  const key = rows.map((r) => r[0] + r[1]).join("|");
  if (key !== state.statsKey) {
    state.statsKey = key;
    body.textContent = "";
    for (const r of rows) {
      const tr = body.insertRow();
      tr.dataset.pass = state.names[r[1]];
      tr.dataset.clock = r[0];
      for (let i = 0; i < 8; i++) tr.insertCell();
      tr.cells[0].textContent = state.names[r[1]];
      tr.cells[1].textContent = r[0];
    }
  }
  rows.forEach((r, i) => {
    const [, , last, mean, median, max, delta, , outlier, hitch] = r;
    const tr = body.rows[i];
    const cells = [last, mean, median, max, delta, hitch];
    cells.forEach((v, j) => {
      const td = tr.cells[2 + j];
      td.textContent = j === 4 && v !== null ? (v >= 0 ? "+" : "") + v.toFixed(3) : fmt(v);
      td.className = v === null ? "na" : j === 4 ? (v > 0 ? "pos" : "neg") : "";
    });
    tr.classList.toggle("outlier", outlier === 1);
  });
}

function renderCull(cull) {
  const body = $("cull").tBodies[0];
  if (body.rows.length === 0) {
    for (const n of COUNTERS) {
      const tr = body.insertRow();
      tr.dataset.counter = n;
      const name = tr.insertCell();
      const slice = PIE.find(([p]) => p === n);
      if (slice) name.innerHTML = `<i class="swatch" style="background:${slice[1]}"></i> `;
      name.appendChild(document.createTextNode(n));
      tr.insertCell();
      tr.insertCell();
    }
  }
  $("cull-frame").textContent = cull ? `frame ${cull.frame}` : "no counters in this run";
  const v = cull ? cull.values : null;
  COUNTERS.forEach((n, i) => {
    const tr = body.rows[i];
    tr.cells[1].textContent = v ? thousands(v[i]) : "n/a";
    tr.cells[2].textContent = v && v[0] > 0 && i > 0 && i < 5 ? (100 * v[i] / v[0]).toFixed(1) + "%" : "";
    tr.dataset.value = v ? v[i] : "";
  });
  const cv = $("cull-pie");
  const pieKey = v ? v.join(",") : "";
  if (cv.dataset.key === pieKey) return; // counters change far less often than frames
  cv.dataset.key = pieKey;
  const ctx = cv.getContext("2d");
  ctx.clearRect(0, 0, cv.width, cv.height);
  if (!v) return;
  const vals = PIE.map(([n]) => v[COUNTERS.indexOf(n)]);
  const total = vals.reduce((a, b) => a + b, 0);
  if (total <= 0) return;
  let a = -Math.PI / 2;
  const r = cv.width / 2 - 4;
  vals.forEach((x, i) => {
    const a1 = a + (2 * Math.PI * x) / total;
    ctx.fillStyle = PIE[i][1];
    ctx.beginPath(); ctx.moveTo(r + 4, r + 4); ctx.arc(r + 4, r + 4, r, a, a1); ctx.fill();
    a = a1;
  });
}

const thousands = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

// session values: objects as "key value" pairs (nulls left out), lists comma-separated
function show(v) {
  if (Array.isArray(v)) return v.map(show).join(", ");
  if (v && typeof v === "object") {
    return Object.entries(v).filter(([, x]) => x !== null && x !== false)
      .map(([k, x]) => (x === true ? k : `${k} ${show(x)}`)).join("  \u00b7  ");
  }
  return String(v);
}

function renderSession() {
  const s = state.session || {};
  $("sample").textContent = s.sample || "";
  const body = $("session").tBodies[0];
  body.textContent = "";
  for (const [k, v] of Object.entries(s)) {
    if (k === "pid" || k === "started") continue;
    const tr = body.insertRow();
    tr.dataset.key = k;
    tr.insertCell().textContent = k;
    tr.insertCell().textContent = show(v);
  }
}

// -- log -------------------------------------------------------------------------------------
function onLog({ lines, reset }) {
  const box = $("log");
  if (reset) { state.log.clear(); box.textContent = ""; }
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  for (const l of lines) {
    let el = state.log.get(l.id);
    if (!el) {
      el = document.createElement("div");
      el.dataset.logId = l.id;
      el.className = l.level;
      el.innerHTML = '<span class="text"></span><span class="count"></span>';
      el.firstChild.textContent = l.text;
      box.appendChild(el);
      state.log.set(l.id, el);
    }
    el.lastChild.textContent = l.count > 1 ? ` \u00d7${l.count}` : "";
    el.dataset.count = l.count;
  }
  while (box.children.length > 200) state.log.delete(+box.firstChild.dataset.logId) && box.firstChild.remove();
  if (atBottom) box.scrollTop = box.scrollHeight;
}

// -- command line ----------------------------------------------------------------------------
const history = [];
let browse = 0;
function out(text, cls) {
  const box = $("cmd-out");
  const el = document.createElement("div");
  el.className = cls || "";
  el.textContent = text;
  box.appendChild(el);
  while (box.children.length > 200) box.firstChild.remove();
  box.scrollTop = box.scrollHeight;
}

$("cmd-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("cmd");
  const line = input.value.trim();
  input.value = "";
  if (!line) return;
  if (history[history.length - 1] !== line) history.push(line);
  browse = history.length;
  out("> " + line, "echo");
  try {
    const r = await fetch("/command", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ line }),
    });
    const j = await r.json().catch(() => ({ ok: false, text: `HTTP ${r.status}` }));
    if (j.text) out(j.text, j.ok ? "" : "err");
  } catch (err) {
    out("error: the sample is not reachable (" + err.message + ")", "err");
  }
});

$("cmd").addEventListener("keydown", async (e) => {
  if (e.key === "Tab") { // the same completion as the in-game console
    e.preventDefault();
    const r = await fetch("/complete", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ line: e.target.value }),
    }).catch(() => null);
    if (!r || !r.ok) return;
    const { line, candidates } = await r.json();
    e.target.value = line;
    if (candidates.length > 1) out(candidates.join("  "), "dim");
    return;
  }
  if (e.key !== "ArrowUp" && e.key !== "ArrowDown") return;
  e.preventDefault();
  browse = Math.min(Math.max(browse + (e.key === "ArrowUp" ? -1 : 1), 0), history.length);
  e.target.value = history[browse] || "";
});

$("pause").addEventListener("click", (e) => { // freeze the view; frames keep arriving
  state.paused = !state.paused;
  e.target.textContent = state.paused ? "resume" : "pause";
  e.target.classList.toggle("on", state.paused);
  if (!state.paused) schedule();
});

connect();
