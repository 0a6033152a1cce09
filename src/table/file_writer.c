/*
 * file_writer.c - the files a commit adds: rolling Parquet writers for data
 * and equality delete rows, and the position delete writer.
 *
 * A file writer opens "<data location>/<prefix>-<uuid>-<NNNNN>.parquet"
 * lazily on its first row (so an empty writer leaves no file), writes rows
 * through the FileIO's atomic output (nothing is visible under the name
 * until the file is complete) and rolls over to the next number when the
 * estimated size reaches the target.  A caller may instead name a file
 * ahead (floe__file_writer_name) and write it later in one go
 * (floe__file_writer_open_at ... roll): such a file never rolls over, so
 * the positions the caller promised hold (part_writer.c).  Finished files stay listed in the
 * writer until close hands them over; abort (or a failed close) removes
 * every file the writer made.  The uuid is random per writer, so names
 * never collide across workers and restarts.
 *
 * The position delete writer gathers (data file, position) pairs in memory
 * (each distinct path stored once), sorts them by path then position at
 * close, as the spec requires, and writes them through a file writer with
 * the reserved schema {2147483546 file_path: string, 2147483545 pos: long},
 * both required.  Its files carry exact (untruncated) file_path bounds, as
 * Java's position delete writers do, so readers can tell which data files a
 * delete file touches.
 */
#include <stdio.h>
#include <stdlib.h>

#include "table/table_internal.h"

#define POSDEL_PATH_ID 2147483546
#define POSDEL_POS_ID 2147483545
#define POSDEL_MAX_PATH ((size_t)64 << 10)
#define SIZE_CHECK_EVERY 64                  /* rows between size estimates */
#define SMALL_TARGET ((uint64_t)1 << 20)     /* below it, estimate every row */

struct floe__file_writer {
    floe__table *t;                  /* borrowed: FileIO and data location */
    floe__content content;
    const floe__schema *schema;      /* borrowed */
    int32_t *eq_ids;
    size_t n_eq_ids;
    floe_parquet_options pq;
    uint64_t target;                 /* roll over at this estimated size */
    char *prefix;
    char uuid[37];
    unsigned next_number;
    floe__pq_codec *codec;           /* shared by its files' writers (made at the first) */
    floe__pq_writer *cur;            /* the open file, or NULL */
    char *cur_path;
    uint64_t cur_rows;
    bool pinned;                     /* opened by floe__file_writer_open_at: no rolling over */
    uint64_t rows;
    floe__content_list done;         /* finished files, in order */
    int broken;                      /* a failure that ruins the writer */
    char *schema_json;               /* the footer's iceberg.schema: the schema the rows are
                                        written with (data and equality delete files) */
};

/* Java Iceberg's writers record the schema a Parquet file was written with
 * in its footer as "iceberg.schema"; floe's do too. */
static int schema_text(const floe__schema *s, char **out, floe_error *err)
{
    json_t *j;
    FLOE_FORWARD(floe__schema_to_jansson(s, &j, err));
    size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT);
    *out = n ? floe__malloc(n + 1) : NULL;
    if (*out && json_dumpb(j, *out, n, JSON_COMPACT) == n)
        (*out)[n] = '\0';
    else if (*out) {
        floe__free(*out);
        *out = NULL;
    }
    json_decref(j);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

/* ---- data and equality delete files ------------------------------------------------------ */

static int check_eq_schema(const floe__schema *s, const int32_t *ids, size_t n, floe_error *err)
{
    FLOE_RETURN_IF(n == 0 || !ids, err, FLOE_EINVAL, "equality deletes need equality field ids");
    for (size_t i = 0; i < n; i++) {
        const floe__field *f = floe__schema_find_id(s, ids[i]);
        FLOE_RETURN_IF(!f, err, FLOE_EINVAL,
                       "equality field id %d is not a column of the delete file schema",
                       (int)ids[i]);
        FLOE_RETURN_IF(f->kind == FLOE_K_STRUCT || f->kind == FLOE_K_LIST ||
                       f->kind == FLOE_K_MAP, err, FLOE_EINVAL,
                       "equality delete column \"%s\" is a %s: key columns must be primitive",
                       f->name, floe__kind_name(f->kind));
    }
    return FLOE_OK;
}

