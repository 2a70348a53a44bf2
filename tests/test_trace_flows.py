"""Flow arrows (``s``/``t``/``f``) at scale and out of order (engine/devtools/traces/traceload.py):
ends bound to their enclosing span however many spans earlier it began (vectorised, checked
against a brute-force search), steps joined as the phases say, in time order, and an arrow
whose end precedes its start drawn from start to end and counted in one note."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from engine.devtools.traces.traceload import bind_flow_ends, build_table, flow_chains, load_trace


def random_table(seed: int, n: int = 3000, lanes: int = 3):
    """Nested spans on a few lanes: stacks of random depth with gaps, some improper overlaps
    and zero-length spans (instants, which enclose nothing)."""
    rng = np.random.default_rng(seed)
    lane, start, end = [], [], []
    for ln in range(lanes):
        t = 0
        while len(start) < (ln + 1) * n // lanes:
            t += int(rng.integers(1, 50))
            stack = [(t, t + int(rng.integers(10, 5000)))]
            lane.append(ln), start.append(stack[0][0]), end.append(stack[0][1])
            for _ in range(int(rng.integers(0, 12))):
                a, b = stack[-1]
                s = int(rng.integers(a, b))
                e = s if rng.random() < 0.1 else int(rng.integers(s + 1, b + 1))
                if rng.random() < 0.05:
                    e = b + int(rng.integers(1, 100))  # overlaps its parent's end
                lane.append(ln), start.append(s), end.append(e)
                if e > s:
                    stack.append((s, e))
            t = max(b for _, b in stack)
    return build_table(lane, start, end, [0] * len(lane), ["x"], [f"l{i}" for i in range(lanes)])


def bind_reference(table, lane, t, next_ok):
    """Every span checked for every end: the deepest of its lane with start <= t < end, else
    (``next_ok``) the first of its lane to begin after t."""
    rel = np.asarray(t) - table.origin_ns
    end = table.start_ns + table.dur_ns
    out = []
    for ln, r, nx, ab in zip(lane.tolist(), rel.tolist(), next_ok.tolist(), t.tolist(),
                             strict=True):  # fmt: skip
        mine = table.lane == ln
        enc = np.flatnonzero(mine & (table.start_ns <= r) & (end > r))
        if ln >= 0 and len(enc):
            out.append((ab, ln, int(table.depth[enc].max())))
            continue
        later = np.flatnonzero(mine & (table.start_ns > r))
        if ln >= 0 and nx and len(later):
            i = later[0]
            out.append((int(table.start_ns[i]) + table.origin_ns, ln, int(table.depth[i])))
        else:
            out.append((ab, ln, -1))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_binding_equals_a_search_of_every_span(seed):
    table = random_table(seed)
    assert int(table.depth.max()) >= 6
    rng = np.random.default_rng(100 + seed)
    q = 4000
    lane = rng.integers(-1, 3, q)  # -1: a track with no span
    t = rng.integers(-100, int(table.end_ns.max()) + 100, q) + table.origin_ns
    t[:500] = table.start_ns[rng.integers(0, len(table), 500)] + table.origin_ns  # on starts
    t[500:1000] = table.end_ns[rng.integers(0, len(table), 500)] + table.origin_ns  # on ends
    next_ok = rng.random(q) < 0.5
    bt, bl, bd = bind_flow_ends(table, lane, t, next_ok)
    got = list(zip(bt.tolist(), bl.tolist(), bd.tolist(), strict=True))
    assert got == bind_reference(table, lane, t, next_ok)
    assert 0.2 < np.mean(bd >= 0) < 0.95  # both outcomes are common


def test_an_enclosing_span_begun_any_number_of_spans_earlier_is_bound():
    """One span around 20,000 others (more than the 4,096 the old search looked back)."""
    lane = [0] + [0] * 20_000 + [1]
    start = [0] + [10 + 10 * i for i in range(20_000)] + [5]
    end = [300_000] + [15 + 10 * i for i in range(20_000)] + [6]
    table = build_table(lane, start, end, [0] * len(lane), ["x"], ["a", "b"])
    t = np.array([200_008, 17, 299_999, 300_000])  # in the gap after span 19,999; ...
    bt, bl, bd = bind_flow_ends(table, np.zeros(4, np.int64), t, np.zeros(4, bool))
    assert bd.tolist() == [0, 0, 0, -1]  # the outer span, begun 20,000 spans earlier


def chains(steps):
    """``flow_chains`` of ``[(id, ts, ph)]`` in file order -> arrows as (ts, ts) pairs."""
    key = np.array([k for k, _, _ in steps])
    ts = np.array([t for _, t, _ in steps])
    ph = np.array(["stf".index(p) for _, _, p in steps])
    a, b, orphans = flow_chains(key, ts, ph, np.arange(len(steps)))
    return sorted(zip(ts[a].tolist(), ts[b].tolist(), strict=True)), orphans


@pytest.mark.parametrize(
    ("steps", "arrows", "orphans"),
    [
        ([(1, 10, "s"), (1, 20, "t"), (1, 30, "f")], [(10, 20), (20, 30)], 0),
        ([(1, 30, "f"), (1, 10, "s")], [(10, 30)], 0),  # file order does not matter
        ([(1, 10, "f"), (1, 20, "s")], [(20, 10)], 0),  # the end before the start: backwards
        ([(1, 5, "t"), (1, 10, "s"), (1, 20, "f")], [(5, 20), (10, 5)], 0),  # a step before
        ([(1, 0, "s"), (1, 5, "f"), (1, 8, "f"), (1, 20, "s")], [(0, 5), (20, 8)], 0),  # reuse
        ([(1, 0, "s"), (1, 5, "f"), (1, 9, "t")], [(0, 5)], 1),  # a step after the end
        ([(1, 5, "t"), (1, 6, "f")], [], 2),  # no start at all
        ([(1, 0, "s"), (1, 5, "f"), (1, 6, "f")], [(0, 5)], 1),  # a second end
        ([(1, 0, "s"), (2, 1, "s"), (1, 2, "f"), (2, 3, "f")], [(0, 2), (1, 3)], 0),  # two ids
        ([(1, 0, "s"), (1, 0, "f")], [(0, 0)], 0),  # one instant: s first
    ],
)
def test_steps_join_as_the_phases_say(steps, arrows, orphans):
    assert chains(steps) == (sorted(arrows), orphans)


def test_a_trace_with_far_enclosing_spans_and_backward_flows(tmp_path):
    """A Session span around 5,000 frames; flows from a pass to the GPU, between frames
    (bound to Session, begun 10,000 spans earlier) and two whose end was stamped before
    their start: drawn from start to end, and one note counts them."""
    ev = [{"ph": "X", "name": "Session", "pid": 1, "tid": 1, "ts": 0, "dur": 100_000}]
    for f in range(5000):
        t = 1 + f * 20
        ev += [{"ph": "X", "name": "Frame", "pid": 1, "tid": 1, "ts": t, "dur": 10},
               {"ph": "X", "name": "Gpu", "pid": 1, "tid": 2, "ts": t + 12, "dur": 5}]  # fmt: skip
    flows = [
        ("s", 1, 1, 99_993.5, 1), ("f", 1, 1, 99_998, 1),  # between frames: Session only
        ("s", 2, 1, 3, 1), ("f", 2, 2, 14, 1),  # frame 0 -> its GPU span (forward)
        ("s", 3, 1, 50_003, 1), ("f", 3, 2, 49_994, 1),  # a GPU clock ahead: f before s
        ("f", 4, 2, 15, 1), ("s", 4, 1, 22, 1),  # written f first, and earlier
    ]  # fmt: skip
    for ph, ident, tid, ts, pid in flows:
        e = {"ph": ph, "name": "flow", "cat": "c", "id": ident, "pid": pid, "tid": tid, "ts": ts}
        if ph == "f":
            e["bp"] = "e"
        ev.append(e)
    random.Random(1).shuffle(ev)  # any file order: flows are read in time order
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    t = load_trace(p)
    f = t.flows
    rows = sorted(zip(f.t0.tolist(), f.lane0.tolist(), f.depth0.tolist(), f.t1.tolist(),
                      f.lane1.tolist(), f.depth1.tolist(), strict=True))  # fmt: skip
    assert rows == [
        (3_000, 0, 1, 14_000, 1, 0),  # Frame 0 (depth 1) -> Gpu 0
        (22_000, 0, 1, 15_000, 1, 0),  # s in Frame 1 -> f in Gpu 0: back in time
        (50_003_000, 0, 1, 49_994_000, 1, 0),  # Frame 2500 -> Gpu 2499: back in time
        (99_993_500, 0, 0, 99_998_000, 0, 0),  # Session, 10,000 spans earlier, to itself
    ]
    assert t.notes == [
        "2 flow arrow(s) end before they start (clocks of different threads?): drawn from "
        "start to end as written, pointing back in time"
    ]
