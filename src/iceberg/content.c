/*
 * content.c - content files (one written data or delete file, as a
 * manifest entry describes it) and growable lists of them.
 *
 * A content file owns its path, its metrics and its equality ids; lists
 * own their files.  Moving files between lists moves ownership.
 */
#include "iceberg/iceberg_internal.h"

void floe__content_file_clear(floe__content_file *f)
{
    if (!f)
        return;
    floe__free(f->path);
    floe__file_metrics_free(&f->metrics);
    floe__free(f->equality_ids);
    memset(f, 0, sizeof *f);
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
