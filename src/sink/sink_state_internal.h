/*
 * sink_state_internal.h - the public sink's state (struct floe_sink) and
 * what the files that implement floe_sink_* share: sink.c (setup, input,
 * frontiers, commits), sink_evolve.c (schema changes), sink_metrics.c
 * (the Prometheus exposition).  Nothing outside src/sink/sink*.c includes
 * it.
 */
#ifndef FLOE_SINK_STATE_INTERNAL_H
#define FLOE_SINK_STATE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "sink/keeper_internal.h"

struct floe_sink {
    char *ns, *name, *sink_id;
    bool own_catalog;                /* false when given by floe__sink_open_with */
    uint64_t version, as_of;
    bool upsert, synthetic, complete;
    bool advanced_ok;                /* the last advance (or finish) succeeded */
    floe__fileio *io;
    floe__catalog *catalog;
    floe__table *table;
    /* The schema data files are written with (append: with _diff and
     * _timestamp): the table's, or one the sink evolved it to and commits
     * with its next snapshot (floe__sealed.schema).  Owned. */
    floe__schema *data;
    int32_t data_last_column_id;     /* the table's last-column-id with it */
    floe__schema *input_owned;       /* append mode: `data` without the extras */
    const floe__schema *input;       /* rows are parsed with this (data, or input_owned) */
    floe__schema **retired;          /* earlier data and input schemas: callers' rows may
                                        still point at them (freed with the sink) */
    size_t n_retired;
    size_t stash_memory;             /* the stash's limit */
    /* A schema change below the sink's start (an input replayed after a
     * restart, --schema on a rerun) that Iceberg refuses: raised at the
     * first update or frontier past the start (floe__sink_reconcile),
     * since a later line of the replayed input may make it right. */
    char *refused;
    int refused_code;
    uint64_t replace_at;             /* a resync: the batch up to it replaces the table (0: none) */
    uint64_t *truncations;           /* times of truncations not yet in a batch, ascending:
                                        the batch holding some replaces the table with its
                                        updates from the last of them on */
    size_t n_truncations, cap_truncations;
    /* The partition spec data files are written in when it is not the
     * table's default (a change of the sink's, floe_sink_repartition): its
     * next commit makes it the table's (floe__sealed.spec).  Owned; NULL:
     * the table's. */
    json_t *spec_change;
    floe__schema *eq_schema_owned;
    const floe__schema *eq_schema;
    int32_t *eq_ids;
    size_t n_eq;
    size_t *key_cols;                /* top-level indexes of the key columns, in key order */
    size_t n_key;
    size_t key_span;                 /* 1 + the largest of key_cols */
    char *key_names;                 /* "a,b" (NULL: the whole row) */
    floe__resume resume;
    char resume_text[32];
    bool ended;                      /* floe_sink_end ran: nothing more comes */
    bool has_newest;
    uint64_t newest;                 /* the newest update time stashed (after as-of) */
    floe__minter *minter;
    floe__stash *stash;
    floe__writer *writer;
    floe__committer *committer;
    floe__keeper *keeper;            /* position mode */
    floe__bulk *bulk;                /* the snapshot batch written in bulk, while it commits
                                        (sink_bulk.c: its files join the batch when minted) */
    floe__maintainer *maintainer;    /* FLOE_MAINTAIN_AUTO */
    floe__moves *moves;              /* position mode and FLOE_MAINTAIN_AUTO: from the
                                        maintainer's compactions to the keeper */
    floe__keeper_config kcfg;
    char *index_dir;
    char index_report[512];
    int64_t last_snapshot;           /* of the last commit */
    floe__writer_config wcfg;
    floe__committer_config ccfg;
    floe__frontier input_frontier;
    floe__buf row, key;
    const uint8_t **spans;           /* scratch: start of each top-level slot */
    floe_sink_options opts;          /* its strings point into `strings` */
    floe__arena *strings;
    json_t *props;                   /* floe_sink_set_property's, for every commit */
    int (*summary_fn)(void *ctx, floe__frontier upper, const floe__metadata *base,
                      json_t *summary, floe_error *err);
    void *summary_ctx;               /* floe__sink_summary_hook's */
    bool touched;                    /* something was pushed or advanced */
    uint64_t since_publish;
    uint64_t close_ns_total, batches_sealed;
    floe__freshness fresh;
    /* read live by floe_sink_stats_get from any thread */
    _Atomic uint64_t updates_in, bytes_in, live_frontier, oldest_uncommitted_ns;
    _Atomic bool live_closed;
    pthread_mutex_t lock;            /* guards `published` */
    pthread_mutex_t commit_gate;     /* the committer's attempts and the maintainer's
                                        compaction commits, one at a time */
    floe_sink_stats published;
};

