/*
 * compact_internal.h - one compaction run, shared by compact.c (choosing
 * groups, committing them with validation) and compact_rewrite.c (reading
 * a group's rows with their deletes applied and writing new files).
 */
#ifndef FLOE_COMPACT_INTERNAL_H
#define FLOE_COMPACT_INTERNAL_H

#include "maint/maint_internal.h"

/* Data files (indexes into the plan) rewritten together into new files. */
typedef struct floe__compact_group {
    size_t *files;
    size_t n;
    uint64_t bytes;                  /* their size */
    double need;                     /* how badly they need it (groups go in this order) */
    bool respec;                     /* files of older specs, rewritten into the current */
} floe__compact_group;

typedef struct floe__compaction {
    floe__table *t;
    const floe__compact_options *o;
    floe__compact_result *res;
    floe__schema *schema;            /* the table's current schema as loaded (files of any
                                        older schema are read into it, by field id) */
    floe__schema *rows;              /* rows as read and written: the table's columns, then on
                                        v3 the row lineage fields (_row_id,
                                        _last_updated_sequence_number), which move with them */
    floe__file_writer_options wopts; /* the table's write properties; target_file_size
                                        the run's target */
    floe__plan *plan;                /* of the start snapshot */
    int64_t start_seq;               /* its sequence number: the new files' data seq */
    floe__live *live;                /* the plan's live rows: its deletes per data file */
    const floe__posdel_set *extra;   /* copy-on-write: more rows to leave out; NULL: none */
    floe__buf row;                   /* a row with its lineage made explicit */
} floe__compaction;

/* Set c (t, o and res given) up on its table as loaded, without reloading
 * it: write options, row schema, the current snapshot's plan and its
 * live rows (compact.c). */
int floe__compaction_start(floe__compaction *c, floe_error *err);
/* Free what c holds (not c itself). */
void floe__compaction_clear(floe__compaction *c);
/* The paths to remove from plan p when data files paths[0..n) go: those
 * of them still in p, then the delete files nothing needs any more
 * (*dropped counts those with the DVs and file-scoped deletes that go with
 * the data files).  *out (strings owned by p) is the caller's to free. */
int floe__compact_removals(const floe__compaction *c, const char *const *paths, size_t n,
                           const floe__plan *p, const char ***out, size_t *n_out,
                           uint64_t *dropped, floe_error *err);

/* c->rows for c->schema (compact_rewrite.c). */
int floe__compact_row_schema(floe__compaction *c, floe_error *err);

/* Rewrite group g's data files into new data files appended to `out`
 * (none when every row was deleted), recording where rows went in *map
 * (zeroed; the caller clears it). */
int floe__compact_rewrite(floe__compaction *c, const floe__compact_group *g,
                          floe__compact_map *map, floe__content_list *out, floe_error *err);

#endif /* FLOE_COMPACT_INTERNAL_H */
