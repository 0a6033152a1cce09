/*
 * sink_bulk.c - a fresh sink's snapshot batch written in bulk: rows of one
 * time, all insertions, straight into data files by parts that run on
 * threads of their caller (the Postgres mirror's copy workers), and the key
 * index built from what they wrote.  It owns the parts, the bounded queue
 * of index blocks between them and the sink's thread, and handing the
 * parts' files to the writer's snapshot batch when the advance past its
 * time mints it; the batch then seals and commits as any other (sink.c),
 * as one snapshot.
 *
 * Why no stash and no groups: the snapshot batch starts from an empty
 * table and its updates all have one time, so consolidation has nothing to
 * sum and a key's group is its one row (a primary-key duplicate is two
 * rows, as the writer would write them too, without the warning).  Why no
 * log: the attempt is marked unlogged (floe__sealed.unlogged), as the
 * keeper does for any attempt larger than half its checkpoint, so the index
 * is checkpointed after the commit; a crash before that checkpoint leaves a
 * snapshot whose token no log record has, which the next start reads from
 * the table (keyindex.md).
 *
 * On a partitioned table a part writes through a partition writer
 * (part_writer.c: rows held per partition, each partition's written as one
 * file, within the part's share of memory); else through one file writer.  Parts make their writers on
 * their own threads, from a copy of the table pinned at begin
 * (floe__table_pin), never from s->table, which the sink's thread commits
 * and reloads meanwhile.  Its index entries go to the sink's thread in blocks (one
 * data file each, at most BLOCK_BYTES; up to MAX_CUR filled at once, one
 * per file the rows go to), at most QUEUE_BLOCKS of them waiting: a part
 * that finds the queue full waits (memory stays bounded whatever the table's
 * size), and the key index itself spills to disk within its budget.  Each
 * part's row groups get a share of the sink's memory beside the index.
 *
 * Staging (a copy resumable range by range): when asked, each finished
 * part's files are also committed, on the sink's thread, to a branch of the
 * table (not main), with the caller's summary saying what they hold; main
 * sees them only when the batch commits.  Files once staged are never
 * removed here: the branch references them.
 *
 * Threads: the parts' writes touch only the part, its file writer (the
 * table's FileIO is thread-safe, the table handle is only read) and the
 * queue under `mu`.  The key index is touched on the sink's thread only.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <time.h>

#include "sink/sink_state_internal.h"

#define BLOCK_BYTES ((size_t)1 << 20)
#define QUEUE_BLOCKS 8
#define MIN_ROW_GROUP ((size_t)4 << 20)
#define REC_HEAD 20                       /* u32 key length, u64 pos, u64 row hash */

typedef struct block {
    struct block *next;
    char *path;                           /* the data file its rows are in */
    floe__buf recs;                       /* REC_HEAD + key, per row */
} block;

struct floe__bulk {
    floe_sink *s;
    uint64_t time;
    bool indexed;                         /* position mode: the key index is built */
    floe__kx_builder *build;              /* more rows than the memory tier holds: the
                                             index is built in sorted runs */
    floe__file_writer_options fopts;      /* the table's, row groups within a share */
    size_t share;                         /* a part's row groups together, bytes */
    floe__table *pinned;                  /* the table at begin, for the parts' writers
                                             (the sink's thread commits and reloads
                                             s->table meanwhile) */
    pthread_mutex_t mu;
    pthread_cond_t cv;                    /* a block queued or taken, a part ended */
    /* under mu */
    block *head, *tail;
    size_t queued;
    size_t parts_open;                    /* made and not yet finished or freed */
    size_t finished;                      /* parts finished */
    bool cancelled;
    floe__content_list files;             /* finished parts' data files */
    uint64_t rows;
    floe__content_list unstaged;          /* staging: copies of finished parts' files */
    uint64_t *tags;                       /* staging: the finished parts' tags */
    size_t ntags, cap_tags;
    /* staging, the sink's thread only */
    const char *branch;                   /* NULL: no staging */
    int64_t staged_head;                  /* the branch's head this bulk committed, or -1 */
    bool keep;                            /* something was staged: files stay */
    floe__content_list staging;           /* taken, to commit */
    uint64_t *taken;
    size_t ntaken;
};