int floe__file_writer_new(floe__table *t, floe__content content, const floe__schema *file_schema,
                          const int32_t *eq_ids, size_t n_eq_ids,
                          const floe__file_writer_options *o, floe__file_writer **out,
                          floe_error *err)
{
    FLOE_RETURN_IF(!t || !file_schema || !out, err, FLOE_EINVAL, "file writer: NULL argument");
    FLOE_FORWARD(floe__table_check_format(t, err));
    if (content == FLOE_CONTENT_EQUALITY_DELETES)
        FLOE_FORWARD(check_eq_schema(file_schema, eq_ids, n_eq_ids, err));
    else
        FLOE_RETURN_IF(n_eq_ids != 0, err, FLOE_EINVAL, "equality ids given for a non-equality "
                       "delete file");
    floe__file_writer_options table_opts;
    if (!o) {
        FLOE_FORWARD(floe__table_file_options(t, content, &table_opts, err));
        o = &table_opts;
    }
    floe__file_writer *w = floe__calloc(1, sizeof *w);
    if (!w)
        return FLOE_OOM(err);
    w->t = t;
    w->content = content;
    w->schema = file_schema;
    w->next_number = 1;
    w->pq = o->parquet;
    w->target = o->target_file_size ? o->target_file_size : FLOE__DEFAULT_TARGET_FILE_SIZE;
    const char *prefix = o->prefix && *o->prefix
                             ? o->prefix : content == FLOE_CONTENT_DATA ? "data" : "delete";
    w->prefix = floe__strdup(prefix);
    int rc = w->prefix ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK && n_eq_ids) {
        w->eq_ids = floe__malloc(n_eq_ids * sizeof *eq_ids);
        rc = w->eq_ids ? FLOE_OK : FLOE_OOM(err);
        if (rc == FLOE_OK)
            memcpy(w->eq_ids, eq_ids, n_eq_ids * sizeof *eq_ids);
        w->n_eq_ids = n_eq_ids;
    }
    if (rc == FLOE_OK && content != FLOE_CONTENT_POSITION_DELETES)
        rc = schema_text(file_schema, &w->schema_json, err);
    uint8_t u[16];
    if (rc == FLOE_OK)
        rc = floe__uuid_random(u, err);
    if (rc != FLOE_OK) {
        floe__file_writer_abort(w);
        return rc;
    }
    floe__uuid_format(u, w->uuid);
    *out = w;
    return FLOE_OK;
}

int floe__file_writer_name(floe__file_writer *w, char **path, floe_error *err)
{
    char name[128];
    snprintf(name, sizeof name, "%.40s-%s-%05u.parquet", w->prefix, w->uuid, w->next_number);
    *path = floe__path_join(w->t->data_location, name);
    if (!*path)
        return FLOE_OOM(err);
    w->next_number++;
    return FLOE_OK;
}

/* Open the next file under `path` (taken: the writer frees it on failure). */
static int open_named(floe__file_writer *w, char *path, floe_error *err)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    floe__output *o;
    int rc = w->codec ? FLOE_OK : floe__pq_codec_new(&w->pq, &w->codec, err);
    if (rc == FLOE_OK)
        rc = floe__fileio_open_output(w->t->io, path, &o, err);
    if (rc == FLOE_OK)
        rc = floe__pq_writer_new_shared(w->schema, &w->pq, o, w->codec, &w->cur, err);
    if (rc == FLOE_OK && w->schema_json &&
        (rc = floe__pq_writer_add_kv(w->cur, "iceberg.schema", w->schema_json, err)) != FLOE_OK) {
        floe__pq_writer_abort(w->cur);
        w->cur = NULL;
    }
    if (rc != FLOE_OK) {
        rc = floe__err_wrap(err, rc, "opening %s", name);
        floe__free(path);
        return rc;
    }
    w->cur_path = path;
    w->cur_rows = 0;
    return FLOE_OK;
}

static int open_file(floe__file_writer *w, floe_error *err)
{
    char *path;
    FLOE_FORWARD(floe__file_writer_name(w, &path, err));
    return open_named(w, path, err);
}

