// Lantern portal page: reads the Server-Sent Events of /events (see engine/tools/portal/protocol.py)
// and draws them with the DOM and two canvases. No library, no build step.
"use strict";

const HISTORY = 300; // timeline columns (frames and gap markers)
const BAR_WINDOW = 30; // the bar chart shows each pass's mean over this many frames
const SCALE_PCT = 0.95; // the timeline's lanes scale to this percentile of the frame totals ...
const SCALE_HEADROOM = 1.25; // ... times this; taller frames are clipped and marked
const LANE_GAP = 18; // px between the GPU and the CPU lane (the CPU lane's label)
// the cull counter names, the cull pie's classes and colours and the pass palette come from
// the session's "page" (engine/portal/protocol.py page_style: the engine's and HUD's own tables)
const style = () => (state.session && state.session.page) || { counters: [], cull_classes: [], palette: ["#aaaaaa"] };
const STALE_MS = 2000;
const RETRY_MS = [1000, 2000, 4000, 8000, 15000, 30000]; // after a refused event stream

const $ = (id) => document.getElementById(id);
const state = {
  session: null, names: [], frames: [], lastSeq: null, missed: 0, latest: null,
  log: new Map(), dirty: false, lastFrameAt: 0, connected: false, barKey: "", statsKey: "",
  pushed: 0, seen: new Set(), shown: { frames: [], latest: null }, selected: null,
  busy: null, retries: 0,
};

// the token of a non-loopback portal came in the URL; the server set it as a cookie, so the
// address bar (and anyone looking at it) need not show it
if (location.search.includes("token=")) history.replaceState(null, "", location.pathname);

function resetSession(session) {
  Object.assign(state, { session, names: [], frames: [], lastSeq: null, missed: 0, latest: null,
    barKey: "", statsKey: "", seen: new Set(), shown: { frames: [], latest: null },
    selected: null });
  tl.key = "";
  $("frame-panel").hidden = true;
  renderLegend();
  state.log.clear();
  $("log").textContent = "";
  for (const id of ["frame-ms", "fps", "frame-index", "seq"]) $(id).textContent = "-";
  $("missed").textContent = "0";
  document.body.dataset.seq = -1; // nothing of the new session rendered yet
  renderSession();
}