/* sink.c */
/* Publish the figures floe_sink_stats_get reads. */
void floe__sink_publish(floe_sink *s);
/* A notice through the options' on_notice (what the sink decided: a
 * schema change, a rebuilt key index). */
void floe__sink_notice(floe_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The input frontier moves to f: batches minted, closed updates written,
 * sealed batches committed (floe_sink_advance's work). */
int floe__sink_advance(floe_sink *s, floe__frontier f, floe_error *err);
/* Seal and commit every batch whose upper is at most f. */
int floe__sink_seal_and_commit(floe_sink *s, floe__frontier f, floe_error *err);
/* The key columns (key_text "a,b", or NULL: the whole row) of s->input:
 * key_cols, eq_schema, eq_ids, spans; clear_key first. */
int floe__sink_setup_key(floe_sink *s, const char *key_text, floe_error *err);
void floe__sink_clear_key(floe_sink *s);
/* The key bytes of a row of s->input into s->key. */
int floe__sink_extract_key(floe_sink *s, const uint8_t *row, size_t len, floe_error *err);
/* The same into `key`, with `spans` (1 + s->key_span pointers) as scratch:
 * reads s only, so threads with their own buffers may call it at once. */
int floe__sink_key_bytes(const floe_sink *s, const uint8_t *row, size_t len,
                         const uint8_t **spans, floe__buf *key, floe_error *err);

/* sink_bulk.c */
/* The bulk's files into the batch that holds its time, once minted. */
int floe__bulk_adopt(floe__bulk *b, floe_error *err);
/* Position mode's key index opened (again) for s->eq_schema, and its report. */
int floe__sink_open_keeper(floe_sink *s, floe_error *err);

/* Append mode: s->input_owned and s->input, s->data without _diff and
 * _timestamp (FLOE_EINCOMPATIBLE when it does not end with them). */
int floe__sink_append_input(floe_sink *s, floe_error *err);

/* sink_evolve.c */
/* At open: s->data, s->input and the key from the table and the declared
 * schema (NULL: the table's own): the table's schema when it was just
 * created from it or matches it, else evolved to it from the sink's start
 * on (committed with its first snapshot), or refused (raised at once for a
 * fresh sink, at the first update past the start of a resuming one). */
int floe__sink_declare(floe_sink *s, const floe__schema *declared, floe_error *err);
/* --partition-by on an existing table: the spec data files are written in
 * from the sink's start (floe_sink_repartition below the start). */
int floe__sink_declare_spec(floe_sink *s, const char *text, floe_error *err);
/* Before the first update or frontier at or past the sink's start: a schema
 * change planned below it (an input replayed after a restart, --schema on a
 * rerun) is applied, or its refusal returned. */
int floe__sink_reconcile(floe_sink *s, floe_error *err);
/* A resync of a just opened (resuming) sink's table: the rows pushed at
 * times below `at` (all of them at at-1) are the table's whole content as
 * of `at`, in `user`'s shape (with `key`), and the commit of the batch up
 * to `at` replaces every file the table has with them (schema evolved by
 * floe__schema_replace).  The key index is read again after it. */
int floe__sink_replace(floe_sink *s, uint64_t at, const floe__schema *user, const char *key,
                       floe_error *err);

#endif /* FLOE_SINK_STATE_INTERNAL_H */