#define MAX_CUR 16                        /* blocks being filled by one part at once */

struct floe__bulk_part {
    floe__bulk *b;
    uint64_t tag;
    floe__part_writer *w;                 /* partitioned: rows held per partition */
    floe__file_writer *fw;                /* else one file at a time */
    floe__part_budget budget;             /* its row groups: the part's share */
    const uint8_t **spans;
    floe__buf key;
    block *cur[MAX_CUR];                  /* being filled, one per data file */
    size_t ncur;
    uint64_t rows;
    bool ended;                           /* finished, or counted out by free */
};

static void block_free(block *k)
{
    if (!k)
        return;
    floe__free(k->path);
    floe__buf_free(&k->recs);
    floe__free(k);
}

/* ---- the sink's side ---------------------------------------------------------------------- */

int floe__bulk_begin(floe_sink *s, uint64_t time, size_t max_parts, uint64_t expect_rows,
                     floe__bulk **out, floe_error *err)
{
    *out = NULL;
    FLOE_RETURN_IF(!s->upsert, err, FLOE_EINVAL, "a bulk snapshot batch needs upsert mode");
    FLOE_RETURN_IF(s->resume.has || s->touched || s->ended || s->bulk || time != s->as_of,
                   err, FLOE_ESTATE, "a bulk snapshot batch needs a fresh sink whose as-of "
                   "time is the batch's");
    floe__bulk *b = floe__calloc(1, sizeof *b);
    if (!b)
        return FLOE_OOM(err);
    floe__kx *kx = s->keeper ? floe__keeper_kx(s->keeper) : NULL;
    int rc = floe__table_pin(s->table, &b->pinned, err);
    if (rc == FLOE_OK && kx && floe__kx_build_pays(kx, expect_rows))
        rc = floe__kx_builder_new(kx, &b->build, err);
    else if (rc == FLOE_OK && kx)
        rc = floe__kx_reserve(kx, expect_rows, err);
    if (rc == FLOE_OK && kx)            /* each row indexed is added to it */
        rc = floe__keeper_stream_checkpoint(s->keeper, err);
    if (rc != FLOE_OK) {
        floe__kx_builder_free(b->build);
        floe__table_free(b->pinned);
        floe__free(b);
        return rc;
    }
    b->s = s;
    b->time = time;
    b->indexed = s->keeper != NULL;
    b->fopts = s->wcfg.file_opts;
    size_t share = s->stash_memory / (max_parts ? max_parts : 1);
    if (share < MIN_ROW_GROUP)
        share = MIN_ROW_GROUP;
    if (b->fopts.parquet.row_group_size > share)
        b->fopts.parquet.row_group_size = share;
    b->share = share;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    s->touched = true;                  /* no other bulk, no other as-of */
    *out = b;
    return FLOE_OK;
}

void floe__bulk_free(floe__bulk *b)
{
    if (!b)
        return;
    assert(b->parts_open == 0);
    if (b->s->bulk == b)
        b->s->bulk = NULL;
    for (size_t i = 0; i < b->files.n && !b->keep; i++)
        floe__fileio_remove(b->s->table->io, b->files.files[i].path, NULL);
    floe__content_list_clear(&b->files);
    floe__content_list_clear(&b->unstaged);
    floe__content_list_clear(&b->staging);
    floe__free(b->tags);
    floe__free(b->taken);
    floe__kx_builder_free(b->build);
    floe__table_free(b->pinned);
    for (block *k = b->head, *next; k; k = next) {
        next = k->next;
        block_free(k);
    }
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    floe__free(b);
}

