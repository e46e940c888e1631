"""Helper of bench/campaign/real_stack.sh.

  real_stack.py plan CAMPAIGN_JSON NET
      one line per measured link: label|injectd address|link spec|delay in us
      (the campaign's amplitude for the link, held within [1 ms, 5 ms]).
  real_stack.py load HOST PORT RATE SECONDS SEED OUT_CSV
      the oracle's load: open-loop Poisson arrivals at RATE/s for SECONDS,
      /static and /cached 1:1, over 16 keep-alive HTTP/1.1 connections;
      one line per answered request: wall-clock send ns, type, response ns
      (from the send, a wait for a free connection included, to the whole
      answer). Bounded in count (RATE * SECONDS) and time (SECONDS + 5 s).
      Written here rather than run with `nabla load`, which ends its run
      after calibration when the client cannot keep its schedule (a
      machine at load 10 on 2 cores) and keeps only its last round.
  real_stack.py report WORK CAMPAIGN_WALL_S
      the oracle from the stored load samples and window times, and the
      table of campaign gradients against it.
"""
import json
import math
import os
import re
import sqlite3
import statistics
import sys

GUARD_START_NS = 500_000_000  # the injection starting, requests in flight
GUARD_END_NS = 200_000_000
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def seconds(text):
    return sum(float(n) * UNITS[u] for n, u in re.findall(r"([0-9.]+)(ns|us|ms|min|s|m|h)", text))


def plan(campaign_json, net):
    j = json.load(open(campaign_json))
    nodes = {}
    for link in j.get("links", []):
        if not link.get("measurable"):
            continue
        node = link["node"]
        # Node addresses follow the testbed's order: client proxy web1 web2 cache.
        order = ["client", "proxy", "web1", "web2", "cache"]
        address = nodes.setdefault(node, f"{net}.{order.index(node) + 1}")
        amp = link.get("amplitude_ns") or 3e6
        delay_us = int(round(min(5e6, max(1e6, amp)) / 1e3))
        print(f"{link['label']}|{address}|{link['spec']}|{delay_us}")


def load(host, port, rate, seconds, seed, out_path):
    import asyncio
    import random
    import time

    rng = random.Random(seed)
    rate, seconds = float(rate), float(seconds)
    n_max = int(rate * seconds) + 1
    results = []

    async def main():
        free = asyncio.Queue()
        for _ in range(16):
            free.put_nowait(await asyncio.open_connection(host, int(port)))

        async def one(path, ready_mono):
            conn = await free.get()
            reader, writer = conn
            try:
                send_wall = time.time_ns()
                writer.write(f"GET {path} HTTP/1.1\r\nHost: proxy\r\n\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if length:
                    await reader.readexactly(length)
                done = time.monotonic_ns()
                if head.startswith(b"HTTP/1.1 200"):
                    results.append((send_wall, path, done - ready_mono))
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
            path = "/static" if rng.random() < 0.5 else "/cached"
            tasks.append(asyncio.ensure_future(one(path, time.monotonic_ns())))
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)

    try:
        asyncio.run(main())
    finally:
        with open(out_path, "w") as f:
            for send, path, lat in results:
                f.write(f"{send},{path},{lat}\n")


def t_quantile(df, conf=0.95):
    # two-sided Student t quantile, by bisection on the regularized incomplete beta
    try:
        from scipy.stats import t
        return float(t.ppf(0.5 + conf / 2, df))
    except ImportError:
        table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
                 8: 2.306, 9: 2.262, 10: 2.228}
        return table.get(df, 1.96)


def oracle(work):
    """(label, type) -> dict(value, se, pairs, delay_ms) from the windows."""
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
            send, name, lat = line.rstrip("\n").split(",")
            by_type.setdefault(name, []).append((int(send), int(lat)))
        delays = []
        for p in by_pair:
            try:
                inj = json.load(open(os.path.join(work, f"inject-{i}-{p}.json")))
                delays.append(inj["actual_delay_ns"]["mean"])
            except (OSError, ValueError, KeyError, TypeError):
                pass
        delay = statistics.mean(delays) if delays else float("nan")
        for name, samples in by_type.items():
            diffs, counts = [], []
            for p, w in sorted(by_pair.items()):
                if "on" not in w or "off" not in w:
                    continue
                means = {}
                for kind, (s, e) in w.items():
                    lats = [lat for send, lat in samples
                            if s + GUARD_START_NS <= send <= e - GUARD_END_NS]
                    if lats:
                        means[kind] = statistics.mean(lats)
                        counts.append(len(lats))
                if len(means) == 2:
                    diffs.append(means["on"] - means["off"])
            if len(diffs) >= 2 and delay == delay and delay > 0:
                out[(label, name)] = {
                    "value": statistics.mean(diffs) / delay,
                    "se": statistics.stdev(diffs) / math.sqrt(len(diffs)) / delay,
                    "pairs": len(diffs), "delay_ms": delay / 1e6,
                    "per_window": statistics.mean(counts) if counts else 0}
    return out


