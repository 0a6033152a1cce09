/*
 * content.c - content files (one written data or delete file, as a
 * manifest entry describes it) and growable lists of them.
 *
 * A content file owns its path, its metrics and its equality ids; lists
 * own their files.  Moving files between lists moves ownership.
 */
#include <strings.h>

#include "iceberg/iceberg_internal.h"

void floe__content_file_clear(floe__content_file *f)
{
    if (!f)
        return;
    floe__free(f->path);
    floe__file_metrics_free(&f->metrics);
    floe__free(f->equality_ids);
    floe__free(f->format);
    floe__free(f->referenced_data_file);
    floe__buf_free(&f->key_metadata);
    floe__buf_free(&f->partition);
    memset(f, 0, sizeof *f);
}

bool floe__content_is_dv(const floe__content_file *f)
{
    return f->content == FLOE_CONTENT_POSITION_DELETES && f->format &&
           strcasecmp(f->format, "puffin") == 0;
}

static int dup_str(const char *s, char **out, floe_error *err)
{
    *out = s ? floe__strdup(s) : NULL;
    return !s || *out ? FLOE_OK : FLOE_OOM(err);
}

static int copy_buf(floe__buf *d, const floe__buf *s, floe_error *err)
{
    floe__buf_init(d, 0);
    return s->len ? floe__buf_append(d, s->data, s->len, err) : FLOE_OK;
}

static int copy_metrics(floe__file_metrics *d, const floe__file_metrics *s, floe_error *err)
{
    *d = *s;
    d->columns = NULL;
    d->split_offsets = NULL;
    d->n_columns = d->n_splits = 0;
    if (s->n_splits) {
        d->split_offsets = floe__malloc(s->n_splits * sizeof *s->split_offsets);
        if (!d->split_offsets)
            return FLOE_OOM(err);
        memcpy(d->split_offsets, s->split_offsets, s->n_splits * sizeof *s->split_offsets);
        d->n_splits = s->n_splits;
    }
    if (!s->n_columns)
        return FLOE_OK;
    d->columns = floe__calloc(s->n_columns, sizeof *d->columns);
    if (!d->columns)
        return FLOE_OOM(err);
    for (size_t i = 0; i < s->n_columns; i++) {
        d->columns[i] = s->columns[i];
        floe__buf_init(&d->columns[i].upper, 0);
        d->n_columns = i + 1;
        FLOE_FORWARD(copy_buf(&d->columns[i].lower, &s->columns[i].lower, err));
        FLOE_FORWARD(copy_buf(&d->columns[i].upper, &s->columns[i].upper, err));
    }
    return FLOE_OK;
}

static int copy_file(floe__content_file *d, const floe__content_file *s, floe_error *err)
{
    *d = *s;
    d->path = d->format = d->referenced_data_file = NULL;
    d->equality_ids = NULL;
    d->n_equality_ids = 0;
    memset(&d->metrics, 0, sizeof d->metrics);
    floe__buf_init(&d->partition, 0);
    FLOE_FORWARD(copy_buf(&d->key_metadata, &s->key_metadata, err));
    FLOE_FORWARD(copy_buf(&d->partition, &s->partition, err));
    FLOE_FORWARD(dup_str(s->path, &d->path, err));
    FLOE_FORWARD(dup_str(s->format, &d->format, err));
    FLOE_FORWARD(dup_str(s->referenced_data_file, &d->referenced_data_file, err));
    FLOE_FORWARD(copy_metrics(&d->metrics, &s->metrics, err));
    if (s->n_equality_ids) {
        d->equality_ids = floe__malloc(s->n_equality_ids * sizeof *s->equality_ids);
        if (!d->equality_ids)
            return FLOE_OOM(err);
        memcpy(d->equality_ids, s->equality_ids, s->n_equality_ids * sizeof *s->equality_ids);
        d->n_equality_ids = s->n_equality_ids;
    }
    return FLOE_OK;
}

int floe__content_file_copy(floe__content_file *dst, const floe__content_file *src,
                            floe_error *err)
{
    int rc = copy_file(dst, src, err);
    if (rc != FLOE_OK)
        floe__content_file_clear(dst);
    return rc;
}

void floe__content_list_clear(floe__content_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        floe__content_file_clear(&l->files[i]);
    floe__free(l->files);
    memset(l, 0, sizeof *l);
}

static int reserve(floe__content_list *l, size_t extra, floe_error *err)
{
    if (l->cap - l->n >= extra)
        return FLOE_OK;
    if (extra > SIZE_MAX / sizeof(floe__content_file) / 2 - l->n)
        return floe__err_set(err, FLOE_ELIMIT, "too many content files");
    size_t cap = l->cap ? l->cap : 8;
    while (cap - l->n < extra)
        cap *= 2;
    floe__content_file *f = floe__realloc(l->files, cap * sizeof *f);
    if (!f)
        return FLOE_OOM(err);
    l->files = f;
    l->cap = cap;
    return FLOE_OK;
}

int floe__content_list_push(floe__content_list *l, floe__content_file *f, floe_error *err)
{
    FLOE_FORWARD(reserve(l, 1, err));
    l->files[l->n++] = *f;
    memset(f, 0, sizeof *f);
    return FLOE_OK;
}

int floe__content_list_take(floe__content_list *dst, floe__content_list *src, floe_error *err)
{
    if (src->n == 0)
        return FLOE_OK;
    FLOE_FORWARD(reserve(dst, src->n, err));
    memcpy(dst->files + dst->n, src->files, src->n * sizeof *src->files);
    dst->n += src->n;
    floe__free(src->files);
    memset(src, 0, sizeof *src);
    return FLOE_OK;
}