int floe__file_writer_open_at(floe__file_writer *w, char *path, floe_error *err)
{
    int rc = w->broken ? floe__err_set(err, w->broken, "file writer: an earlier failure broke it")
             : w->cur ? floe__err_set(err, FLOE_EINTERNAL, "file writer: %s is still open",
                                      w->cur_path)
                      : FLOE_OK;
    if (rc != FLOE_OK) {
        floe__free(path);
        return rc;
    }
    rc = open_named(w, path, err);
    if (rc != FLOE_OK)
        w->broken = rc;
    w->pinned = rc == FLOE_OK;
    return rc;
}

int floe__file_writer_take(floe__file_writer *w, floe__content_list *out, floe_error *err)
{
    return floe__content_list_take(out, &w->done, err);
}

/* Close the open file and list it as done. */
static int finish_file(floe__file_writer *w, floe_error *err)
{
    floe__content_file f = {.content = w->content, .path = w->cur_path};
    floe__pq_writer *pw = w->cur;
    w->cur = NULL;
    w->cur_path = NULL;
    w->pinned = false;
    int rc = floe__pq_writer_close(pw, &f.metrics, err);
    if (rc != FLOE_OK) {
        rc = floe__err_wrap(err, rc, "writing %s", f.path);
        floe__free(f.path);
        return rc;
    }
    if (w->n_eq_ids) {
        f.equality_ids = floe__malloc(w->n_eq_ids * sizeof *w->eq_ids);
        if (f.equality_ids) {
            memcpy(f.equality_ids, w->eq_ids, w->n_eq_ids * sizeof *w->eq_ids);
            f.n_equality_ids = w->n_eq_ids;
        }
    }
    rc = (w->n_eq_ids && !f.equality_ids) ? FLOE_OOM(err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = floe__content_list_push(&w->done, &f, err);
    if (rc != FLOE_OK) {                /* the file is complete but unlisted: remove it */
        floe__fileio_remove(w->t->io, f.path, NULL);
        floe__content_file_clear(&f);
    }
    return rc;
}

int floe__file_writer_write(floe__file_writer *w, const uint8_t *row, size_t len,
                            const char **path, uint64_t *pos, floe_error *err)
{
    FLOE_RETURN_IF(w->broken, err, w->broken, "file writer: an earlier failure broke it");
    if (!w->cur) {
        int rc = open_file(w, err);
        if (rc != FLOE_OK) {
            w->broken = rc;
            return rc;
        }
    }
    int rc = floe__pq_write_row(w->cur, row, len, err);
    if (rc == FLOE_EINPUT)
        return rc;                       /* the row was refused; the file is as it was */
    if (rc != FLOE_OK) {
        w->broken = rc;
        return rc;
    }
    if (path)
        *path = w->cur_path;
    if (pos)
        *pos = w->cur_rows;
    w->cur_rows++;
    w->rows++;
    /* The size estimate walks every column: look every SIZE_CHECK_EVERY rows
     * (each row, for small targets), overshooting by at most that many. */
    bool check = !w->pinned &&
                 (w->target < SMALL_TARGET || w->cur_rows % SIZE_CHECK_EVERY == 0);
    if (check && floe__pq_writer_bytes(w->cur) >= w->target) {
        rc = finish_file(w, err);        /* the path handed out lives on in w->done */
        if (rc != FLOE_OK)
            w->broken = rc;
    }
    return rc;
}

uint64_t floe__file_writer_rows(const floe__file_writer *w) { return w ? w->rows : 0; }

uint64_t floe__file_writer_target(const floe__file_writer *w) { return w->target; }

uint64_t floe__file_writer_open_bytes(const floe__file_writer *w)
{
    return w && w->cur ? floe__pq_writer_bytes(w->cur) : 0;
}

uint64_t floe__file_writer_buffered(const floe__file_writer *w)
{
    return w && w->cur ? floe__pq_writer_buffered(w->cur) : 0;
}

const char *floe__file_writer_open_path(const floe__file_writer *w)
{
    return w && w->cur && w->cur_rows ? w->cur_path : NULL;
}

int floe__file_writer_roll(floe__file_writer *w, floe_error *err)
{
    FLOE_RETURN_IF(w->broken, err, w->broken, "file writer: an earlier failure broke it");
    if (!w->cur || !w->cur_rows)
        return FLOE_OK;
    int rc = finish_file(w, err);
    if (rc != FLOE_OK)
        w->broken = rc;
    return rc;
}

static void free_writer(floe__file_writer *w, bool remove_files)
{
    if (remove_files)
        for (size_t i = 0; i < w->done.n; i++)
            floe__fileio_remove(w->t->io, w->done.files[i].path, NULL);
    floe__pq_writer_abort(w->cur);
    floe__pq_codec_destroy(w->codec);
    floe__free(w->cur_path);
    floe__content_list_clear(&w->done);
    floe__free(w->eq_ids);
    floe__free(w->prefix);
    floe__free(w->schema_json);
    floe__free(w);
}

int floe__file_writer_close(floe__file_writer *w, floe__content_list *out, floe_error *err)
{
    int rc = w->broken;
    if (rc != FLOE_OK)
        rc = floe__err_set(err, rc, "file writer: an earlier failure broke it");
    if (rc == FLOE_OK && w->cur && w->cur_rows == 0) {
        floe__pq_writer_abort(w->cur);   /* opened for a row that was refused */
        w->cur = NULL;
        floe__free(w->cur_path);
        w->cur_path = NULL;
    }
    if (rc == FLOE_OK && w->cur)
        rc = finish_file(w, err);
    if (rc == FLOE_OK)
        rc = floe__content_list_take(out, &w->done, err);
    free_writer(w, rc != FLOE_OK);
    return rc;
}

void floe__file_writer_abort(floe__file_writer *w)
{
    if (w)
        free_writer(w, true);
}

/* ---- position deletes ---------------------------------------------------------------------- */

typedef struct posdel {
    uint32_t path;                   /* index into paths (a rank once sorted) */
    uint64_t pos;
} posdel;

struct floe__posdel_writer {
    floe__table *t;
    floe__file_writer_options o;
    char *prefix;
    floe__strtab paths;              /* distinct data file paths */
    const char **sorted;             /* once sorted: the paths by rank (borrowed from paths) */
    uint32_t last;                   /* the path of the previous add (a cheap cache) */
    posdel *dels;
    size_t n, cap;
};

int floe__posdel_writer_new(floe__table *t, const floe__file_writer_options *o,
                            floe__posdel_writer **out, floe_error *err)
{
    FLOE_RETURN_IF(!t || !out, err, FLOE_EINVAL, "position delete writer: NULL argument");
    FLOE_FORWARD(floe__table_check_format(t, err));
    floe__posdel_writer *w = floe__calloc(1, sizeof *w);
    if (!w)
        return FLOE_OOM(err);
    w->t = t;
    int rc = o ? FLOE_OK : floe__table_file_options(t, FLOE_CONTENT_POSITION_DELETES, &w->o, err);
    if (rc != FLOE_OK) {
        floe__free(w);
        return rc;
    }
    if (o)
        w->o = *o;
    w->prefix = floe__strdup(o && o->prefix && *o->prefix ? o->prefix : "delete");
    w->o.prefix = w->prefix;
    w->last = UINT32_MAX;
    if (!w->prefix) {
        floe__free(w);
        return FLOE_OOM(err);
    }
    *out = w;
    return FLOE_OK;
}

/* The index of `path`, added when new. */
static int intern(floe__posdel_writer *w, const char *path, uint32_t *idx, floe_error *err)
{
    if (w->last != UINT32_MAX && strcmp(w->paths.s[w->last], path) == 0) {
        *idx = w->last;
        return FLOE_OK;
    }
    FLOE_RETURN_IF(w->paths.n >= (1u << 28), err, FLOE_ELIMIT,
                   "position deletes reference too many data files");
    FLOE_FORWARD(floe__strtab_intern(&w->paths, path, idx, err));
    w->last = *idx;
    return FLOE_OK;
}

int floe__posdel_add(floe__posdel_writer *w, const char *data_path, uint64_t pos,
                     floe_error *err)
{
    FLOE_RETURN_IF(!data_path || !*data_path, err, FLOE_EINVAL,
                   "position delete: empty data file path");
    FLOE_RETURN_IF(strlen(data_path) > POSDEL_MAX_PATH, err, FLOE_EINVAL,
                   "position delete: data file path longer than %zu bytes", POSDEL_MAX_PATH);
    FLOE_RETURN_IF(pos > (uint64_t)INT64_MAX, err, FLOE_EINVAL,
                   "position delete: position %llu out of range", (unsigned long long)pos);
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        FLOE_RETURN_IF(cap > SIZE_MAX / sizeof(posdel), err, FLOE_ELIMIT,
                       "too many position deletes");
        posdel *d = floe__realloc(w->dels, cap * sizeof *d);
        if (!d)
            return FLOE_OOM(err);
        w->dels = d;
        w->cap = cap;
    }
    uint32_t idx = 0;
    FLOE_FORWARD(intern(w, data_path, &idx, err));
    w->dels[w->n++] = (posdel){idx, pos};
    return FLOE_OK;
}

