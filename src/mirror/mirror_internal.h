/*
 * mirror_internal.h - one Postgres replication slot into many floe sinks
 * (the public floe_pg_* of floe.h; docs/postgres.md, docs/internals/mirror.md).
 *
 *   mirror.c         the public object: options, open, run, stop, stats, metrics
 *   mirror_setup.c   the server's checks, the tables (columns, types, keys),
 *                    the publication, a sink per table
 *   mirror_slot.c    the replication slot: found, created with an exported
 *                    snapshot, or a temporary one for copies after a restart
 *   mirror_copy.c    the initial copy inside an exported snapshot: tables and
 *                    page ranges on worker threads, written in bulk
 *   mirror_stage.c   a ranged copy resumable after a kill: finished ranges
 *                    staged on a branch, the keys changed since they were read
 *   mirror_stream.c  the change stream: transactions, frontiers, commits on a
 *                    wall clock, the slot's confirmed flush LSN
 *   mirror_row.c     tuples and COPY lines into rows of a table's sink
 *   mirror_txn.c     the rows a transaction left per key (retractions of
 *                    tables whose old rows Postgres does not send), and the
 *                    filter of keys a streamed transaction touches once
 *   mirror_spill.c   streamed (in-progress) transactions in files until
 *                    their commit or abort
 *   mirror_ddl.c     a table that changes shape (ALTER TABLE) followed: its
 *                    sink's schema evolves at the change's position
 *   mirror_resync.c  a table copied again in place (a change Iceberg cannot
 *                    take, or --resync) while the others stream on
 *   mirror_life.c    a mirror's lifecycle: tables dropped from it
 *                    (--drop-table), the mirror retired (--retire)
 *   mirror_part.c    partitioned tables, published through their root: the
 *                    checks, and ATTACH/DETACH/TRUNCATE of a partition found
 *   mirror_verify.c  floe pg --verify: every table compared with Postgres at
 *                    one LSN (floe_pg_verify)
 *
 * Time is the LSN: every change of a transaction is pushed at the
 * transaction's commit LSN, and the frontier moves to a commit's end LSN
 * (or a keepalive's WAL position between transactions): every transaction
 * still to come commits at or after it.  A table copied inside the
 * snapshot exported at consistent point C holds the state before every
 * transaction committing at C or later: its snapshot batch is
 * [C-1, C) and its recorded frontier [C].  The slot's confirmed flush LSN
 * is only ever reported as the minimum of the tables' committed frontiers
 * (SPEC 7.5), and each table skips changes below its own frontier, so a
 * rerun after a crash at any point loses and doubles nothing.
 */
#ifndef FLOE_MIRROR_INTERNAL_H
#define FLOE_MIRROR_INTERNAL_H

#include <pthread.h>

#include "sink/sink_internal.h"
#include "source/pg_internal.h"

/* ---- the rows a transaction left per key (mirror_txn.c) ----------------------------------
 * A change Postgres sends without the old row (REPLICA IDENTITY DEFAULT or
 * USING INDEX) is a retraction by key, which the sink resolves against
 * rows of earlier times only.  Within one transaction (one time) the
 * mirror must therefore net a key's changes itself: it remembers the row
 * it pushed last for each key the transaction touched, and retracts that
 * exact row (which cancels it) when the key changes again.  Bytes are
 * bounded by `max` (FLOE_ELIMIT past it); cleared at every commit. */
typedef struct floe__txnmap floe__txnmap;

int floe__txnmap_new(size_t max_bytes, floe__txnmap **out, floe_error *err);
void floe__txnmap_free(floe__txnmap *m);
void floe__txnmap_clear(floe__txnmap *m);
/* The entry of (table, key): *found, and the row (NULL: the key was
 * deleted in this transaction), valid until the next put or clear. */
void floe__txnmap_get(const floe__txnmap *m, uint32_t table, const uint8_t *key, size_t klen,
                      bool *found, const uint8_t **row, size_t *rlen);