void floe__bulk_cancel(floe__bulk *b)
{
    pthread_mutex_lock(&b->mu);
    b->cancelled = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

uint64_t floe__bulk_target_file_size(const floe__bulk *b)
{
    return b->fopts.target_file_size ? b->fopts.target_file_size : FLOE__DEFAULT_TARGET_FILE_SIZE;
}

uint64_t floe__bulk_rows(const floe__bulk *b)
{
    floe__bulk *m = (floe__bulk *)b;           /* the lock is all that is touched */
    pthread_mutex_lock(&m->mu);
    uint64_t n = m->rows;
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* One block's rows into the key index: its file is new and uncommitted
 * until the batch commits. */
static int index_block(floe__bulk *b, const block *k, floe_error *err)
{
    floe__kx *kx = floe__keeper_kx(b->s->keeper);
    floe__kx_ckpt *ckpt = floe__keeper_streamed(b->s->keeper);
    uint32_t id;
    FLOE_FORWARD(floe__kx_file(kx, k->path, &id, err));
    floe__kx_file_set_committed(kx, id, false);
    floe__kx_file_set_schema(kx, id, b->s->wcfg.schema_id);
    const uint8_t *p = k->recs.data, *end = p + k->recs.len;
    while (p < end) {
        uint32_t klen = floe__get_le32(p);
        const uint8_t *next = p + REC_HEAD + klen;
        if (next < end && !b->build)            /* its slots wanted soon */
            floe__kx_prefetch(kx, next + REC_HEAD, floe__get_le32(next));
        floe__kx_loc loc = {id, floe__get_le64(p + 4), floe__get_le64(p + 12)};
        if (b->build)
            FLOE_FORWARD(floe__kx_builder_add(b->build, p + REC_HEAD, klen, loc, err));
        else
            FLOE_FORWARD(floe__kx_insert(kx, p + REC_HEAD, klen, loc, err));
        if (ckpt)
            FLOE_FORWARD(floe__kx_ckpt_add(ckpt, p + REC_HEAD, klen, loc, err));
        p = next;
    }
    return FLOE_OK;
}

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

int floe__bulk_index(floe__bulk *b, int wait_ms, size_t *finished, floe_error *err)
{
    pthread_mutex_lock(&b->mu);
    if (!b->head && wait_ms > 0) {
        struct timespec ts;
        deadline_in(&ts, wait_ms);
        size_t seen = b->finished;
        int w = 0;
        while (!b->head && b->finished == seen && !b->cancelled && w != ETIMEDOUT)
            w = pthread_cond_timedwait(&b->cv, &b->mu, &ts);
    }
    block *list = b->head;
    b->head = b->tail = NULL;
    b->queued = 0;
    *finished = b->finished;
    pthread_cond_broadcast(&b->cv);             /* room again */
    pthread_mutex_unlock(&b->mu);
    int rc = FLOE_OK;
    for (block *k = list, *next; k; k = next) {
        next = k->next;
        if (rc == FLOE_OK)
            rc = index_block(b, k, err);
        block_free(k);
    }
    return rc;
}

int floe__bulk_adopt(floe__bulk *b, floe_error *err)
{
    if (!floe__writer_holds(b->s->writer, b->time))
        return FLOE_OK;
    pthread_mutex_lock(&b->mu);
    floe__content_list files = b->files;
    memset(&b->files, 0, sizeof b->files);
    uint64_t rows = b->rows;
    pthread_mutex_unlock(&b->mu);
    atomic_fetch_add_explicit(&b->s->updates_in, rows, memory_order_relaxed);
    int rc = floe__writer_adopt(b->s->writer, b->time, &files, rows, err);
    for (size_t i = 0; i < files.n && !b->keep; i++)     /* not adopted: removed */
        floe__fileio_remove(b->s->table->io, files.files[i].path, NULL);
    floe__content_list_clear(&files);
    b->s->bulk = NULL;                            /* the batch holds them now */
    return rc;
}

int floe__bulk_seal(floe__bulk *b, floe_error *err)
{
    size_t finished = 0;
    FLOE_FORWARD(floe__bulk_index(b, 0, &finished, err));
    pthread_mutex_lock(&b->mu);
    size_t open = b->parts_open;
    pthread_mutex_unlock(&b->mu);
    FLOE_RETURN_IF(open, err, FLOE_EINTERNAL, "a bulk snapshot batch sealed with %zu parts "
                   "still writing", open);
    floe__kx_builder *build = b->build;
    b->build = NULL;
    if (build)
        FLOE_FORWARD(floe__kx_builder_finish(build, err));
    b->s->bulk = b;
    return FLOE_OK;
}

/* ---- staging ------------------------------------------------------------------------------ */

/* Under mu: a finished part's files (copies) and tag wait for staging. */
static int stage_later(floe__bulk *b, uint64_t tag, const floe__content_list *files,
                       floe_error *err)
{
    if (b->ntags == b->cap_tags) {
        size_t cap = b->cap_tags ? b->cap_tags * 2 : 16;
        uint64_t *t = floe__realloc(b->tags, cap * sizeof *t);
        if (!t)
            return FLOE_OOM(err);
        b->tags = t;
        b->cap_tags = cap;
    }
    size_t n0 = b->unstaged.n;
    for (size_t i = 0; i < files->n; i++) {
        floe__content_file f;
        int rc = floe__content_file_copy(&f, &files->files[i], err);
        if (rc == FLOE_OK && (rc = floe__content_list_push(&b->unstaged, &f, err)) != FLOE_OK)
            floe__content_file_clear(&f);
        if (rc != FLOE_OK) {
            while (b->unstaged.n > n0)
                floe__content_file_clear(&b->unstaged.files[--b->unstaged.n]);
            return rc;
        }
    }
    b->tags[b->ntags++] = tag;
    return FLOE_OK;
}

void floe__bulk_stage_to(floe__bulk *b, const char *branch)
{
    b->branch = branch;
    b->staged_head = -1;
}

int floe__bulk_stage_take(floe__bulk *b, const uint64_t **tags, size_t *n, floe_error *err)
{
    *tags = NULL;
    *n = 0;
    if (!b->branch)
        return FLOE_OK;
    pthread_mutex_lock(&b->mu);
    int rc = floe__content_list_take(&b->staging, &b->unstaged, err);
    uint64_t *t = rc == FLOE_OK ? floe__realloc(b->taken, (b->ntags ? b->ntags : 1) * sizeof *t)
                                : NULL;
    if (t) {
        if (b->ntags)
            memcpy(t, b->tags, b->ntags * sizeof *t);
        b->taken = t;
        b->ntaken = b->ntags;
        b->ntags = 0;
    } else if (rc == FLOE_OK) {
        rc = FLOE_OOM(err);
    }
    pthread_mutex_unlock(&b->mu);
    *tags = b->taken;
    *n = rc == FLOE_OK ? b->ntaken : 0;
    return rc;
}

int floe__bulk_stage_commit(floe__bulk *b, const char *const *kv, size_t nkv, floe_error *err)
{
    if (!b->branch || !b->ntaken)
        return FLOE_OK;
    json_t *summary = json_object();
    int rc = summary ? FLOE_OK : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i + 1 < nkv; i += 2)
        if (json_object_set_new(summary, kv[i], json_string(kv[i + 1])) != 0)
            rc = FLOE_OOM(err);
    floe__commit_request req = {.files = b->staging.files, .n_files = b->staging.n,
                                .summary = summary, .base_snapshot_id = b->staged_head,
                                .branch = b->branch, .operation = "append"};
    int64_t id = -1;
    if (rc == FLOE_OK)
        rc = floe__table_commit(b->s->table, &req, &id, err);
    json_decref(summary);
    if (rc == FLOE_OK || rc == FLOE_EUNKNOWN_OUTCOME)
        b->keep = true;                          /* the branch may reference them */
    if (rc != FLOE_OK) {
        pthread_mutex_lock(&b->mu);
        b->branch = NULL;                        /* no more staging */
        pthread_mutex_unlock(&b->mu);
        return floe__err_wrap(err, rc, "staging %zu finished parts on branch %s",
                              b->ntaken, req.branch);
    }
    b->staged_head = id;
    b->ntaken = 0;
    floe__content_list_clear(&b->staging);
    return FLOE_OK;
}

int floe__sink_drop_branch(floe_sink *s, const char *branch, floe_error *err)
{
    int64_t head;
    if (!floe__metadata_ref(s->table->loaded->metadata, branch, &head, NULL))
        return FLOE_OK;
    const char *uuid = floe__metadata_table_uuid(s->table->loaded->metadata);
    json_t *reqs = json_pack("[{s:s, s:s}, {s:s, s:s, s:I}]", "type", "assert-table-uuid",
                             "uuid", uuid ? uuid : "", "type", "assert-ref-snapshot-id", "ref",
                             branch, "snapshot-id", (json_int_t)head);
    json_t *ups = json_pack("[{s:s, s:s}]", "action", "remove-snapshot-ref", "ref-name", branch);
    int rc = reqs && ups ? floe__table_update(s->table, reqs, ups, err) : FLOE_OOM(err);
    json_decref(reqs);
    json_decref(ups);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "dropping branch %s", branch);
}

