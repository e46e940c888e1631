"""Helper of bench/campaign/demo_oracle.sh.

  demo_oracle.py plan CAMPAIGN_JSON NET LINKS
      one line per measured link of LINKS (campaign labels, comma-separated):
      label|injectd address|link spec|delay in us (the campaign's amplitude
      for the link, held within [2 ms, 15 ms]).
  demo_oracle.py load HOST PORT RATE SECONDS SEED CONNECTIONS OUT_CSV
      the oracle's load: open-loop Poisson arrivals at RATE/s for SECONDS,
      the demo's mix (/view /auth /bid /browse, 1:1:1:1), over CONNECTIONS
      keep-alive HTTP/1.1 connections; one line per answered request:
      wall-clock send ns, type, response ns (from when the client was ready
      to send it, a wait for a free connection included, to the whole
      answer, as the campaign times it), and the entry tier's X-Queue-Ns,
      X-Service-Time-Ns and X-Downstream-Ns. Bounded in count
      (RATE * SECONDS) and time (SECONDS + 5 s).
  demo_oracle.py report WORK CONDITION
      the oracle from the stored samples and window times, and the table of
      the campaign's gradients against it and the structural truth.
"""
import json
import math
import os
import statistics
import sys

GUARD_START_NS = 500_000_000  # the injection starting, requests in flight
GUARD_END_NS = 200_000_000
TYPES = ("/view", "/auth", "/bid", "/browse")


def plan(campaign_json, net, links):
    j = json.load(open(campaign_json))
    wanted = links.split(",")
    order = ["client", "web", "app", "db"]  # the testbed's host order
    by_label = {link["label"]: link for link in j.get("links", []) if link.get("measurable")}
    for label in wanted:
        link = by_label.get(label)
        if link is None:
            print(f"demo-oracle: {label} not measured by the campaign", file=sys.stderr)
            continue
        address = f"{net}.{order.index(link['node']) + 1}"
        amp = link.get("amplitude_ns") or 5e6
        delay_us = int(round(min(15e6, max(2e6, amp)) / 1e3))
        print(f"{label}|{address}|{link['spec']}|{delay_us}")