def report(work, wall_s):
    j = json.load(open(os.path.join(work, "campaign.json")))
    orc = oracle(work)
    log = open(os.path.join(work, "campaign.log"), errors="replace").read()
    m = re.search(r"estimated time: ([^\n,;(]+)", log)
    estimate = seconds(m.group(1)) if m else None
    m = re.search(r"estimated time: [^\n]*; up to ([^\n,;(]+) more", log)
    bound = estimate + seconds(m.group(1)) if m and estimate else None
    repeats = log.count("(with the phase measured again)")
    db_s = None
    try:
        db = sqlite3.connect(os.path.join(work, "campaign.db"))
        row = db.execute("SELECT (ended_ns - started_ns) / 1e9 FROM runs WHERE id = ?",
                         (j.get("run_id"),)).fetchone()
        db_s = row[0] if row else None
    except sqlite3.Error:
        pass

    head = (f"{'link':<28} {'type':<8} {'gradient [95% CI]':>24} {'oracle +- se':>15} {'tol':>5} "
            f"{'in tol':>6} {'covers':>6} {'msgs/txn [CI]':>22} {'>=0':>3} {'flag':>4} "
            f"{'CI excl msgs':>12} {'oracle: waits':>13}")
    print(head)
    print("-" * len(head))
    n = misses = within = flags = bad_flags = phys_bad = agree = msgs_n = 0
    for g in j.get("gradients", []):
        key = (g["link"], g["type"])
        o = orc.get(key)
        val, lo, hi = g.get("gradient"), g.get("ci_low"), g.get("ci_high")
        grad = f"{val:.3f} [{lo:.3f}, {hi:.3f}]" if val is not None and lo is not None else "-"
        if o:
            ov = o["value"]
            tol = 0.1 if abs(ov) < 0.1 else 0.1 * abs(ov)
            in_tol = abs(val - ov) <= tol
            covers = lo <= ov <= hi
            n += 1
            misses += not covers
            within += in_tol
            ostr = f"{ov:.3f}+-{o['se']:.3f}"
        else:
            tol, in_tol, covers, ostr = float("nan"), None, None, "-"
        mv, mlo, mhi = g.get("messages_per_txn"), g.get("messages_ci_low"), g.get("messages_ci_high")
        if mv is not None:
            msgs_n += 1
            msgs = f"{mv:.3f} [{mlo:.3f}, {mhi:.3f}]" if mlo is not None else f"{mv:.3f}"
            phys = mv >= 0 and (mlo is None or mlo >= 0)
            phys_bad += not phys
            excl = not (lo <= mv <= hi)
        else:
            msgs, phys, excl = "-", None, None
        flag = bool(g.get("waits_not_hops"))
        flags += flag
        bad_flags += flag and not excl
        # The oracle's word: the response moves with the link by more than its
        # messages explain (or less), beyond the oracle's noise and tolerance.
        waits = None
        if o and mv is not None:
            waits = abs(o["value"] - mv) > max(3 * o["se"], tol)
            agree += waits == flag
        yn = lambda b: "-" if b is None else ("yes" if b else "NO")
        print(f"{g['link']:<28} {g['type']:<8} {grad:>24} {ostr:>15} {tol:5.3f} {yn(in_tol):>6} "
              f"{yn(covers):>6} {msgs:>22} {yn(phys):>3} {'!' if flag else '':>4} "
              f"{('yes' if excl else 'no') if excl is not None else '-':>12} "
              f"{('yes' if waits else 'no') if waits is not None else '-':>13}")
    print()
    delays = sorted({round(o['delay_ms'], 2) for o in orc.values()})
    pairs = sorted({o['pairs'] for o in orc.values()})
    per_window = [o["per_window"] for o in orc.values()]
    print(f"oracle: constant delay {delays[0] if delays else '-'}..{delays[-1] if delays else '-'} ms "
          f"(the injector's actual mean), {pairs} on/off pairs per link, "
          f"{statistics.mean(per_window) if per_window else 0:.0f} requests of a type per window on average")
    print(f"CI misses: {misses} of {n} (nominal 95%: at most 1 of 20)")
    print(f"within tolerance (10%, 0.1 absolute where |oracle| < 0.1): {within} of {n}")
    print(f"messages per transaction: {msgs_n} measured, {phys_bad} outside [0, inf)")
    print(f"waits-not-hops flag: fired {flags} times, {bad_flags} of them with the message count "
          f"inside the gradient's CI; agrees with the oracle's word in {agree} of {msgs_n}")
    if estimate:
        for name, real in (("run's stored duration", db_s), ("nabla run's wall clock", wall_s)):
            if real:
                print(f"estimated time: {estimate:.0f} s, {name} {real:.1f} s: "
                      f"{estimate / real:.2f} of real ({100 * (estimate - real) / real:+.1f}%)")
                if bound:
                    print(f"  up to {bound:.0f} s if every active phase is measured again: "
                          f"{bound / real:.2f} of real; {repeats} phase(s) were")
    else:
        print("estimated time: not found in the campaign's notes")
    print(f"campaign: run {j.get('run_id')} {j.get('status')}"
          f"{', error: ' + j['error'] if j.get('error') else ''}; "
          f"{len(j.get('links', []))} links, {len(j.get('gradients', []))} gradients; "
          f"warnings: {len(j.get('warnings', []))}")
    for w in j.get("warnings", [])[:10]:
        print(f"  warning: {w}")
    for s in j.get("operating_point_shift", []):
        print(f"  shift: {s.get('text')}")


if __name__ == "__main__":
    if sys.argv[1] == "plan":
        plan(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "load":
        load(*sys.argv[2:8])
    else:
        report(sys.argv[2], float(sys.argv[3]))