/* ---- the parts' side -------------------------------------------------------------------- */

int floe__bulk_part_new(floe__bulk *b, uint64_t tag, floe__bulk_part **out, floe_error *err)
{
    *out = NULL;
    floe__bulk_part *p = floe__calloc(1, sizeof *p);
    if (!p)
        return FLOE_OOM(err);
    p->b = b;
    p->tag = tag;
    floe__buf_init(&p->key, FLOE_KX_MAX_KEY);
    p->spans = floe__calloc(b->s->input->root.n_children + 1, sizeof *p->spans);
    p->budget.limit = b->share;
    int rc = p->spans ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK && floe__table_partitioned(b->pinned))
        rc = floe__part_writer_new(b->pinned, b->s->data, NULL, &b->fopts, &p->budget, &p->w,
                                   err);
    else if (rc == FLOE_OK)
        rc = floe__file_writer_new(b->pinned, FLOE_CONTENT_DATA, b->s->data, NULL, 0,
                                   &b->fopts, &p->fw, err);
    if (rc != FLOE_OK) {
        floe__buf_free(&p->key);
        floe__free((void *)p->spans);
        floe__free(p);
        return rc;
    }
    pthread_mutex_lock(&b->mu);
    b->parts_open++;
    pthread_mutex_unlock(&b->mu);
    *out = p;
    return FLOE_OK;
}