/* Every key of `table` counts as deleted (a TRUNCATE). */
void floe__txnmap_truncate(floe__txnmap *m, uint32_t table);
/* Set the entry (row NULL: deleted). */
int floe__txnmap_put(floe__txnmap *m, uint32_t table, const uint8_t *key, size_t klen,
                     const uint8_t *row, size_t rlen, floe_error *err);
/* Rewrite the entries of `table` (a schema change in the middle of a
 * transaction): fn gives each one's new key and row (row NULL: deleted). */
int floe__txnmap_rewrite(floe__txnmap *m, uint32_t table,
                         int (*fn)(void *ctx, const uint8_t *key, size_t klen,
                                   const uint8_t *row, size_t rlen, floe__buf *nkey,
                                   floe__buf *nrow, floe_error *err),
                         void *ctx, floe_error *err);
size_t floe__txnmap_bytes(const floe__txnmap *m);
size_t floe__txnmap_count(const floe__txnmap *m);     /* keys remembered */

/* The keys a spilled transaction touches only once (see mirror_txn.c):
 * sized for `changes` (at most max_bytes), fed every Relation message and
 * change of the transaction in a first pass (relation, add, truncate),
 * sealed, then fed the same Relation messages in the replay, where
 * `once` says a change is the only one of its key(s): its entry in the
 * map would never be read.  False when not sure. */
typedef struct floe__netfilter floe__netfilter;
int floe__netfilter_new(uint64_t changes, size_t max_bytes, floe__netfilter **out,
                        floe_error *err);
void floe__netfilter_free(floe__netfilter *f);
size_t floe__netfilter_bytes(const floe__netfilter *f);
void floe__netfilter_relation(floe__netfilter *f, const floe__pgo_msg *m);
void floe__netfilter_add(floe__netfilter *f, const floe__pgo_msg *m);
void floe__netfilter_truncate(floe__netfilter *f);
void floe__netfilter_seal(floe__netfilter *f);
bool floe__netfilter_once(floe__netfilter *f, const floe__pgo_msg *m);

/* ---- streamed transactions on disk (mirror_spill.c) -------------------------------------------
 * One unnamed file per in-progress transaction (top-level xid) in `dir`
 * (NULL: $TMPDIR or /tmp): its messages in protocol 1 form, each with the
 * xid of the (sub)transaction that made it.  Nothing outlives the process. */
typedef struct floe__spill floe__spill;
typedef struct floe__spill_reader floe__spill_reader;

int floe__spill_new(const char *dir, floe__spill **out, floe_error *err);
void floe__spill_free(floe__spill *s);
void floe__spill_clear(floe__spill *s);          /* every transaction dropped */
/* Stream Start: `first` begins the transaction afresh; a later segment
 * needs its first (FLOE_EINPUT). */
int floe__spill_start(floe__spill *s, uint32_t xid, bool first, floe_error *err);
/* A message of transaction xid made by subxid: its kind and its body (what
 * follows the streamed xid). */
int floe__spill_add(floe__spill *s, uint32_t xid, uint32_t subxid, char kind,
                    const uint8_t *body, size_t n, floe_error *err);
/* Stream Stop: what is buffered goes to the file. */
int floe__spill_stop(floe__spill *s, uint32_t xid, floe_error *err);
/* Stream Abort of subtransaction subxid: its records read as aborted. */
int floe__spill_abort_sub(floe__spill *s, uint32_t xid, uint32_t subxid, floe_error *err);
void floe__spill_drop(floe__spill *s, uint32_t xid);   /* no-op when absent */
bool floe__spill_has(const floe__spill *s, uint32_t xid);
uint64_t floe__spill_bytes(const floe__spill *s);      /* held now, every transaction */
size_t floe__spill_count(const floe__spill *s);
uint64_t floe__spill_records(const floe__spill *s, uint32_t xid);
/* Read xid's records in order (FLOE_EINPUT when it is not held).  Each
 * next: a message (kind byte first, valid until the next call), the
 * subxid that made it, whether that subtransaction aborted; *end after
 * the last.  The transaction must not be dropped while read. */