uint64_t floe__posdel_count(const floe__posdel_writer *w) { return w ? w->n : 0; }

static int cmp_posdel(const void *a, const void *b)
{
    const posdel *x = a, *y = b;
    if (x->path != y->path)
        return x->path < y->path ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Path order by index, via qsort over (pointer to path, index) pairs. */
typedef struct ranked {
    const char *path;
    uint32_t idx;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    return strcmp(((const ranked *)a)->path, ((const ranked *)b)->path);
}

/* Sort the deletes by (path, pos): rank the distinct paths by strcmp,
 * renumber the entries with the ranks (and reorder paths to match), then
 * sort the entries by (rank, pos) and drop duplicates. */
static int sort_deletes(floe__posdel_writer *w, floe_error *err)
{
    size_t n = w->paths.n;
    ranked *r = floe__malloc((n ? n : 1) * sizeof *r);
    uint32_t *rank = floe__malloc((n ? n : 1) * sizeof *rank);
    const char **sorted = floe__malloc((n ? n : 1) * sizeof *sorted);
    if (!r || !rank || !sorted) {
        floe__free(r);
        floe__free(rank);
        floe__free((void *)sorted);
        return FLOE_OOM(err);
    }
    for (uint32_t i = 0; i < n; i++)
        r[i] = (ranked){w->paths.s[i], i};
    qsort(r, n, sizeof *r, cmp_ranked);
    for (uint32_t i = 0; i < n; i++) {
        rank[r[i].idx] = i;
        sorted[i] = r[i].path;
    }
    for (size_t i = 0; i < w->n; i++)
        w->dels[i].path = rank[w->dels[i].path];
    floe__free((void *)w->sorted);
    w->sorted = sorted;
    w->last = UINT32_MAX;                   /* indexes are ranks from here on */
    floe__free(r);
    floe__free(rank);
    qsort(w->dels, w->n, sizeof *w->dels, cmp_posdel);
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++)
        if (k == 0 || cmp_posdel(&w->dels[k - 1], &w->dels[i]) != 0)
            w->dels[k++] = w->dels[i];
    w->n = k;
    return FLOE_OK;
}