/* Queue the part's block, waiting for room. */
/* Queue the part's block i for the sink's thread (waiting while the queue
 * is full). */
static int hand_block(floe__bulk_part *p, size_t i, floe_error *err)
{
    block *k = p->cur[i];
    p->cur[i] = p->cur[--p->ncur];
    floe__bulk *b = p->b;
    pthread_mutex_lock(&b->mu);
    while (b->queued >= QUEUE_BLOCKS && !b->cancelled)
        pthread_cond_wait(&b->cv, &b->mu);
    bool cancelled = b->cancelled;
    if (!cancelled) {
        if (b->tail)
            b->tail->next = k;
        else
            b->head = k;
        b->tail = k;
        b->queued++;
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    if (cancelled) {
        block_free(k);
        return floe__err_set(err, FLOE_EINTERRUPTED, "the bulk snapshot batch was cancelled");
    }
    return FLOE_OK;
}

/* The block being filled for data file `path`: a new one when there is
 * none (the fullest goes first when MAX_CUR are being filled). */
static int block_for(floe__bulk_part *p, const char *path, block **out, floe_error *err)
{
    for (size_t i = 0; i < p->ncur; i++) {
        if (strcmp(p->cur[i]->path, path) != 0)
            continue;
        if (p->cur[i]->recs.len < BLOCK_BYTES) {
            *out = p->cur[i];
            return FLOE_OK;
        }
        FLOE_FORWARD(hand_block(p, i, err));
        break;
    }
    if (p->ncur == MAX_CUR) {
        size_t full = 0;
        for (size_t i = 1; i < p->ncur; i++)
            if (p->cur[i]->recs.len > p->cur[full]->recs.len)
                full = i;
        FLOE_FORWARD(hand_block(p, full, err));
    }
    block *k = floe__calloc(1, sizeof *k);
    if (!k)
        return FLOE_OOM(err);
    floe__buf_init(&k->recs, (size_t)1 << 31);
    if (!(k->path = floe__strdup(path))) {
        floe__free(k);
        return FLOE_OOM(err);
    }
    p->cur[p->ncur++] = *out = k;
    return FLOE_OK;
}

static int index_entry(floe__bulk_part *p, const uint8_t *row, size_t len, const char *path,
                       uint64_t pos, floe_error *err)
{
    const floe_sink *s = p->b->s;
    const uint8_t *key = row;
    size_t klen = len;
    if (!s->synthetic) {
        FLOE_FORWARD(floe__sink_key_bytes(s, row, len, p->spans, &p->key, err));
        key = p->key.data;
        klen = p->key.len;
    }
    block *k = NULL;
    FLOE_FORWARD(block_for(p, path, &k, err));
    uint8_t head[REC_HEAD];
    floe__put_le32(head, (uint32_t)klen);
    floe__put_le64(head + 4, pos);
    floe__put_le64(head + 12, floe__hash64(row, len, 0));
    FLOE_FORWARD(floe__buf_append(&k->recs, head, sizeof head, err));
    return floe__buf_append(&k->recs, key, klen, err);
}

int floe__bulk_part_write(floe__bulk_part *p, const uint8_t *row, size_t len, floe_error *err)
{
    FLOE_RETURN_IF(p->ended || (!p->w && !p->fw), err, FLOE_EINTERNAL,
                   "a bulk part written after its end");
    const char *path = NULL;
    uint64_t pos = 0;
    FLOE_FORWARD(p->w ? floe__part_writer_write(p->w, row, len, &path, &pos, err)
                      : floe__file_writer_write(p->fw, row, len, &path, &pos, err));
    p->rows++;
    return p->b->indexed ? index_entry(p, row, len, path, pos, err) : FLOE_OK;
}

int floe__bulk_part_finish(floe__bulk_part *p, floe_error *err)
{
    FLOE_RETURN_IF(p->ended || (!p->w && !p->fw), err, FLOE_EINTERNAL,
                   "a bulk part finished twice");
    while (p->ncur)
        FLOE_FORWARD(hand_block(p, p->ncur - 1, err));
    floe__content_list files = {0};
    floe__part_writer *w = p->w;
    floe__file_writer *fw = p->fw;
    p->w = NULL;
    p->fw = NULL;
    FLOE_FORWARD(w ? floe__part_writer_close(w, &files, err)
                   : floe__file_writer_close(fw, &files, err));
    floe__bulk *b = p->b;
    pthread_mutex_lock(&b->mu);
    int rc = b->branch ? stage_later(b, p->tag, &files, err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = floe__content_list_take(&b->files, &files, err);
    if (rc == FLOE_OK)
        b->rows += p->rows;
    b->parts_open--;
    b->finished++;
    p->ended = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    for (size_t i = 0; i < files.n; i++)          /* not taken: removed */
        floe__fileio_remove(b->s->table->io, files.files[i].path, NULL);
    floe__content_list_clear(&files);
    return rc;
}

void floe__bulk_part_free(floe__bulk_part *p)
{
    if (!p)
        return;
    floe__part_writer_abort(p->w);
    floe__file_writer_abort(p->fw);
    for (size_t i = 0; i < p->ncur; i++)
        block_free(p->cur[i]);
    if (!p->ended) {
        pthread_mutex_lock(&p->b->mu);
        p->b->parts_open--;
        pthread_cond_broadcast(&p->b->cv);
        pthread_mutex_unlock(&p->b->mu);
    }
    floe__buf_free(&p->key);
    floe__free((void *)p->spans);
    floe__free(p);
}
