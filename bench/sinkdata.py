"""Deterministic lineitem-like data for the sink benchmarks: plain rows,
and the same rows as change streams (append: inserts only; upsert: 10% of
the updates change an earlier key).  Times are milliseconds of input time,
RATE rows per second; a progress record follows every 1000 updates."""
import datetime as dt
import json
import os
import random

SCHEMA = ("l_orderkey bigint not null, l_partkey bigint, l_suppkey bigint, l_linenumber integer, "
          "l_quantity numeric(12,2), l_extendedprice numeric(12,2), l_discount numeric(12,2), "
          "l_tax numeric(12,2), l_returnflag text, l_linestatus text, l_shipdate date, "
          "l_commitdate date, l_receiptdate date, l_shipinstruct text, l_shipmode text, "
          "l_comment text")
RATE = 100_000
WORDS = ["furiously", "quickly", "carefully", "blithely", "slyly", "ironic", "final", "pending",
         "regular", "express", "deposits", "requests", "accounts", "packages", "theodolites"]
INSTRUCT = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
BASE = dt.date(1992, 1, 1)


def row(r, key):
    ship = BASE + dt.timedelta(days=r.randrange(2500))
    q = r.randint(1, 50)
    price = r.randint(90000, 10000000)
    return {"l_orderkey": key, "l_partkey": r.randrange(200000), "l_suppkey": r.randrange(10000),
            "l_linenumber": r.randint(1, 7), "l_quantity": f"{q}.00",
            "l_extendedprice": f"{price // 100}.{price % 100:02d}",
            "l_discount": f"0.{r.randint(0, 10):02d}", "l_tax": f"0.{r.randint(0, 8):02d}",
            "l_returnflag": r.choice("RAN"), "l_linestatus": r.choice("OF"),
            "l_shipdate": ship.isoformat(),
            "l_commitdate": (ship + dt.timedelta(days=r.randint(-30, 60))).isoformat(),
            "l_receiptdate": (ship + dt.timedelta(days=r.randint(1, 30))).isoformat(),
            "l_shipinstruct": r.choice(INSTRUCT), "l_shipmode": r.choice(MODES),
            "l_comment": " ".join(r.choice(WORDS) for _ in range(r.randint(3, 6)))}


def generate(out_dir, n):
    """Write rows.ndjson, append.ndjson and upsert.ndjson for n updates (once)."""
    paths = {k: os.path.join(out_dir, f"{k}-{n}.ndjson") for k in ("rows", "append", "upsert")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    os.makedirs(out_dir, exist_ok=True)
    r = random.Random(42)
    rows = [row(r, i) for i in range(n)]
    with open(paths["rows"], "w") as f:
        for x in rows:
            f.write(json.dumps(x) + "\n")
    with open(paths["append"], "w") as f:
        for i, x in enumerate(rows):
            f.write(json.dumps({"time": i * 1000 // RATE, "diff": 1, "row": x}) + "\n")
            if i % 1000 == 999:
                f.write(json.dumps({"progress": (i + 1) * 1000 // RATE}) + "\n")
    live, next_key = [], 0
    with open(paths["upsert"], "w") as f:
        for i in range(n):
            t = i * 1000 // RATE
            if live and r.random() < 0.10:                      # an update of an earlier key
                slot = r.randrange(len(live))
                old = live[slot]
                new = row(r, old["l_orderkey"])
                f.write(json.dumps({"time": t, "diff": -1, "row": old}) + "\n")
                f.write(json.dumps({"time": t, "diff": 1, "row": new}) + "\n")
                live[slot] = new
            else:
                new = rows[next_key]
                next_key += 1
                live.append(new)
                f.write(json.dumps({"time": t, "diff": 1, "row": new}) + "\n")
            if i % 1000 == 999:
                f.write(json.dumps({"progress": (i + 1) * 1000 // RATE}) + "\n")
    return paths