int floe__spill_read(floe__spill *s, uint32_t xid, floe__spill_reader **out, floe_error *err);
int floe__spill_next(floe__spill_reader *r, const uint8_t **msg, size_t *n, uint32_t *subxid,
                     bool *aborted, bool *end, floe_error *err);
void floe__spill_rewind(floe__spill_reader *r);
void floe__spill_reader_free(floe__spill_reader *r);

/* ---- tables --------------------------------------------------------------------------------- */
typedef struct floe__mcol {
    char *name;
    int32_t attnum;          /* pg_attribute.attnum: a column's identity (0: not known) */
    uint32_t type_oid;       /* pg_attribute.atttypid (a domain's own oid), as Relation says;
                                0: not known yet */
    int32_t typmod;
    bool not_null;
    bool key;                /* one of the table's key columns */
    bool toastable;          /* can be stored out of line (TOAST) */
    floe__pg_type type;
    /* from the catalog, for a column added by ALTER TABLE (mirror_ddl.c) */
    bool has_missing;        /* atthasmissing: rows before it read `missing` */
    char *missing;           /* that value as text (NULL: SQL NULL) */
    bool has_default;        /* a column default (pg_attrdef) */
} floe__mcol;

typedef struct floe__mtable {
    struct floe_pg *pg;      /* the mirror it belongs to (for warnings) */
    uint32_t index;          /* in the mirror's table array */
    char *nsp, *rel;         /* the Postgres table */
    char *source;            /* "nsp.rel", for messages */
    char *ident;             /* the Iceberg table, NS.NAME */
    char *sink_id;           /* "pg:<slot>:<nsp>.<rel>" */
    uint32_t relid;          /* pg_class oid */
    char replident;          /* pg_class.relreplident at setup */
    char stream_replident;   /* as the last Relation message said ('f': full old rows) */
    floe__mcol *cols;
    size_t ncols;
    size_t *keys;            /* key columns (primary key, or the replica identity index) */
    size_t nkeys;            /* 0: keyed by the whole row (REPLICA IDENTITY FULL, no key) */
    char *schema_text;       /* the column list the sink is opened with */
    char *key_text;          /* "a,b" or NULL */
    char *partition_by;      /* its --partition-by spec, or NULL */
    char *shape;             /* its catalog rows as described (floe__mirror_shape) */
    floe_sink *sink;
    const floe__schema *schema;
    floe_row *row, *keyrow, *oldrow;
    uint64_t start;          /* changes committed below it are in the table already */
    bool copy;               /* needs the initial copy */
    bool existed;            /* its Iceberg table existed before this run */
    bool refused;            /* setup: its description failed */
    /* TRUNCATEs of it in the transaction committed at trunc_lsn: its
     * changes after the k-th are at time trunc_lsn + k (below the
     * commit's end LSN, which the frontier moves to) */
    uint64_t trunc_lsn;
    uint32_t truncs;
    /* The shape of the last Relation message (names, types, key flags;
     * nothing else), compared with `cols` at the table's next change that
     * is not below `start` (historic shapes before a copy do not count):
     * mirror_ddl.c. */
    floe__mcol *msg;
    size_t nmsg;
    bool msg_pending;
    /* The catalog as read at setup (resuming tables): a change made while
     * floe was down with no row changed since, applied once the stream
     * has passed the WAL position read after it (mirror_ddl.c). */
    floe__mcol *cat;
    size_t ncat;
    uint64_t cat_at;         /* 0: nothing to check */
    bool shape_due;          /* a shape found so, not committed yet */
    /* A resync (mirror_resync.c): due (asked by --resync, or a change
     * Iceberg cannot take in place; the table's changes are skipped until
     * it starts), and while its copy runs (changes below resync_at, the
     * temporary slot's consistent point, are in the copy). */
    bool resync_due;
    char resync_why[400];
    bool resyncing;
    uint64_t resync_at;
    uint64_t resync_rows;
    uint64_t resync_t0;      /* monotonic ns */
    uint64_t input;          /* the sink's input frontier */
    uint64_t pending;        /* updates pushed since its last commit */
    int64_t pending_since;   /* Postgres commit time (protocol time) of the oldest of them */
    uint64_t last_commit_ns; /* monotonic */
    uint64_t copied_rows;
    bool copied;             /* this run committed its initial copy */
    bool relation_seen;      /* a Relation message came in this session */
    bool toast_gap;          /* the change being read lacks an unchanged TOAST value */
    bool rejoined;           /* listed again after --drop-table: resynced, and its frontier
                                does not hold the slot's checks (mirror_slot.c) */
    /* Its stored generated columns at setup (names only): pgoutput before
     * Postgres 18 does not send them, COPY does not read them; a Relation
     * message naming one is refused (the copy and the stream would differ). */
    floe__mcol *generated;
    size_t ngenerated;
    /* A partitioned table (relkind 'p', mirror_part.c): its partitions as
     * last verified ("oid:relfilenode,..." of every partition, by oid),
     * whether they were verified for this round's commit, the xids of the
     * TRUNCATEs of it the stream brought (they rewrite every leaf), and an
     * unexplained rewrite of a leaf waiting for the stream to pass
     * part_wait (a TRUNCATE of the root not yet received explains it). */
    bool partitioned;
    char *parts;
    bool parts_ok;
    uint32_t trunc_xids[8];
    uint32_t ntrunc_xids;
    uint64_t part_wait;
} floe__mtable;

