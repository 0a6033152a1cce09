#!/usr/bin/env bash
# Bans raw calls that bypass floe's wrappers (the habit of curl's checksrc):
#  - library code (src/, not src/cli) allocates only through floe__malloc & co;
#  - nothing calls exit()/abort() from library code;
#  - src/ never uses the unbounded string functions;
#  - layers include only downwards (the edges below; docs/architecture.md).
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
# The layers and what each may include (besides itself and floe.h).
declare -A below=(
    [util]=""
    [schema]="util"
    [io]="util"
    [avro]="util"
    [parquet]="util schema io"
    [iceberg]="util schema io avro parquet"
    [catalog]="util schema io avro parquet iceberg"
    [table]="util schema io avro parquet iceberg catalog"
    [source]="util schema"
    [maint]="util schema io avro parquet iceberg catalog table"
    [sink]="util schema io avro parquet iceberg catalog table maint source"
    [mirror]="util schema io avro parquet iceberg catalog table maint source sink"
    [kafka]="util schema io avro parquet iceberg catalog table maint source sink"
    [cli]=""
)
for f in $(find src -name '*.[ch]'); do
    layer=$(echo "$f" | cut -d/ -f2)
    while IFS=: read -r line inc; do
        dep=$(echo "$inc" | sed -E 's/.*#include "([a-z]+)\/.*/\1/')
        [ "$dep" = "$layer" ] && continue
        case " ${below[$layer]-} " in
            *" $dep "*) ;;
            *) echo "check-src: $f:$line includes upward or sideways: $dep/ (from $layer/)"
               status=1 ;;
        esac
    done < <(grep -nE '^#include "[a-z]+/' "$f")
done
[ $status = 0 ] && echo "check-src: clean"
exit $status
