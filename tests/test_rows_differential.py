"""Differential tests of floe's JSON row parser against Python's own
decimal, datetime, float and json modules.

A tiny driver (compiled here against build/libfloe.a, using only the public
API) reads a column list from argv and one JSON row per stdin line, and
prints the row's canonical JSON (floe_row_to_json) or "ERR <message>".
Thousands of random values are checked against what Python computes.
Needs `make build/libfloe.a` first.
"""
import datetime as dt
import json
import math
import os
import random
import struct
import subprocess
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "build", "libfloe.a")

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "floe.h"
int main(int argc, char **argv) {
    floe_error *e = floe_error_new();
    floe_schema *s;
    if (argc < 2 || floe_schema_parse(argv[1], &s, e)) { printf("SCHEMA %s\n", floe_error_message(e)); return 1; }
    floe_row *r;
    floe_row_new(s, &r, e);
    char *line = NULL; size_t cap = 0; ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        char *t;
        if (floe_row_set_json(r, line, (size_t)n, e) || floe_row_to_json(r, &t, e)) {
            printf("ERR %s\n", floe_error_message(e));
        } else {
            printf("%s\n", t);
            floe_free(t);
        }
    }
    free(line);
    floe_row_free(r);
    floe_schema_free(s);
    floe_error_free(e);
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    if not os.path.exists(LIB):
        subprocess.run(["make", "-C", ROOT, "build/libfloe.a"], check=True,
                       stdout=subprocess.DEVNULL)
    d = tmp_path_factory.mktemp("driver")
    src = d / "driver.c"
    src.write_text(DRIVER)
    exe = d / "driver"
    subprocess.run(["cc", "-O1", "-I", os.path.join(ROOT, "include"), str(src), LIB,
                    "-ljansson", "-lm", "-o", str(exe)], check=True)
    return str(exe)


def run(driver, columns, rows):
    """rows: JSON texts; returns one output line per row."""
    out = subprocess.run([driver, columns], input="\n".join(rows) + "\n",
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == len(rows)
    return lines


def value(line, col):
    assert not line.startswith("ERR"), line
    return json.loads(line)[col]


def rand_decimal_text(rng):
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
    point = rng.randint(0, len(digits))
    text = digits[:point] + ("." + digits[point:] if point < len(digits) else "")
    if text.startswith("."):
        text = "0" + text
    text = text.lstrip("0") or "0"
    if text.startswith("."):
        text = "0" + text
    if rng.random() < 0.3:
        text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 40))
    if rng.random() < 0.5:
        text = "-" + text
    return text


@pytest.mark.parametrize("p,s", [(38, 0), (38, 10), (20, 2), (12, 2), (5, 5), (38, 38), (9, 3)])
def test_numeric_matches_python_decimal(driver, p, s):
    rng = random.Random(p * 100 + s)
    texts = [rand_decimal_text(rng) for _ in range(1500)]
    rows = []
    for i, t in enumerate(texts):
        # JSON numbers need the JSON grammar; strings take the same text
        as_string = i % 2 == 0 or t.lstrip("-").startswith("0") and len(t.lstrip("-")) > 1 \
            and t.lstrip("-")[1] != "."
        rows.append(json.dumps({"n": t}) if as_string else '{"n":%s}' % t)
    lines = run(driver, f"n numeric({p},{s})", rows)
    for t, line in zip(texts, lines):
        with localcontext() as ctx:
            ctx.prec = 200
            q = Decimal(t).quantize(Decimal(1).scaleb(-s), rounding=ROUND_HALF_UP)
        digits = len(q.as_tuple().digits) if q != 0 else 0
        if digits > p:
            assert line.startswith("ERR") and "too many digits" in line, (t, line)
            continue
        want = format(q, f".{s}f")
        if q == 0:
            want = format(Decimal(0), f".{s}f")
        assert value(line, "n") == want, (t, p, s)


def test_uint8_and_bigint_edges(driver):
    rng = random.Random(7)
    nums = [0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**64 + 1, 10**20, 10**19]
    nums += [rng.randrange(0, 2**64) for _ in range(500)]
    lines = run(driver, "u uint8, b bigint", ['{"u":%d}' % n for n in nums])
    for n, line in zip(nums, lines):
        if n < 2**64:
            assert value(line, "u") == n
        else:
            assert line.startswith("ERR") and "out of range" in line
    signed = [-(2**63), -(2**63) - 1, 2**63 - 1, 2**63] + \
        [rng.randrange(-(2**63), 2**63) for _ in range(500)]
    lines = run(driver, "b bigint", ['{"b":%d}' % n for n in signed])
    for n, line in zip(signed, lines):
        if -(2**63) <= n < 2**63:
            assert value(line, "b") == n
        else:
            assert line.startswith("ERR")