/* ---- the mirror ------------------------------------------------------------------------------ */
typedef struct floe__mslot {
    bool exists;
    bool created;            /* by this run (its snapshot is exported on `repl`) */
    uint64_t confirmed;      /* confirmed_flush_lsn */
    uint64_t consistent;     /* created: the consistent point */
    char snapshot[96];       /* created: the exported snapshot's name */
} floe__mslot;

struct floe_pg {
    floe_pg_options opts;    /* opts.sink points to `sink` */
    floe_sink_options sink;  /* its strings and connect options in `strings` */
    const char *slot_name, *pub_name;  /* in `strings`, as opts' strings are */
    char *database;
    char system_id[24];      /* pg_control_system()'s system_identifier */
    floe__arena *strings;
    floe__pg_conn *conn;     /* queries, copies, lag */
    floe__pg_conn *repl;     /* the slot's walsender */
    floe__pg_conn *tmp;      /* a temporary slot's walsender, during copies */
    floe__pg_conn *rconn;    /* a resync's copy (in its temporary slot's snapshot) */
    floe__mtable *resync;    /* the table being copied again, or NULL */
    int server_version;
    floe__catalog *catalog;
    floe__fileio *io;
    floe__mtable *tables;
    size_t ntables;
    floe__mtable *last_table;  /* the table of the last change (a lookup cache) */
    floe__mslot slot;
    floe__txnmap *txn;
    floe__pgo_decoder dec;
    floe__buf scratch, fields_buf, keybuf, fill, packed;
    floe__pg_field *fields;  /* a COPY line's, sized to the widest table */
    size_t cap_fields;
    int stop_pipe[2];
    /* the stream */
    bool in_txn;
    uint64_t txn_lsn;        /* the open transaction's commit LSN: its changes' time */
    uint32_t txn_xid;        /* its xid (Begin) */
    int64_t txn_time;        /* its commit time (protocol time) */
    uint64_t txn_changes;    /* its changes of mirrored tables */
    uint64_t frontier;       /* G: every transaction to come commits at or after it */
    uint64_t received;       /* the end of the last message received */
    uint64_t server_lsn;     /* the server's WAL position, as last seen */
    uint64_t reported;       /* the flush LSN last reported to the slot */
    uint64_t stop_lsn;
    bool streaming;
    /* Streamed transactions (protocol 2): their files, the top-level xid
     * of the open stream block, and a Stream Commit being replayed (first
     * pass: the filter of keys touched once; second: the changes, as if
     * they came between a Begin and a Commit), a turn of the loop at a
     * time. */
    floe__spill *spill;
    uint32_t stream_xid;
    floe__spill_reader *replay;
    int replay_pass;         /* 1, 2 */
    uint64_t replay_end_lsn;
    floe__netfilter *netf;
    bool net_skip;           /* the change being replayed is its key's only one */
    uint64_t streamed_txns, streamed_aborts;
    /* counters (the stream's thread), published under lock */
    uint64_t transactions, inserts, updates, deletes, bytes_in, copy_rows, tables_copied;
    uint64_t schema_changes, resyncs, truncates;
    uint64_t reconnects;
    bool reconnecting;
    /* A mirrored table was dropped or replaced under its name while
     * streaming (floe__mirror_names_verify): floe_pg_run opens the tables
     * again at once. */
    bool reopen;
    /* Held by floe_pg_metrics (another thread) and by a reconnection while
     * it frees the tables; tables_ready is false while they are reopened. */
    pthread_mutex_t tables_lock;
    bool tables_ready;
    pthread_mutex_t lock;
    floe_pg_stats published;
    /* floe_pg_verify (mirror_verify.c): the consistent point C the tables
     * are committed up to and no further (0: not verifying), and the
     * connection holding the snapshot exported at C. */
    uint64_t verify_at;
    floe__pg_conn *vconn;
};

