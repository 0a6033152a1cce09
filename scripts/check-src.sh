#!/usr/bin/env bash
# Bans raw calls that bypass floe's wrappers (the habit of curl's checksrc):
#  - library code (src/, not src/cli) allocates only through floe__malloc & co;
#  - nothing calls exit()/abort() from library code;
#  - src/ never uses the unbounded string functions;
#  - layers include only downwards, by an exact list of edges (below;
#    docs/architecture.md quotes it).
# A line that must break a rule says why with a "check-src: allow" comment.
# Prints each offence as file:line and exits 1 when there is any.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
report() {
    local what=$1; shift
    local hits
    hits=$(grep -nE "$@" 2>/dev/null | grep -vE '^\S+:[0-9]+:\s*(\*|//|/\*)' \
           | grep -v 'check-src: allow' || true)
    if [ -n "$hits" ]; then
        echo "check-src: $what:"
        echo "$hits" | sed 's/^/    /'
        status=1
    fi
}
lib=$(find src -name '*.c' -not -path 'src/cli/*' -not -path 'src/util/alloc.c')
report "raw allocation in library code (use floe__malloc & co)" \
    '(^|[^_a-z])(malloc|calloc|realloc|free|strdup|strndup)\(' $lib
report "exit or abort in library code" '(^|[^_a-z>.])(exit|abort|_exit)\(' $lib
report "unbounded string functions" '(^|[^_a-z])(strcpy|strcat|sprintf|vsprintf|gets)\(' \
    $(find src -name '*.c')
# The layers, bottom first, and the exact list of include edges between
# their folders: "A -> B C" says files in src/A/ include headers of src/B/
# and src/C/ (besides their own folder's and floe.h).  Every edge must point
# down, every include must be an edge, and every edge must be used, so the
# list says what the code does.  docs/architecture.md quotes the list as
# it stands here (checked below): change both together.
order="util schema io avro parquet iceberg catalog table maint keyindex source sink mirror kafka cli"
edges="
    schema -> util
    io -> util
    avro -> util
    parquet -> util schema io
    iceberg -> util schema io avro parquet
    catalog -> iceberg io
    table -> iceberg catalog parquet
    maint -> iceberg table
    keyindex -> util io table
    source -> schema
    sink -> util iceberg table maint keyindex source
    mirror -> util source sink
    kafka -> util schema source sink
"
rank() { local i=0; for l in $order; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done
         echo -1; }
declare -A allowed=()
while read -r from arrow to; do
    [ -z "$from" ] && continue
    for dep in $to; do
        allowed["$from $dep"]=unused
        if [ "$(rank "$dep")" -lt 0 ] || [ "$(rank "$dep")" -ge "$(rank "$from")" ]; then
            echo "check-src: the edge $from -> $dep does not point down the layers ($order)"
            status=1
        fi
    done
done <<< "$edges"
for f in $(find src -name '*.[ch]'); do
    layer=$(echo "$f" | cut -d/ -f2)
    while IFS=: read -r line inc; do
        dep=$(echo "$inc" | sed -E 's/.*#include "([a-z]+)\/.*/\1/')
        [ "$dep" = "$layer" ] && continue
        if [ -n "${allowed["$layer $dep"]-}" ]; then
            allowed["$layer $dep"]=used
        else
            echo "check-src: $f:$line includes $dep/ from $layer/: not an edge of the layers" \
                 "(scripts/check-src.sh, docs/architecture.md)"
            status=1
        fi
    done < <(grep -nE '^#include "[a-z]+/' "$f")
done
for e in "${!allowed[@]}"; do
    if [ "${allowed[$e]}" = unused ]; then
        echo "check-src: the edge ${e/ / -> } is allowed but no file uses it: drop it from the list"
        status=1
    fi
done
quoted=$(grep -E '^    [a-z]+ -> [a-z ]+$' docs/architecture.md || true)
if [ "$quoted" != "$(echo "$edges" | grep -v '^$')" ]; then
    echo "check-src: docs/architecture.md does not quote the edges of scripts/check-src.sh:"
    diff <(echo "$edges" | grep -v '^$') <(echo "$quoted") | sed 's/^/    /'
    status=1
fi
[ $status = 0 ] && echo "check-src: clean"
exit $status
