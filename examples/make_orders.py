#!/usr/bin/env python3
"""Makes examples/orders.changes.ndjson: a small order book as a change stream.

Orders are placed (inserts), filled in parts and repriced (updates: the old
row retracted, the new one inserted at the same time), and cancelled
(deletes).  Times are milliseconds; a progress record follows every 250 ms
of activity, so the stream can be sunk with any commit interval.  The output
is deterministic (fixed seed); re-run this script to regenerate it.
"""
import json
import os
import random

SYMBOLS = ["ACME", "GLOBX", "INITECH", "UMBR", "WAYNE"]
CUSTOMERS = ["ada", "grace", "linus", "edsger", "barbara", "ken", "dennis", "frances", "zoë"]


def placed_at(ms):
    """The timestamptz text of a time in ms since the epoch."""
    import datetime as dt
    d = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M:%S.") + f"{d.microsecond:06d}Z"


def main():
    r = random.Random(2026)
    live = {}
    lines = []
    t = 1_764_500_000_000                       # ms since the epoch
    next_id = 1
    last_progress = t

    def emit(time, diff, row):
        lines.append(json.dumps({"time": time, "diff": diff, "row": row}, ensure_ascii=False))

    for _ in range(6000):
        t += r.randint(0, 40)
        op = r.random()
        if op < 0.45 or not live:
            sym = r.choice(SYMBOLS)
            row = {"order_id": next_id, "customer": r.choice(CUSTOMERS),
                   "side": r.choice(["buy", "sell"]), "symbol": sym,
                   "price": f"{r.uniform(10, 500):.2f}", "qty": r.randint(1, 50) * 10,
                   "filled": 0, "status": "open",
                   "placed_at": placed_at(t),
                   "tags": r.sample(["web", "api", "algo", "vip"], r.randint(0, 2))}
            live[next_id] = row
            emit(t, 1, row)
            next_id += 1
        else:
            oid = r.choice(list(live))
            old = live[oid]
            emit(t, -1, old)
            if op < 0.80:                       # a partial or full fill
                new = dict(old, filled=min(old["qty"], old["filled"] + r.randint(1, 5) * 10))
                new["status"] = "filled" if new["filled"] == new["qty"] else "partial"
            elif op < 0.90:                     # repriced
                new = dict(old, price=f"{float(old['price']) * r.uniform(0.95, 1.05):.2f}")
            else:                               # cancelled: a delete
                new = None
            if new is None or new["status"] == "filled" and r.random() < 0.3:
                del live[oid]
            else:
                live[oid] = new
                emit(t, 1, new)
        if t - last_progress >= 250:
            last_progress = t
            t += 1                              # later updates lie at or past the frontier
            lines.append(json.dumps({"progress": t}))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "orders.changes.ndjson"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