int floe__posdel_schema_new(floe__schema **out, floe_error *err)
{
    floe__schema *s;
    FLOE_FORWARD(floe__schema_new(&s, err));
    s->root.children = floe__calloc(2, sizeof(floe__field));
    char *a = floe__strdup("file_path"), *b = floe__strdup("pos");
    if (!s->root.children || !a || !b) {
        floe__free(a);
        floe__free(b);
        floe_schema_free(s);
        return FLOE_OOM(err);
    }
    s->root.n_children = 2;
    s->root.children[0] = (floe__field){.name = a, .id = POSDEL_PATH_ID, .required = true,
                                        .kind = FLOE_K_STRING, .decl = FLOE_D_TEXT};
    s->root.children[1] = (floe__field){.name = b, .id = POSDEL_POS_ID, .required = true,
                                        .kind = FLOE_K_LONG, .decl = FLOE_D_BIGINT};
    s->highest_id = POSDEL_PATH_ID;
    *out = s;
    return FLOE_OK;
}

static int write_sorted(floe__posdel_writer *w, floe__file_writer *fw, floe_error *err)
{
    floe__buf row;
    floe__buf_init(&row, POSDEL_MAX_PATH + 64);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < w->n; i++) {
        const char *p = w->sorted[w->dels[i].path];
        size_t len = strlen(p);
        uint8_t hdr[5] = {FLOE_SLOT_PRESENT}, tail[9] = {FLOE_SLOT_PRESENT};
        floe__put_le32(hdr + 1, (uint32_t)len);
        floe__put_le64(tail + 1, w->dels[i].pos);
        floe__buf_reset(&row);
        rc = floe__buf_append(&row, hdr, 5, err);
        if (rc == FLOE_OK)
            rc = floe__buf_append(&row, p, len, err);
        if (rc == FLOE_OK)
            rc = floe__buf_append(&row, tail, 9, err);
        if (rc == FLOE_OK)
            rc = floe__file_writer_write(fw, row.data, row.len, NULL, NULL, err);
    }
    floe__buf_free(&row);
    return rc;
}