def load(host, port, rate, seconds, seed, connections, out_path):
    import asyncio
    import random
    import signal
    import time

    # Stopped by SIGTERM once the windows are over: the samples are written.
    signal.signal(signal.SIGTERM, signal.default_int_handler)

    rng = random.Random(int(seed))
    rate, seconds, connections = float(rate), float(seconds), int(connections)
    n_max = int(rate * seconds) + 1
    results = []

    def header(head, name):
        for line in head.split(b"\r\n"):
            if line.lower().startswith(name):
                return int(line.split(b":")[1])
        return -1

    async def main():
        free = asyncio.Queue()
        for _ in range(connections):
            free.put_nowait(await asyncio.open_connection(host, int(port)))

        async def one(path, ready_mono, ready_wall):
            conn = await free.get()
            reader, writer = conn
            try:
                writer.write(f"GET {path} HTTP/1.1\r\nHost: web\r\n\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                length = header(head, b"content-length:")
                if length > 0:
                    await reader.readexactly(length)
                done = time.monotonic_ns()
                if head.startswith(b"HTTP/1.1 200"):
                    results.append((ready_wall, path, done - ready_mono,
                                    header(head, b"x-queue-ns:"),
                                    header(head, b"x-service-time-ns:"),
                                    header(head, b"x-downstream-ns:")))
                free.put_nowait(conn)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                writer.close()
                free.put_nowait(await asyncio.open_connection(host, int(port)))

        start = time.monotonic()
        t = 0.0
        tasks = []
        for _ in range(n_max):
            t += rng.expovariate(rate)
            if t > seconds:
                break
            delay = start + t - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            path = TYPES[rng.randrange(len(TYPES))]
            tasks.append(asyncio.ensure_future(one(path, time.monotonic_ns(), time.time_ns())))
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    finally:
        with open(out_path, "w") as f:
            for row in results:
                f.write(",".join(str(x) for x in row) + "\n")


def probe(host, port, path, rate, seconds, out_path):
    """One keep-alive connection over the link itself, from the host on its
    caller's side: a GET every 1/RATE s (the next one when the answer came
    later), timed from the send to the whole answer. What a request crossing
    the link once each way actually waits, whatever the injector reports."""
    import signal
    import socket
    import time

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    period = 1.0 / float(rate)
    end = time.monotonic() + float(seconds)
    rows = []
    req = f"GET {path} HTTP/1.1\r\nHost: probe\r\n\r\n".encode()
    try:
        conn = socket.create_connection((host, int(port)), 2)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(2)
        f = conn.makefile("rb")
        nxt = time.monotonic()
        while time.monotonic() < end:
            wall, t0 = time.time_ns(), time.monotonic_ns()
            conn.sendall(req)
            length = 0
            status = f.readline()
            heads = {}
            while True:
                line = f.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                heads[name.strip().lower()] = value.strip()
            length = int(heads.get(b"content-length", 0))
            if length:
                f.read(length)
            if status.startswith(b"HTTP/1.1 200"):
                rows.append((wall, time.monotonic_ns() - t0) + tuple(
                    int(heads.get(h, -1)) for h in (b"x-queue-ns", b"x-service-time-ns",
                                                    b"x-downstream-ns")))
            nxt += period
            pause = nxt - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            else:
                nxt = time.monotonic()
    except (KeyboardInterrupt, OSError):
        pass
    finally:
        with open(out_path, "w") as out:
            for row in rows:
                out.write(",".join(map(str, row)) + "\n")


def inject_mean(path, field="mean"):
    try:
        inj = json.load(open(path))
        return inj["actual_delay_ns"][field]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def injection_seconds(path):
    try:
        return float(json.load(open(path))["duration_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def probe_differences(path, by_pair):
    """Per pair, the on - off differences of a probe's mean columns
    (response, then the answering tier's queue, service, downstream)."""
    if not os.path.exists(path):
        return []
    rows = [tuple(map(int, line.split(","))) for line in open(path) if line.strip()]
    out = []
    for p, w in sorted(by_pair.items()):
        if "on" not in w or "off" not in w:
            continue
        means = {}
        for kind, (s, e) in w.items():
            sel = [r[1:] for r in rows if s + GUARD_START_NS <= r[0] <= e - GUARD_END_NS]
            if len(sel) >= 10:
                means[kind] = [statistics.mean(r[c] for r in sel) for c in range(len(sel[0]))]
        if len(means) == 2:
            out.append([a - b for a, b in zip(means["on"], means["off"])])
    return out


def oracle(work):
    """(label, type) -> dict from the windows: value, se, pairs, d_on, d_off,
    and the per-component differences (client-seen, entry tier's queue,
    service, downstream), each over the same actual delay step."""
    windows = {}
    for line in open(os.path.join(work, "windows.txt")):
        i, label, p, kind, start, end = line.rstrip("\n").split("|")
        windows.setdefault((int(i), label), {}).setdefault(int(p), {})[kind] = (int(start), int(end))
    out = {}
    for (i, label), by_pair in sorted(windows.items()):
        path = os.path.join(work, f"oracle-{i}.csv")
        if not os.path.exists(path):
            continue
        by_type = {}
        for line in open(path):
            send, name, lat, q, s, d = line.rstrip("\n").split(",")
            by_type.setdefault(name, []).append((int(send), int(lat), int(q), int(s), int(d)))
        d_on, d_off, steps = [], [], {}
        for p, w in by_pair.items():
            on = inject_mean(os.path.join(work, f"inject-{i}-{p}-on.json"))
            off = inject_mean(os.path.join(work, f"inject-{i}-{p}-off.json"))
            # The injection held from its start's answer to its stop's: the
            # command's end minus the duration it reports, not the window's
            # start (a slow inject.start would leave undelayed requests in an
            # "on" window and dilute the difference).
            for kind in list(w):
                held = injection_seconds(os.path.join(work, f"inject-{i}-{p}-{kind}.json"))
                if held is None:
                    del w[kind]
                else:
                    w[kind] = (w[kind][1] - int(held * 1e9), w[kind][1])
            if on is not None:
                d_on.append(on)
            if off is not None:
                d_off.append(off)
            if on is not None and off is not None:
                steps[p] = on - off
        if not steps:
            continue
        step = statistics.mean(steps.values())
        # The probe's own on-off difference: the delay a request crossing the
        # link really met.
        probe_diffs = probe_differences(os.path.join(work, f"probe-{i}.csv"), by_pair)
        probe_step = statistics.mean(d[0] for d in probe_diffs) if len(probe_diffs) >= 2 else None
        probe_se = (statistics.stdev(d[0] for d in probe_diffs) / math.sqrt(len(probe_diffs))
                    if len(probe_diffs) >= 2 else None)
        # The app-level probe (app <-> db links): /view sent to app from web,
        # its response time and app's own queue, service and downstream time.
        view_diffs = probe_differences(os.path.join(work, f"probe-view-{i}.csv"), by_pair)
        view = ([statistics.mean(d[c] for d in view_diffs) / step for c in range(4)]
                + [statistics.stdev(d[0] for d in view_diffs) / math.sqrt(len(view_diffs)) / step]
                if len(view_diffs) >= 2 else None)
        for name, samples in by_type.items():
            diffs = {k: [] for k in ("rt", "queue", "service", "down")}
            counts = []
            for p, w in sorted(by_pair.items()):
                if "on" not in w or "off" not in w or p not in steps:
                    continue
                means = {}
                for kind, (s, e) in w.items():
                    rows = [r for r in samples if s + GUARD_START_NS <= r[0] <= e - GUARD_END_NS]
                    if rows:
                        means[kind] = [statistics.mean(r[c] for r in rows) for c in (1, 2, 3, 4)]
                        counts.append(len(rows))
                if len(means) == 2:
                    for c, k in enumerate(("rt", "queue", "service", "down")):
                        diffs[k].append(means["on"][c] - means["off"][c])
            n = len(diffs["rt"])
            if n >= 2:
                out[(label, name)] = {
                    "value": statistics.mean(diffs["rt"]) / step,
                    "se": statistics.stdev(diffs["rt"]) / math.sqrt(n) / step,
                    "parts": {k: statistics.mean(v) / step for k, v in diffs.items()},
                    "pairs": n, "d_on_ms": statistics.mean(d_on) / 1e6,
                    "d_off_ms": statistics.mean(d_off) / 1e6 if d_off else float("nan"),
                    "step_ms": step / 1e6, "view_probe": view,
                    "probe_ms": probe_step / 1e6 if probe_step is not None else None,
                    "probe_se_ms": probe_se / 1e6 if probe_se is not None else None,
                    "per_window": statistics.mean(counts)}
    return out


def verdict(truth, g, lo, hi, o):
    """Which hypothesis a row supports. B: the oracle reads above the truth
    (by more than 2 standard errors) and the campaign's CI holds the
    oracle. A: the oracle holds the truth (within 2 standard errors) and the
    campaign's whole CI lies above the oracle. "neither": campaign and
    oracle both hold the truth. "wide": the campaign's CI is wider than
    +-15% of the truth, too wide to side with either. "-": a zero truth,
    no figures, or a mix."""
    if g is None or lo is None or o is None or truth == 0:
        return "-"
    ov, se = o["value"], o["se"]
    if (hi - lo) / 2 > 0.15 * abs(truth):
        return "wide"
    oracle_high = ov - 2 * se > truth
    oracle_at_truth = abs(ov - truth) <= 2 * se
    if oracle_high and lo <= ov <= hi:
        return "B"
    if oracle_at_truth and lo > ov:
        return "A"
    if oracle_at_truth and lo <= truth <= hi:
        return "neither"
    return "-"


def report(work, condition):
    j = json.load(open(os.path.join(work, "campaign.json")))
    truth = json.load(open(os.path.join(work, "truth.json")))
    orc = oracle(work)
    grads = {(g["link"], g["type"]): g for g in j.get("gradients", [])}
    print(f"condition: {condition}")
    head = (f"{'link':<20} {'type':<8} {'truth':>5} {'campaign [CI]':>23} {'oracle +- se':>13} "
            f"{'oracle/probe':>12} {'web q/svc/down':>15} {'supports':>9}")
    print(head)
    print("-" * len(head))
    rows = []
    for label, by_type in truth.items():
        for name in TYPES:
            t = by_type.get(name, 0)
            g = grads.get((label, name), {})
            o = orc.get((label, name))
            val, lo, hi = g.get("gradient"), g.get("ci_low"), g.get("ci_high")
            grad = f"{val:.3f} [{lo:.3f}, {hi:.3f}]" if val is not None and lo is not None else "-"
            ostr = f"{o['value']:.3f}+-{o['se']:.3f}" if o else "-"
            pstr = (f"{o['value'] * o['step_ms'] / o['probe_ms']:.3f}"
                    if o and o.get("probe_ms") else "-")
            parts = (f"{o['parts']['queue']:.2f}/{o['parts']['service']:.2f}/"
                     f"{o['parts']['down']:.2f}" if o else "-")
            v = verdict(t, val, lo, hi, o)
            rows.append((label, name, t, val, o, v))
            print(f"{label:<20} {name:<8} {t:>5} {grad:>23} {ostr:>13} {pstr:>12} {parts:>15} {v:>9}")
    print()
    print("the delay step of each link (ms): nominal D; the injector's actual mean, on - off "
          "(the oracle's denominator, as Delta-l is the campaign's); the probe's on - off +- se")
    for label in truth:
        o = next((v for (lab, _), v in orc.items() if lab == label), None)
        if not o:
            continue
        probe = (f"{o['probe_ms']:.3f} +- {o['probe_se_ms']:.3f} (probe / injector "
                 f"{o['probe_ms'] / o['step_ms']:.3f})" if o.get("probe_ms") else "-")
        print(f"  {label:<20} on {o['d_on_ms']:.3f}, off {o['d_off_ms']:.3f}, "
              f"step {o['step_ms']:.3f}; probe {probe}")
        if o.get("view_probe"):
            rt, q, svc, down, se = o["view_probe"]
            print(f"  {'':<20} /view probed at app (from web, one at a time), over the step: "
                  f"response {rt:.3f} +- {se:.3f}, app's queue {q:.3f}, service {svc:.3f}, "
                  f"downstream {down:.3f}")
    per_window = [o["per_window"] for o in orc.values()]
    pairs = sorted({o["pairs"] for o in orc.values()})
    print(f"oracle: {pairs} on/off pairs per link, {statistics.mean(per_window) if per_window else 0:.0f} "
          f"requests of a type per window on average; the off windows hold a 0 us injection")
    print("oracle/probe: the oracle over the probe's step instead of the injector's; "
          "web q/svc/down: the on-off change of the web tier's X-Queue-Ns, X-Service-Time-Ns "
          "and X-Downstream-Ns over the injector's step")
    nz = [(r[3], r[4]["value"], r[2]) for r in rows if r[2] and r[4] and r[3] is not None]
    if nz:
        print(f"non-zero truths: campaign/truth mean {statistics.mean(c / t for c, _, t in nz):.3f}, "
              f"oracle/truth mean {statistics.mean(o / t for _, o, t in nz):.3f}, "
              f"campaign/oracle mean {statistics.mean(c / o for c, o, _ in nz):.3f} over {len(nz)} rows")
    nzo = [(r[4]["value"], r[2]) for r in rows if r[2] and r[4]]
    if nzo:
        print(f"oracle/truth over the {len(nzo)} non-zero truths: mean "
              f"{statistics.mean(o / t for o, t in nzo):.3f}, range "
              f"{min(o / t for o, t in nzo):.3f}..{max(o / t for o, t in nzo):.3f}")
    counts = {}
    for r in rows:
        counts[r[5]] = counts.get(r[5], 0) + 1
    print("rows supporting: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    if j.get("gradients"):
        print(f"campaign: run {j.get('run_id')} {j.get('status')}; warnings: {len(j.get('warnings', []))}")
        for w in j.get("warnings", [])[:6]:
            print(f"  warning: {w}")


if __name__ == "__main__":
    if sys.argv[1] == "plan":
        plan(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "probe":
        probe(*sys.argv[2:8])
    elif sys.argv[1] == "load":
        load(*sys.argv[2:9])
    else:
        report(sys.argv[2], sys.argv[3])
