/*
 * write_internal.h - what write.c (batches, files, append mode, sealing)
 * and write_upsert.c (resolving one key's updates within a batch) share.
 */
#ifndef FLOE_WRITE_INTERNAL_H
#define FLOE_WRITE_INTERNAL_H

#include "keyindex/keyindex_internal.h"
#include "sink/sink_internal.h"

typedef struct floe__open_batch {
    floe__batch desc;
    floe__part_writer *data;           /* its data files, rows held per partition */
    floe__part_writer *eqdel;          /* its equality deletes (per partition, or global) */
    uint64_t rows, posdels, eqdels;
    floe__delrecs dels;                /* its position deletes */
    floe__kx_log *log;                 /* position mode: the rows it indexed */
    floe__kx *mem;                     /* equality mode: the rows this batch wrote */
    floe__buf fills;                   /* partial rows waiting for their file rows
                                          (write_fill.c) */
    floe__delrecs fill_paths;          /* the files they read (its paths only) */
    floe__content_list adopted;        /* data files written in bulk (floe__writer_adopt) */
    bool unlogged;                     /* it holds rows indexed without `log` */
    struct floe__open_batch *next;
} floe__open_batch;

/* One update of the group being gathered. */
typedef struct floe__group_item {
    const uint8_t *row;                /* the stash's bytes (stable), or NULL: copied */
    size_t row_off;                    /* copied: the offset in g_rows */
    uint32_t row_len;
    uint64_t time;
    int64_t diff;
} floe__group_item;

struct floe__writer {
    const floe__writer_config *cfg;
    floe__open_batch *head, *tail;     /* open batches, oldest first */
    /* the (key, batch) group being gathered */
    bool in_group;
    floe__open_batch *g_batch;
    floe__buf g_key, g_rows, scratch;
    floe__group_item *g_items;
    size_t g_n, g_cap;
    floe__arena *fill_arena;           /* rows filled while a group resolves */
    /* Hashes of the keys with a deferred partial row (write_fill.c): a
     * later group of one of them fills every deferred row first, so it
     * finds the key's row in the index.  Open addressing, 0 empty. */
    uint64_t *pending;
    size_t pending_cap, pending_n;
    floe__writer_stats stats;
    bool warned_snapshot_retraction;
    floe__part_budget budget;          /* the open batches' data files share it */
};

/* A data row into batch b, into the file of its partition; *path / *pos:
 * where it went (path owned by the file writer, valid until the next row
 * is written to the batch: a file may roll over or close early then). */
int floe__writer_data_row(floe__writer *w, floe__open_batch *b, const uint8_t *row, size_t len,
                          const char **path, uint64_t *pos, floe_error *err);
/* An equality delete of key in batch b. */
int floe__writer_eq_delete(floe__writer *w, floe__open_batch *b, const uint8_t *key, size_t len,
                           floe_error *err);
/* Index a row written to `path` at `pos` (the key index, or the batch's
 * own); was_live (may be NULL): whether the key had a live row. */
int floe__writer_index_row(floe__writer *w, floe__open_batch *b, const uint8_t *key,
                           size_t klen, const char *path, uint64_t pos, const uint8_t *row,
                           size_t len, bool *was_live, floe_error *err);
/* A partial row of key whose unchanged columns come from row `pos` of the
 * data file `path`: written once read (write_fill.c). */
int floe__writer_defer_fill(floe__writer *w, floe__open_batch *b, const uint8_t *key,
                            size_t klen, const uint8_t *row, size_t len, const char *path,
                            uint64_t pos, floe_error *err);
/* Every open batch's deferred partial rows, filled from their files
 * (one read per file) and written. */
int floe__writer_fill(floe__writer *w, floe_error *err);
/* Whether key has a deferred partial row (not filled yet). */
bool floe__writer_fill_pending(const floe__writer *w, const uint8_t *key, size_t klen);
void floe__writer_fills_free(floe__open_batch *b);
/* Resolve and write out the gathered group (write_upsert.c). */
int floe__writer_resolve_group(floe__writer *w, floe_error *err);
void floe__writer_warn(floe__writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* FLOE_WRITE_INTERNAL_H */
