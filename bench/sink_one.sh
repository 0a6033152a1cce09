#!/bin/sh
# One case of bench_sink.py as a single process, for farm-bench pairs:
#   bench/sink_one.sh topq|append|upsert
# to-parquet on the 1M plain rows, or floe sink (10 s commit interval) on
# the 1M-row append or upsert stream, into a fresh directory under
# bench/out/one-CASE.  The inputs are bench_sink.py's (run it once first).
set -e
here=$(cd "$(dirname "$0")" && pwd)
floe="$here/../${FLOE_BUILD:-build}/floe"
data="$here/out/data"
out="$here/out/one-$1"
schema=$(python3 -c "import sys; sys.path.insert(0, '$here'); import sinkdata; print(sinkdata.SCHEMA)")
rm -rf "$out" && mkdir -p "$out"
sink() {
    exec "$floe" sink --table bench.lineitem --schema "$schema" --commit-interval 10000ms --quiet \
        --catalog "sqlite:$out/catalog.db" --warehouse "$out/wh" --index-dir "$out/index" "$@"
}
case "$1" in
topq)   exec "$floe" to-parquet --schema "$schema" --input "$data/rows-1000000.ndjson" \
            --output "$out/rows.parquet" ;;
append) sink --input "$data/append-1000000.ndjson" --mode append ;;
upsert) sink --input "$data/upsert-1000000.ndjson" --key l_orderkey ;;
*)      echo "usage: $0 topq|append|upsert" >&2; exit 2 ;;
esac
