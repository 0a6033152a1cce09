/*
 * embed.c - a program that streams its own changes into an Iceberg table
 * through libfloe's public API alone (include/floe.h).
 *
 *   cc embed.c $(pkg-config --cflags --libs floe) -o embed
 *   ./embed CATALOG_DB WAREHOUSE_DIR
 *
 * It keeps a small inventory table keyed by sku: at each second of its own
 * clock it sets some skus' stock and removes others, and the sink commits
 * one snapshot per second (upsert: the table holds each sku's latest row).
 * Killed and run again, it resumes where the table says it stopped: the
 * seconds already committed are skipped, so the table never doubles a
 * change; once the stream is finished, a rerun says so and changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <floe.h>

#define SECONDS 20
#define SKUS 50

static int fail(const char *what, floe_error *err)
{
    fprintf(stderr, "embed: %s: %s\n", what, floe_error_message(err));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: embed CATALOG_DB WAREHOUSE_DIR\n");
        return 2;
    }
    char catalog[4096];
    snprintf(catalog, sizeof catalog, "sqlite:%s", argv[1]);
    printf("libfloe %s (compiled against %s)\n", floe_version(), FLOE_VERSION_STRING);

    floe_error *err = floe_error_new();
    if (!err)
        return 1;
    floe_sink_options o;
    floe_sink_options_init(&o, sizeof o);
    o.table = "shop.inventory";
    o.schema = "sku int not null, stock int, note text";
    o.key = "sku";
    o.mode = FLOE_SINK_MODE_UPSERT;
    floe_connect_options where;
    floe_connect_options_init(&where, sizeof where);
    where.catalog = catalog;
    where.warehouse = argv[2];
    o.connect = &where;
    o.commit_interval = 1;          /* one snapshot per second of its clock */
    floe_sink *sink = NULL;
    if (floe_sink_open(&o, &sink, err) != FLOE_OK)
        return fail("opening the table", err);

    if (floe_sink_complete(sink)) {               /* a run before finished the stream */
        printf("the table holds the whole stream already\n");
        floe_sink_free(sink);
        floe_error_free(err);
        return 0;
    }
    /* time t is second t of this program's clock; a rerun skips what the
     * table has committed already (its resume frontier) */
    const char *resume = floe_sink_resume_frontier(sink);
    uint64_t from = resume && resume[1] != ']' ? strtoull(resume + 1, NULL, 10) : 0;
    floe_row *row = NULL;
    int rc = floe_row_new(floe_sink_row_schema(sink), &row, err);
    for (uint64_t t = from; rc == FLOE_OK && t < SECONDS; t++) {
        for (int sku = 0; rc == FLOE_OK && sku < SKUS; sku++) {
            char json[128];
            if ((sku + t) % 7 == 0 && t > 0) {
                /* sold out and delisted: the key's row goes */
                snprintf(json, sizeof json, "{\"sku\": %d}", sku);
                rc = floe_row_set_json(row, json, strlen(json), err);
                if (rc == FLOE_OK)
                    rc = floe_sink_retract_key(sink, row, t, err);
            } else if ((sku * 3 + t) % 4 == 0 || t == 0) {
                /* restocked: the key's row is replaced */
                snprintf(json, sizeof json, "{\"sku\": %d, \"stock\": %d, \"note\": \"at %d\"}",
                         sku, (int)(sku * 10 + t), (int)t);
                rc = floe_row_set_json(row, json, strlen(json), err);
                if (rc == FLOE_OK)
                    rc = floe_sink_retract_key(sink, row, t, err);
                if (rc == FLOE_OK)
                    rc = floe_sink_push(sink, row, t, 1, err);
            }
        }
        if (rc == FLOE_OK)
            rc = floe_sink_advance(sink, t + 1, err);  /* second t is whole */
    }
    if (rc == FLOE_OK)
        rc = floe_sink_finish(sink, err);
    floe_row_free(row);
    if (rc != FLOE_OK) {
        fail("streaming", err);
        floe_sink_free(sink);
        floe_error_free(err);
        return 1;
    }
    floe_sink_stats st;
    floe_sink_stats_get(sink, &st, sizeof st);
    printf("committed %llu snapshots\n", (unsigned long long)st.snapshots_committed);
    floe_sink_free(sink);
    floe_error_free(err);
    return 0;
}