/* A floe_pg with its options copied and nothing opened (floe_pg_open's
 * first step; the lifecycle commands start from it too). */
int floe__mirror_new(const floe_pg_options *o, floe_pg **out, floe_error *err);

/* Messages through the options' callbacks. */
void floe__mirror_notice(floe_pg *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void floe__mirror_warn(floe_pg *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Publish the figures floe_pg_stats_get reads. */
void floe__mirror_publish(floe_pg *pg);
/* Whether a stop was asked (floe_pg_stop or the stop descriptor). */
bool floe__mirror_stopping(floe_pg *pg);

/* mirror_setup.c: connect, check the server, resolve tables and the
 * publication, open a sink per table (tables without progress are marked
 * for copying). */
int floe__mirror_setup(floe_pg *pg, floe_error *err);

/* The columns of table `relid` in the catalog, read on `c` (in its
 * transaction's snapshot): names, attnums, types (resolved), nullability,
 * TOAST, and what ALTER TABLE ... ADD COLUMN left (atthasmissing, its
 * value, a default).  *out is the caller's (floe__mirror_cols_free). */
int floe__mirror_columns(floe_pg *pg, floe__pg_conn *c, uint32_t relid, const char *source,
                         floe__mcol **out, size_t *n, floe_error *err);
void floe__mirror_cols_free(floe__mcol *cols, size_t n);
/* The converter of a type oid with typmod (domains, arrays, ranges resolved). */
int floe__mirror_resolve_type(floe_pg *pg, uint32_t oid, int32_t typmod, floe__pg_type *out,
                              floe_error *err);

/* The table's column list ("name" type [not null], ...) from t->cols and
 * its key ("a,b", NULL without one) into t->schema_text and t->key_text;
 * key columns floe cannot name are FLOE_EUNSUPPORTED. */
int floe__mirror_declaration(floe__mtable *t, floe_error *err);
/* Open t's sink: on the Iceberg table as it is when it resumes (the shape
 * it was mirrored in; the catalog's kept in t->cat), else created or
 * evolved from the catalog's shape (t->copy). */
int floe__mirror_open_sink(floe_pg *pg, floe__mtable *t, floe_error *err);
/* Free t's sink (what it held uncommitted goes) and open it again on the
 * table as committed, with the same key: a resync starts from it. */
int floe__mirror_reopen_sink(floe_pg *pg, floe__mtable *t, floe_error *err);
/* The columns of t an update may leave out (TOAST without REPLICA
 * IDENTITY FULL), as `"a", "b"` (empty: none). */
void floe__mirror_toast_gap(const floe_pg *pg, const floe__mtable *t, char *out, size_t n);
/* pg->fields holds n fields. */
int floe__mirror_fit_fields(floe_pg *pg, size_t n, floe_error *err);

/* For the lifecycle commands (mirror_life.c): connect pg->conn and check
 * the server; the tables of an option's list, each with its Iceberg table
 * and sink id (not described); the catalog. */
int floe__mirror_connect(floe_pg *pg, floe_error *err);
int floe__mirror_name_tables(floe_pg *pg, const char *list, const char *option,
                             floe_error *err);
int floe__mirror_open_catalog(floe_pg *pg, floe_error *err);
/* t's Iceberg table as the catalog has it now (FLOE_ENOTFOUND: none). */
int floe__mirror_open_iceberg(floe_pg *pg, const floe__mtable *t, floe__table **out,
                              floe_error *err);

/* mirror_life.c: whether floe pg --drop-table left the table (its
 * metadata md) with sink_id's progress at `frontier`, and it has not moved
 * since: the table property floe.pg.dropped.<sink id> names it. */
bool floe__mirror_dropped_at(const floe__metadata *md, const char *sink_id,
                             floe__frontier frontier);

/* mirror_slot.c: find the slot (pg->slot) and check it against the
 * tables' progress; create it when missing (exporting a snapshot on
 * pg->repl); a temporary slot for copies when it exists (pg->tmp). */
int floe__mirror_slot_prepare(floe_pg *pg, floe_error *err);
/* Create a slot exporting a snapshot on `c` (temporary or not): its
 * consistent point and snapshot name. */
int floe__mirror_slot_create(floe_pg *pg, floe__pg_conn *c, const char *name, bool temporary,
                             uint64_t *consistent, char *snapshot, size_t cap, floe_error *err);

/* mirror_copy.c: copy every table marked for it inside `snapshot`, each as
 * its snapshot batch at consistent point `at` (committed table by table),
 * on pg->opts.copy_workers connections and threads (the exporting
 * connection must stay idle meanwhile). */
int floe__mirror_copy(floe_pg *pg, const char *snapshot, uint64_t at, floe_error *err);
/* BEGIN a read-only transaction in `snapshot` on c. */
int floe__mirror_in_snapshot(floe__pg_conn *c, const char *snapshot, floe_error *err);
/* t's pg_class row version and columns as a query on c sees them (in a
 * snapshot: as they were then), a string to compare. */
int floe__mirror_shape(floe__pg_conn *c, const floe__mtable *t, char **out, floe_error *err);
/* Lock t on c (in a snapshot's transaction) against ALTER TABLE until it
 * ends; *changed when t's catalog rows changed after that snapshot (then
 * its COPY would read the table empty or fail: take a newer snapshot) or,
 * given `described`, differ from it. */
int floe__mirror_hold_table(floe_pg *pg, floe__pg_conn *c, const floe__mtable *t,
                            const char *described, bool *changed, floe_error *err);
/* The heap pages of a range of the initial copy of a table of `pages`
 * pages by `workers` workers (mirror_copy.c).  A range's rows make at
 * least one data file of their own (staged as the range finishes), so a
 * range is not made smaller than what fills a file at target_file_size
 * (heap pages hold about HEAP_PER_FILE_BYTE times the bytes of their
 * Parquet), unless that leaves a worker idle: then each worker's share is
 * one range.  Many small files would be compacted right after the copy
 * (reading and writing every row once more); a few are left as they are.
 * A larger table is read in RANGES_PER_WORKER ranges per worker (they even
 * out the workers' speeds and bound what a kill loses), each at least
 * MIN_RANGE_PAGES. */
uint64_t floe__mirror_range_pages(uint64_t pages, int workers, uint64_t target_file_size);
/* "COPY (SELECT <t's columns> FROM <t>" into b (the caller ends it). */
int floe__mirror_select_sql(const floe__mtable *t, floe__buf *b, floe_error *err);
/* COPY t's columns TO STDOUT on c. */
int floe__mirror_copy_begin(floe__pg_conn *c, const floe__mtable *t, floe_error *err);
/* Up to `max` lines of the COPY running on c into t's sink at `time`;
 * *done once it has ended. */
int floe__mirror_copy_some(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, uint64_t time,
                           uint64_t max, bool *done, floe_error *err);

/* mirror_stage.c (see there): the ranges of a copy staged on the branch
 * floe-copy, and what a later copy in a new snapshot takes from them. */
#define FLOE__MIRROR_COPY_BRANCH "floe-copy"
typedef struct floe__mstage {
    uint64_t at;             /* C: the staged ranges were read in a snapshot at C */
    uint64_t per, nranges;   /* the plan: pages per range, ranges (the last one open) */
    bool *done;              /* per range: staged */
    size_t ndone;
    char **files;            /* the staged data files */
    size_t nfiles;
    /* K: keys the changes from the slot's confirmed LSN up to the new
     * snapshot name (see mirror_stage.c) */
    floe__buf keys;
    uint64_t *offs;
    size_t nkeys, cap;
    uint64_t *slots;         /* open addressing: entry index + 1, 0 empty */
    size_t nslots;
} floe__mstage;
/* At a copy of t in a new snapshot consistent at `at` (on pg->rconn): the
 * staged ranges it may build on, or *out NULL (copied whole; a notice says
 * why when something was staged). */
int floe__mirror_stage_resume(floe_pg *pg, floe__mtable *t, uint64_t at, floe__mstage **out,
                              floe_error *err);
void floe__mirror_stage_free(floe__mstage *s);     /* accepts NULL */
/* Whether a key (floe__mirror_row_key's bytes) is in K (s may be NULL). */
bool floe__mirror_stage_changed(const floe__mstage *s, const uint8_t *key, size_t len);
/* The COPY of the rows of K's keys [lo, hi) (at most one query's). */
int floe__mirror_stage_keys_sql(const floe__mstage *s, const floe__mtable *t, size_t lo,
                                size_t hi, floe__buf *b, floe_error *err);
size_t floe__mirror_stage_key_queries(const floe__mstage *s);
void floe__mirror_stage_key_range(const floe__mstage *s, size_t q, size_t *lo, size_t *hi);
/* Stage the parts b finished since (tags: range numbers) on the branch,
 * recording the copy at `at` of t (shape: its catalog rows in the
 * snapshot; per, n: the plan; done: per range, updated).  A failure only
 * warns: the copy goes on without staging. */
int floe__mirror_stage_record(floe_pg *pg, floe__mtable *t, floe__bulk *b, uint64_t at,
                              const char *shape, uint64_t per, uint64_t n, bool *done,
                              floe_error *err);

/* mirror_ddl.c (see there): a Relation message remembered; t followed
 * into the shape it tells at the table's next change (time `at`); the
 * catalog read at setup checked once the stream passed it; t's rows,
 * keys and recorded shape (floe.pg.columns, floe.pg.key) for its sink's
 * schema, with `cols` (taken; may be t->cols) as its columns. */
int floe__mirror_relation(floe_pg *pg, floe__mtable *t, const floe__pgo_msg *m,
                          floe_error *err);
int floe__mirror_follow(floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err);
int floe__mirror_check_catalog(floe_pg *pg, floe__mtable *t, floe_error *err);
int floe__mirror_adopt(floe__mtable *t, floe__mcol *cols, size_t n, floe_error *err);
/* A resync's shape: the catalog `cat` (taken) read in its snapshot on c,
 * planned against t's columns (renamed columns keep their field ids), and
 * the sink's table replaced from `at` (floe__sink_resync). */
int floe__mirror_reshape_whole(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, floe__mcol *cat,
                               size_t ncat, uint64_t at, floe_error *err);

/* mirror_resync.c: mark t for a resync (why: for messages); start the
 * next one due, or take the running one's next COPY lines (once the
 * stream is between transactions); abandon a running one (a stop). */
void floe__mirror_resync_mark(floe_pg *pg, floe__mtable *t, const char *why);
int floe__mirror_resync_step(floe_pg *pg, floe_error *err);
/* Copy the rest of the running resync and commit it, now. */
int floe__mirror_resync_complete(floe_pg *pg, floe_error *err);
void floe__mirror_resync_abandon(floe_pg *pg);

/* mirror_part.c: partitioned tables, published through their root
 * (publish_via_partition_root).  Setup: t's partitions described on pg->conn
 * (refusing partitions whose replica identity does not fit the root's), the
 * publication checked; a leaf partition mirrored while its root's changes
 * carry it is refused.  The partitions' fingerprint as c sees them (in a
 * copy's snapshot) into t->parts; its short form (floe.pg.partitions) for
 * the commits; a resuming table whose recorded form differs is resynced.
 * Before each round of commits, the partitions are verified (t->parts_ok):
 * ATTACH, DETACH, DROP and TRUNCATE of a partition send no change, so a
 * difference other than an empty new partition or the stream's own
 * TRUNCATE of the root resyncs the table. */
int floe__mirror_part_describe(floe_pg *pg, floe__mtable *t, char kind, bool is_partition,
                               floe_error *err);
bool floe__mirror_part_via_root(const floe_pg *pg);
int floe__mirror_part_publication(floe_pg *pg, floe_error *err);
int floe__mirror_part_read(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, floe_error *err);
int floe__mirror_part_resumed(floe_pg *pg, floe__mtable *t, const char *recorded,
                              floe_error *err);
int floe__mirror_part_verify(floe_pg *pg, floe_error *err);
void floe__mirror_part_truncated(floe_pg *pg, floe__mtable *t);
/* The floe.pg.partitions property of t's commits (a partitioned table). */
int floe__mirror_part_record(floe__mtable *t, floe_error *err);
/* mirror_verify.c: a resync due while verifying (it would commit past C):
 * the error that says so, naming t. */
int floe__mirror_verify_refuse_resync(const floe__mtable *t, floe_error *err);

/* mirror_life.c: whether each mirrored name still denotes the table
 * mirrored (dropped, or replaced by DROP + CREATE or a rename swap while
 * streaming: Postgres sends nothing of it); else pg->reopen and
 * FLOE_ECONFLICT naming it. */
int floe__mirror_names_verify(floe_pg *pg, floe_error *err);

/* mirror_stream.c: stream from the slot until stopped, done or failed. */
/* Advance t's sink to `at`, its commit recording floe.pg.lsn (at) and
 * floe.pg.slot-confirmed-lsn. */
int floe__mirror_advance(floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err);
int floe__mirror_stream(floe_pg *pg, floe_error *err);
/* Abandon a replay under way (a reconnection, the end). */
void floe__mirror_replay_end(floe_pg *pg);

/* mirror_row.c: rows of table t. */
/* From a TupleData into `row`.  fill: row bytes (whole or partial) whose
 * slots stand in for values Postgres left out as unchanged TOAST ('u');
 * NULL when none.  Without a value for one, `row` is a partial row
 * (sink/partial.c), or, where the sink cannot fill it, FLOE_EUNSUPPORTED
 * with t->toast_gap set.
 * key_only: only the key columns are read (a key tuple). */
int floe__mirror_tuple_row(floe_pg *pg, floe__mtable *t, const floe__pgo_tuple *tup,
                           const floe__buf *fill, bool key_only, floe_row *row,
                           floe_error *err);
/* From the fields of a COPY line into t->row. */
int floe__mirror_copy_row(floe_pg *pg, floe__mtable *t, const floe__pg_field *fields,
                          floe_error *err);
/* The same into `out` with `scratch`: reads t only, so the copy's workers
 * call it at once, each with its own buffers. */
int floe__mirror_copy_fields(const floe__mtable *t, const floe__pg_field *fields,
                             floe__buf *scratch, floe__buf *out, floe_error *err);
/* The key bytes of a row of t (its key columns' slots in key order; the
 * whole row when keyed by it) into out. */
int floe__mirror_row_key(const floe__mtable *t, const floe_row *row, floe__buf *out,
                         floe_error *err);
/* The same from a row's bytes (any thread). */
int floe__mirror_bytes_key(const floe__mtable *t, const uint8_t *row, size_t len,
                           floe__buf *out, floe_error *err);

#endif /* FLOE_MIRROR_INTERNAL_H */