def test_doubles_round_trip_bits(driver):
    rng = random.Random(11)
    vals = []
    while len(vals) < 3000:
        x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(x):
            vals.append(x)
    vals += [0.1, 1e23, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0]
    lines = run(driver, "d double precision", ['{"d":%r}' % v for v in vals])
    for v, line in zip(vals, lines):
        got = value(line, "d")
        assert struct.pack("<d", float(got)) == struct.pack("<d", v), (v, got)


def test_reals_round_to_float(driver):
    rng = random.Random(12)
    vals = [rng.uniform(-1e30, 1e30) for _ in range(1000)] + \
        [rng.uniform(-1, 1) for _ in range(1000)]
    lines = run(driver, "f real", ['{"f":%r}' % v for v in vals])
    for v, line in zip(vals, lines):
        want = struct.unpack("<f", struct.pack("<f", v))[0]
        got = value(line, "f")
        assert struct.pack("<f", float(got)) == struct.pack("<f", want), (v, got)


def fmt_ts(t):
    s = "%04d-%02d-%02d %02d:%02d:%02d" % (t.year, t.month, t.day, t.hour, t.minute, t.second)
    if t.microsecond:
        s += ("." + "%06d" % t.microsecond).rstrip("0")
    return s


def test_dates_and_timestamptz_match_datetime(driver):
    rng = random.Random(13)
    rows, want = [], []
    for _ in range(3000):
        d = dt.date(1, 1, 1) + dt.timedelta(days=rng.randrange(0, 3652059))
        t = dt.datetime.combine(d, dt.time(rng.randrange(24), rng.randrange(60),
                                           rng.randrange(60), rng.choice([0, rng.randrange(10**6)])))
        off = rng.randrange(-18 * 60, 18 * 60 + 1)
        sign = "-" if off < 0 else "+"
        zone = rng.choice(["%s%02d:%02d", "%s%02d%02d"]) % (sign, abs(off) // 60, abs(off) % 60)
        if off == 0 and rng.random() < 0.5:
            zone = "Z"
        text = fmt_ts(t).replace(" ", rng.choice([" ", "T"])) + zone
        utc = t - dt.timedelta(minutes=off)
        rows.append(json.dumps({"d": d.isoformat(), "z": text}))
        want.append((d.isoformat(), utc))
    lines = run(driver, "d date, z timestamptz", rows)
    for (d, utc), line in zip(want, lines):
        if not (dt.datetime(1, 1, 1) <= utc <= dt.datetime(9999, 12, 31, 23, 59, 59, 999999)):
            assert line.startswith("ERR") and "out of range" in line
            continue
        assert value(line, "d") == d
        assert value(line, "z") == fmt_ts(utc) + "Z"


def test_invalid_dates_rejected(driver):
    rng = random.Random(14)
    texts = []
    for _ in range(2000):
        y, m, d = rng.randrange(0, 10000), rng.randrange(0, 14), rng.randrange(0, 33)
        texts.append("%04d-%02d-%02d" % (y, m, d))
    lines = run(driver, "d date", [json.dumps({"d": t}) for t in texts])
    for t, line in zip(texts, lines):
        try:
            ok = dt.date.fromisoformat(t)
        except ValueError:
            ok = None
        if ok is None:
            assert line.startswith("ERR"), t
        else:
            assert value(line, "d") == t


def test_text_unicode_matches_json_module(driver):
    rng = random.Random(15)
    strings = []
    for _ in range(2000):
        cps = []
        for _ in range(rng.randrange(0, 20)):
            r = rng.random()
            if r < 0.4:
                cps.append(rng.randrange(0x20, 0x7f))
            elif r < 0.5:
                cps.append(rng.randrange(0, 0x20))
            elif r < 0.8:
                cps.append(rng.randrange(0x80, 0xd800))
            else:
                cps.append(rng.randrange(0x10000, 0x110000))
        strings.append("".join(map(chr, cps)))
    rows = [json.dumps({"t": s}, ensure_ascii=bool(i % 2)) for i, s in enumerate(strings)]
    lines = run(driver, "t text, j jsonb", rows)
    for s, line in zip(strings, lines):
        assert value(line, "t") == s
    # jsonb: any JSON value survives as the same value
    docs = [{"a": [1, 2.5, None, True], "b": {"c": s}} for s in strings[:300]]
    lines = run(driver, "j jsonb", [json.dumps({"j": d}, indent=rng.choice([None, 2]))
                                    .replace("\n", " ") for d in docs])
    for d, line in zip(docs, lines):
        assert value(line, "j") == d
        assert "\n" not in line


def test_lone_surrogates_rejected(driver):
    rows = ['{"t":"\\ud800"}', '{"t":"\\udfff"}', '{"t":"a\\ud83d"}', '{"t":"\\ud83d\\ude00"}']
    lines = run(driver, "t text", rows)
    assert lines[0].startswith("ERR") and "column \"t\"" in lines[0]
    assert lines[1].startswith("ERR")
    assert lines[2].startswith("ERR")
    assert value(lines[3], "t") == "\U0001F600"