// -- stream ----------------------------------------------------------------------------------
// EventSource retries by itself after a network error, but never after an HTTP error (a 503
// when all event-stream slots are taken): then the page asks why and retries with backoff.
function connect() {
  const es = new EventSource("/events");
  es.onopen = () => { state.connected = true; state.busy = null; state.retries = 0; setStatus(); };
  es.onerror = () => {
    state.connected = false;
    if (es.readyState === EventSource.CLOSED) refused(es);
    setStatus();
  };
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

async function refused(es) {
  es.close();
  const wait = RETRY_MS[Math.min(state.retries, RETRY_MS.length - 1)] * (0.8 + 0.4 * Math.random());
  state.retries++;
  let why = "disconnected";
  try { // the session says how many event streams are open
    const r = await fetch("/session.json");
    if (r.status === 401) why = "refused: this run has another token; open the URL it printed";
    else if (!r.ok) why = `refused (HTTP ${r.status}: ${(await r.text()).trim()})`;
    else {
      const p = (await r.json()).portal;
      if (p && p.clients >= p.max_clients) why = `too many clients (${p.clients} of ${p.max_clients} open)`;
    }
  } catch (err) { /* the sample is gone: "disconnected" */ }
  state.busy = { why, until: performance.now() + wait };
  setStatus();
  setTimeout(connect, wait);
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
  push({ seq: msg.seq, frame: msg.frame, wall: msg.wall_ms, gpu: spans(msg.gpu), cpu: spans(msg.cpu) });
  schedule();
}

// scopes as [name, ms, start ms from the clock's first scope]; totals for the timeline
function spans(list) {
  if (!list || list.length === 0) return null;
  const t0 = list[0][1];
  const out = list.map(([id, b, e]) => [state.names[id], (e - b) / 1e6, (b - t0) / 1e6]);
  out.total = out.reduce((a, s) => a + s[1], 0);
  return out;
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
const colorOf = (name) => {
  const palette = style().palette;
  return palette[Math.max(0, state.names.indexOf(name)) % palette.length];
};

function setStatus() {
  const stale = state.connected && performance.now() - state.lastFrameAt > STALE_MS;
  let cls, text;
  if (state.busy && !state.connected) {
    const s = Math.max(0, Math.ceil((state.busy.until - performance.now()) / 1000));
    cls = state.busy.why.startsWith("too many") ? "busy" : "disconnected";
    text = `${state.busy.why}; retrying in ${s} s`;
  } else {
    [cls, text] = !state.connected ? ["disconnected", "disconnected, reconnecting"]
      : stale ? ["stale", "connected, no frames"] : ["live", "live"];
  }
  const el = $("status");
  el.className = "status " + cls;
  el.textContent = text;
  document.body.dataset.state = cls;
}
setInterval(setStatus, 500);

function render() {
  const m = state.latest;
  if (!m) return;
  const frameStat = (m.stats || []).find((r) => r[0] === "wall");
  const meanWall = frameStat ? frameStat[3] : m.wall_ms;
  $("frame-ms").textContent = fmt(m.wall_ms, 2);
  $("fps").textContent = meanWall ? (1000 / meanWall).toFixed(1) : "-";
  $("frame-index").textContent = m.frame;
  $("seq").textContent = m.seq;
  $("missed").textContent = state.missed;
  const timed = state.frames.some((f) => f.gpu || f.cpu);
  document.body.dataset.profiling = timed ? "on" : "off";
  $("bars-hint").hidden = timed;
  const hot = new Set((m.stats || []).filter((r) => r[8] === 1)
    .map((r) => r[0] + ":" + state.names[r[1]])); // outliers: "clock:name"
  renderBars(hot);
  renderTimeline(timed);
  renderStats(m.stats || [], timed);
  renderCull(m.cull);
  renderCounters(m.counters || []);
  state.shown = { frames: state.frames.slice(), latest: m }; // what pause + export keep
  document.body.dataset.seq = m.seq; // the frame every panel now shows (tests read it)
  setStatus();
}

// Each pass's mean over the newest BAR_WINDOW frames that have it: steady, not last-frame jitter.
function renderBars(hot) {
  const recent = [];
  for (let i = state.frames.length - 1; i >= 0 && recent.length < BAR_WINDOW; i--) {
    const f = state.frames[i];
    if (!f.gap && (f.gpu || f.cpu)) recent.push(f);
  }
  recent.reverse();
  const rows = new Map(); // name -> readings per clock, in the newest frame's order
  const row = (n) => rows.get(n) || rows.set(n, { gpu: [], cpu: [] }).get(n);
  const newest = recent[recent.length - 1];
  if (newest) for (const [n] of [...(newest.gpu || []), ...(newest.cpu || [])]) row(n);
  for (const f of recent) {
    for (const [n, ms] of f.gpu || []) row(n).gpu.push(ms);
    for (const [n, ms] of f.cpu || []) row(n).cpu.push(ms);
  }
  const box = $("bars");
  box.dataset.seqs = recent.map((f) => f.seq).join(","); // the frames averaged (tests read it)
  $("bar-count").textContent = recent.length;
  const key = [...rows.keys()].join("|");
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
  const mean = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : null);
  const stat = new Map();
  let max = 0;
  for (const [n, r] of rows) {
    const s = { gpu: mean(r.gpu), cpu: mean(r.cpu), r };
    stat.set(n, s);
    max = Math.max(max, s.gpu || 0, s.cpu || 0);
  }
  for (const row of box.children) {
    const s = stat.get(row.dataset.pass);
    const [g, c] = row.querySelectorAll("i");
    g.style.width = max > 0 ? (100 * (s.gpu || 0) / max) + "%" : "0";
    c.style.width = max > 0 ? (100 * (s.cpu || 0) / max) + "%" : "0";
    const [ng, nc] = row.querySelectorAll(".num");
    ng.textContent = fmt(s.gpu);
    nc.textContent = fmt(s.cpu);
    const range = (a) => (a.length ? `${fmt(Math.min(...a))}..${fmt(Math.max(...a))}` : "n/a");
    row.title = `${row.dataset.pass}: mean of ${Math.max(s.r.gpu.length, s.r.cpu.length)} frames\n` +
      `GPU ${fmt(s.gpu)} ms (${range(s.r.gpu)})\nCPU ${fmt(s.cpu)} ms (${range(s.r.cpu)})`;
    row.classList.toggle("outlier", hot.has("gpu:" + row.dataset.pass) || hot.has("cpu:" + row.dataset.pass));
    row.dataset.gpuMs = s.gpu === null ? "" : s.gpu;
    row.dataset.cpuMs = s.cpu === null ? "" : s.cpu;
  }
}

// The timeline: two lanes (GPU above, CPU below) of stacked per-pass columns, one per frame.
// Each lane scales to SCALE_HEADROOM x the SCALE_PCT percentile of its frame totals in view
// (rounded up to a nice number), so one spike does not flatten the rest; a taller column is
// clipped and marked. It scrolls: a new frame shifts the drawn columns left and draws only
// itself; the whole chart is redrawn only when a scale or the width changes.
const tl = { key: "", drawn: 0, width: 0, colW: 1, lanes: null };
new ResizeObserver(([e]) => {
  tl.width = Math.round(e.contentRect.width);
  schedule();
}).observe($("timeline"));

function percentile(values, p) { // the "lower" percentile: an element of the data
  if (values.length === 0) return 0;
  const v = values.slice().sort((a, b) => a - b);
  return v[Math.floor(p * (v.length - 1))];
}

function laneScale(frames, clock) {
  const totals = frames.filter((f) => f[clock]).map((f) => f[clock].total);
  if (totals.length === 0) return null;
  return niceCeil(Math.max(percentile(totals, SCALE_PCT) * SCALE_HEADROOM, 0.01));
}

function renderTimeline(timed) {
  const cv = $("timeline");
  const w = tl.width || cv.width; // never read layout here: that would force a reflow
  if (cv.width !== w) cv.width = w;
  const ctx = cv.getContext("2d");
  const h = cv.height;
  const frames = state.frames;
  const lh = Math.floor((h - LANE_GAP) / 2);
  const lanes = [
    { clock: "gpu", top: 0, h: lh, vmax: laneScale(frames, "gpu") },
    { clock: "cpu", top: lh + LANE_GAP, h: lh, vmax: laneScale(frames, "cpu") },
  ];
  const colW = Math.max(1, Math.floor(w / HISTORY));
  const key = `${w}|${lanes[0].vmax}|${lanes[1].vmax}`;
  let k = state.pushed - tl.drawn; // entries not drawn yet
  if (key !== tl.key || k >= frames.length) {
    tl.key = key;
    k = frames.length;
    ctx.clearRect(0, 0, w, h);
    drawAxes(lanes, w, h, timed);
  } else if (k > 0) {
    ctx.globalCompositeOperation = "copy"; // shift, not draw over: the chart is transparent
    ctx.drawImage(cv, -k * colW, 0);
    ctx.globalCompositeOperation = "source-over";
    ctx.clearRect(w - k * colW, 0, k * colW, h);
  }
  Object.assign(tl, { drawn: state.pushed, colW, lanes });
  for (let i = frames.length - k; i < frames.length; i++) {
    const f = frames[i];
    const x = w - (frames.length - i) * colW;
    if (f.gap) { // missed frames: a red marker where they would have been
      ctx.fillStyle = "rgba(255,80,70,0.55)";
      ctx.fillRect(x, 0, colW, h);
      continue;
    }
    for (const lane of lanes) drawColumn(ctx, lane, f, x, colW);
  }
  const shown = frames.filter((f) => !f.gap);
  const clipped = (clock, vmax) => shown.filter((f) => f[clock] && f[clock].total > vmax).length;
  Object.assign(cv.dataset, {
    first: shown.length ? shown[0].seq : "", last: shown.length ? shown[shown.length - 1].seq : "",
    gpuScale: lanes[0].vmax ?? "", cpuScale: lanes[1].vmax ?? "",
    gpuClipped: lanes[0].vmax ? clipped("gpu", lanes[0].vmax) : 0,
    cpuClipped: lanes[1].vmax ? clipped("cpu", lanes[1].vmax) : 0,
  });
  $("timeline-count").textContent = shown.length;
}

function drawColumn(ctx, lane, f, x, colW) {
  const list = f[lane.clock];
  if (!list || !lane.vmax) return;
  const bottom = lane.top + lane.h;
  let y = bottom;
  for (const [n, ms] of list) {
    const bh = Math.min((ms / lane.vmax) * lane.h, y - lane.top); // clipped at the lane's top
    ctx.fillStyle = colorOf(n);
    ctx.fillRect(x, y - bh, Math.max(1, colW - 1), bh);
    y -= bh;
    if (!state.seen.has(n)) { state.seen.add(n); renderLegend(); }
  }
  if (list.total > lane.vmax) { // clipped: a red cap says "taller than the scale"
    ctx.fillStyle = "#ff5046";
    ctx.fillRect(x, lane.top, Math.max(2, colW), 4);
  }
}

function drawAxes(lanes, w, h, timed) {
  const ax = $("timeline-axes");
  if (ax.width !== w) ax.width = w;
  ax.height = h;
  const ctx = ax.getContext("2d");
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px ui-monospace, monospace";
  for (const lane of lanes) {
    const label = lane.clock.toUpperCase();
    ctx.fillStyle = "#80828c";
    if (!lane.vmax) {
      const hint = timed ? `${label}: no scopes (profile ${lane.clock} on)`
        : `${label}: profiling is off, type: profile ${lane.clock} on`;
      ctx.fillText(hint, 6, lane.top + lane.h / 2);
      continue;
    }
    const title = `${label}  ${lane.vmax.toFixed(lane.vmax < 1 ? 2 : 1)} ms`;
    ctx.fillText(title, 4, lane.top + 12);
    const budget = lane.top + lane.h - (16.667 / lane.vmax) * lane.h;
    if (budget > lane.top + 4) { // its label beside the lane's, clear of the newest frames
      ctx.strokeStyle = "rgba(255,255,255,0.25)";
      ctx.beginPath(); ctx.moveTo(0, budget); ctx.lineTo(w, budget); ctx.stroke();
      ctx.fillText("16.7 ms (60 FPS)", 4 + ctx.measureText(title).width + 24, Math.max(budget - 2, lane.top + 12));
    }
  }
  ctx.strokeStyle = "rgba(255,255,255,0.12)";
  ctx.beginPath(); ctx.moveTo(0, lanes[1].top - LANE_GAP / 2); ctx.lineTo(w, lanes[1].top - LANE_GAP / 2); ctx.stroke();
}

// the frame under the pointer: columns are right-aligned, newest at the right edge
function frameAt(clientX) {
  const cv = $("timeline");
  const r = cv.getBoundingClientRect();
  const x = (clientX - r.left) * (cv.width / r.width);
  const frames = state.shown.frames;
  const i = frames.length - 1 - Math.floor((cv.width - x) / tl.colW);
  const f = frames[i];
  return f && !f.gap ? f : null;
}

function describe(f) {
  const top = (list) => (list || []).slice().sort((a, b) => b[1] - a[1]).slice(0, 3)
    .map(([n, ms]) => `  ${n} ${fmt(ms)}`).join("\n");
  return [`frame #${f.frame} (seq ${f.seq})  wall ${fmt(f.wall, 2)} ms`,
    `GPU ${f.gpu ? fmt(f.gpu.total) + " ms" : "n/a"}`, top(f.gpu),
    `CPU ${f.cpu ? fmt(f.cpu.total) + " ms" : "n/a"}`, top(f.cpu)]
    .filter((s) => s).join("\n");
}

$("timeline").addEventListener("mousemove", (e) => {
  const f = frameAt(e.clientX);
  const tip = $("tooltip");
  if (!f) { tip.hidden = true; return; }
  tip.textContent = describe(f);
  tip.dataset.seq = f.seq;
  tip.hidden = false;
  const box = $("chart").getBoundingClientRect();
  const x = e.clientX - box.left;
  tip.style.left = (x > box.width / 2 ? x - tip.offsetWidth - 12 : x + 12) + "px";
});
$("timeline").addEventListener("mouseleave", () => { $("tooltip").hidden = true; });
$("timeline").addEventListener("click", (e) => {
  const f = frameAt(e.clientX);
  if (f) showFrame(f);
});
$("frame-close").addEventListener("click", () => { $("frame-panel").hidden = true; state.selected = null; });

// one frame's spans, GPU then CPU, each on its own clock's time axis (start from its first scope)
function showFrame(f) {
  state.selected = f;
  $("frame-panel").hidden = false;
  $("frame-panel").dataset.seq = f.seq;
  $("frame-seq").textContent = `#${f.frame} (seq ${f.seq})`;
  $("frame-summary").textContent = `wall ${fmt(f.wall, 2)} ms; GPU ${f.gpu ? fmt(f.gpu.total) : "n/a"} ms;` +
    ` CPU ${f.cpu ? fmt(f.cpu.total) : "n/a"} ms; bars: start and length on each clock`;
  const box = $("spans");
  box.textContent = "";
  const head = document.createElement("div");
  head.className = "span-row head";
  head.innerHTML = "<span>clock</span><span>scope</span><span></span><span class='num'>start ms</span><span class='num'>ms</span>";
  box.appendChild(head);
  for (const clock of ["gpu", "cpu"]) {
    const list = f[clock] || [];
    const end = Math.max(...list.map(([, ms, t]) => t + ms), 1e-9);
    for (const [n, ms, t] of list) {
      const row = document.createElement("div");
      row.className = "span-row";
      Object.assign(row.dataset, { clock, name: n, ms, start: t });
      row.innerHTML = "<span></span><span class='name'></span><span class='track'><i></i></span>" +
        "<span class='num'></span><span class='num'></span>";
      row.children[0].textContent = clock.toUpperCase();
      row.children[1].textContent = n;
      const bar = row.querySelector("i");
      bar.style.left = (100 * t / end) + "%";
      bar.style.width = (100 * ms / end) + "%";
      bar.style.background = colorOf(n);
      row.children[3].textContent = fmt(t);
      row.children[4].textContent = fmt(ms);
      row.title = `${n}: ${fmt(ms)} ms from ${fmt(t)} ms`;
      box.appendChild(row);
    }
  }
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

// A stats row's name: a name id, or a draw's path as the ids of [pass, draw].
function nameOf(id) {
  return Array.isArray(id) ? id.map((i) => state.names[i]).join(" > ") : state.names[id];
}

function renderStats(rows, timed) {
  $("stats-hint").hidden = timed || rows.some((r) => r[0] !== "wall");
  const body = $("stats").tBodies[0];
  const key = rows.map((r) => r[0] + nameOf(r[1])).join("|");
  if (key !== state.statsKey) {
    state.statsKey = key;
    body.textContent = "";
    for (const r of rows) {
      const tr = body.insertRow();
      tr.dataset.pass = nameOf(r[1]);
      tr.dataset.clock = r[0];
      for (let i = 0; i < 8; i++) tr.insertCell();
      tr.cells[0].textContent = nameOf(r[1]);
      tr.cells[1].textContent = r[0];
    }
  }
  rows.forEach((r, i) => {
    const [, , last, mean, median, max, delta, , outlier, hitch] = r;
    const tr = body.rows[i];
    [last, mean, median, max, delta, hitch].forEach((v, j) => {
      const td = tr.cells[2 + j];
      if (j === 5) { // hitch: blank when there was none
        td.textContent = v === null ? "" : fmt(v);
        td.className = v === null ? "na" : "hitch";
        return;
      }
      td.textContent = j === 4 && v !== null ? (v >= 0 ? "+" : "") + v.toFixed(3) : fmt(v);
      // delta: coloured only when flagged significant (beyond 3 MADs), as the HUD does
      td.className = v === null ? "na" : j !== 4 ? "" : outlier !== 1 ? "noise" : v > 0 ? "pos" : "neg";
    });
    tr.classList.toggle("outlier", outlier === 1);
  });
}

// Every counter block besides the culler's (a technique's lights, cascades, particles): one
// small table each, its counters under the names its WGSL gives them.
function renderCounters(blocks) {
  const box = $("counter-blocks");
  const others = blocks.filter((b) => b.block !== "cull");
  const key = others.map((b) => b.block + ":" + b.frame).join("|");
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.textContent = "";
  for (const b of others) {
    const h = document.createElement("h3");
    h.textContent = `${b.block} frame ${b.frame}`;
    const t = document.createElement("table");
    t.className = "counters";
    t.dataset.block = b.block;
    b.names.forEach((id, i) => {
      const tr = t.insertRow();
      tr.insertCell().textContent = state.names[id];
      tr.insertCell().textContent = thousands(b.values[i]);
    });
    box.append(h, t);
  }
}

function renderCull(cull) {
  const body = $("cull").tBodies[0];
  const { counters, cull_classes: pie } = style();
  if (body.dataset.key !== counters.join(",")) { // (a new session may bring other names)
    body.dataset.key = counters.join(",");
    body.textContent = "";
    for (const n of counters) {
      const tr = body.insertRow();
      tr.dataset.counter = n;
      const name = tr.insertCell();
      const slice = pie.find(([p]) => p === n);
      if (slice) name.innerHTML = `<i class="swatch" style="background:${slice[1]}"></i> `;
      name.appendChild(document.createTextNode(n));
      tr.insertCell();
      tr.insertCell();
    }
  }
  $("cull-frame").textContent = cull ? `frame ${cull.frame}` : "no counters in this run";
  const v = cull ? cull.values : null;
  counters.forEach((n, i) => {
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
  const vals = pie.map(([n]) => v[counters.indexOf(n)]);
  const total = vals.reduce((a, b) => a + b, 0);
  if (total <= 0) return;
  let a = -Math.PI / 2;
  const r = cv.width / 2 - 4;
  vals.forEach((x, i) => {
    const a1 = a + (2 * Math.PI * x) / total;
    ctx.fillStyle = pie[i][1];
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
  renderMemory(s.gpu_memory); // the memory tool's fact: its own panel
  for (const [k, v] of Object.entries(s)) {
    if (k === "pid" || k === "started" || k === "gpu_memory" || k === "page") continue;
    const tr = body.insertRow();
    tr.dataset.key = k;
    const key = tr.insertCell();
    key.textContent = key.title = k; // long keys are cut with an ellipsis: the title has it
    tr.insertCell().textContent = show(v);
  }
}

// -- GPU memory (the memory tool's session fact, resent when wgpu's object counts change) ----
const mib = (n) => (n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`);

function renderMemory(m) {
  $("memory-panel").hidden = !m;
  if (!m) return;
  const t = m.totals || {};
  const over = m.budget != null && t.total > m.budget;
  $("memory-total").textContent = `${mib(t.total || 0)}` +
    (m.budget != null ? ` of ${mib(m.budget)}${over ? " OVER" : ""}` : "") +
    ` in ${(m.rows || []).length} objects`;
  const body = $("memory").tBodies[0];
  body.textContent = "";
  for (const [k, v] of Object.entries(t)) {
    if (k === "total" || !v) continue;
    const tr = body.insertRow();
    tr.insertCell().textContent = k;
    tr.insertCell().textContent = mib(v);
  }
  for (const r of (m.rows || []).slice(0, 8)) { // the largest
    const tr = body.insertRow();
    tr.insertCell().textContent = `${r.owner}: ${r.name} ${r.size} ${r.format}`;
    tr.insertCell().textContent = mib(r.bytes);
  }
  if (over) body.rows[0] && body.rows[0].classList.add("over");
  const c = $("memory-chart"), g = c.getContext("2d"), h = m.history || [];
  g.clearRect(0, 0, c.width, c.height);
  if (h.length < 2) return;
  // each series over its own min..max (a flat one mid-height): a rise shows whatever its size
  const y = (k) => {
    const v = h.map((p) => p[k]), lo = Math.min(...v), hi = Math.max(...v);
    return (p) => (hi > lo ? c.height - 3 - ((p[k] - lo) / (hi - lo)) * (c.height - 6) : c.height / 2);
  };
  const x = (i) => (i / (h.length - 1)) * (c.width - 2) + 1, yB = y(1), yN = y(2);
  g.strokeStyle = "#6cf"; g.beginPath();
  h.forEach((p, i) => g[i ? "lineTo" : "moveTo"](x(i), yB(p)));
  g.stroke();
  g.fillStyle = "#fc6";
  h.forEach((p, i) => g.fillRect(x(i) - 1, yN(p) - 1, 2, 2));
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
const SCROLLBACK = 500; // output lines kept: scroll up for them
const cmdHistory = [];
let browse = 0;
function out(text, cls) {
  const box = $("cmd-out");
  for (const line of String(text).split("\n")) {
    const el = document.createElement("div");
    el.className = cls || "";
    el.textContent = line;
    box.appendChild(el);
  }
  while (box.children.length > SCROLLBACK) box.firstChild.remove();
  box.scrollTop = box.scrollHeight;
}

$("cmd-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("cmd");
  const line = input.value.trim();
  input.value = "";
  if (!line) return;
  if (cmdHistory[cmdHistory.length - 1] !== line) cmdHistory.push(line);
  browse = cmdHistory.length;
  out("> " + line, "echo");
  try {
    const r = await fetch("/command", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ line }),
    });
    const j = await r.json().catch(async () => ({ ok: false, text: `HTTP ${r.status}: ${(await r.text().catch(() => "")).trim()}` }));
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
  browse = Math.min(Math.max(browse + (e.key === "ArrowUp" ? -1 : 1), 0), cmdHistory.length);
  e.target.value = cmdHistory[browse] || "";
});

$("pause").addEventListener("click", (e) => { // freeze the view; frames keep arriving
  state.paused = !state.paused;
  e.target.textContent = state.paused ? "resume" : "pause";
  e.target.classList.toggle("on", state.paused);
  if (!state.paused) schedule();
});

// -- export: what the page shows (paused: the frozen view) as a JSON download ------------------
function exportShown() {
  const { frames, latest } = state.shown;
  const named = (list) => list && list.map(([name, ms, start]) => ({ name, ms, start_ms: start }));
  return {
    lantern_portal_export: 1,
    exported: new Date().toISOString(),
    paused: !!state.paused,
    session: state.session,
    frames: frames.map((f) => (f.gap ? { missed: f.gap }
      : { seq: f.seq, frame: f.frame, wall_ms: f.wall, gpu: named(f.gpu), cpu: named(f.cpu) })),
    stats: latest ? (latest.stats || []).map((r) => ({
      clock: r[0], name: nameOf(r[1]), last_ms: r[2], mean_ms: r[3], median_ms: r[4],
      max_ms: r[5], delta_ms: r[6], mad_ms: r[7], outlier: r[8] === 1, hitch_ms: r[9],
    })) : [],
    cull: latest ? latest.cull : null,
  };
}

$("export").addEventListener("click", () => {
  const data = exportShown();
  const text = JSON.stringify(data, null, 1);
  const last = data.frames.filter((f) => f.seq !== undefined).pop();
  const name = `lantern-${(state.session && state.session.sample) || "run"}-${last ? last.seq : 0}.json`;
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  window.lanternLastExport = text; // tests read it
  document.body.dataset.exported = name;
});

connect();