/* Replace a file's file_path bounds by the exact first and last paths. */
static int exact_bounds(floe__content_file *f, const char *lo, const char *hi, floe_error *err)
{
    for (size_t i = 0; i < f->metrics.n_columns; i++) {
        floe__col_metrics *c = &f->metrics.columns[i];
        if (c->field_id != POSDEL_PATH_ID)
            continue;
        floe__buf_reset(&c->lower);
        floe__buf_reset(&c->upper);
        c->lower.max = c->upper.max = 0;
        FLOE_FORWARD(floe__buf_append(&c->lower, lo, strlen(lo), err));
        FLOE_FORWARD(floe__buf_append(&c->upper, hi, strlen(hi), err));
        c->has_lower = c->has_upper = true;
    }
    return FLOE_OK;
}

static void free_posdel(floe__posdel_writer *w)
{
    floe__strtab_free(&w->paths);
    floe__free((void *)w->sorted);
    floe__free(w->dels);
    floe__free(w->prefix);
    floe__free(w);
}

int floe__posdel_writer_close(floe__posdel_writer *w, floe__content_list *out, floe_error *err)
{
    floe__schema *schema = NULL;
    floe__file_writer *fw = NULL;
    floe__content_list files = {0};
    int rc = w->n ? sort_deletes(w, err) : FLOE_OK;
    if (rc == FLOE_OK && w->n)
        rc = floe__posdel_schema_new(&schema, err);
    if (rc == FLOE_OK && w->n)
        rc = floe__file_writer_new(w->t, FLOE_CONTENT_POSITION_DELETES, schema, NULL, 0, &w->o,
                                   &fw, err);
    if (rc == FLOE_OK && fw)
        rc = write_sorted(w, fw, err);
    if (fw) {
        if (rc == FLOE_OK)
            rc = floe__file_writer_close(fw, &files, err);
        else
            floe__file_writer_abort(fw);
    }
    /* file k holds the next record_count deletes, in order */
    size_t at = 0;
    for (size_t k = 0; rc == FLOE_OK && k < files.n; k++) {
        size_t cnt = (size_t)files.files[k].metrics.record_count;
        if (cnt == 0 || at + cnt > w->n) {
            rc = floe__err_set(err, FLOE_EINTERNAL, "position delete files hold %zu+%zu of %zu "
                               "deletes", at, cnt, w->n);
            break;
        }
        rc = exact_bounds(&files.files[k], w->sorted[w->dels[at].path],
                          w->sorted[w->dels[at + cnt - 1].path], err);
        at += cnt;
    }
    if (rc == FLOE_OK)
        rc = floe__content_list_take(out, &files, err);
    if (rc != FLOE_OK)
        for (size_t k = 0; k < files.n; k++)
            floe__fileio_remove(w->t->io, files.files[k].path, NULL);
    floe__content_list_clear(&files);
    floe_schema_free(schema);
    free_posdel(w);
    return rc;
}

void floe__posdel_writer_abort(floe__posdel_writer *w)
{
    if (w)
        free_posdel(w);
}
