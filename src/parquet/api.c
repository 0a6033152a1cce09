/*
 * api.c - the public Parquet writer of floe.h: options, codec names, and a
 * thin wrapper of floe__pq_writer over a local file.
 */
#include <strings.h>

#include "io/io_internal.h"
#include "parquet/parquet_internal.h"

struct floe_parquet_writer {
    floe__pq_writer *w;
    const floe_schema *schema;
};

void floe_parquet_options_init(floe_parquet_options *opts, size_t size)
{
    floe_parquet_options d = {
        .size = sizeof d,
        .compression = FLOE_COMPRESSION_ZSTD,
        .page_size = (size_t)1 << 20,
        .row_group_size = (size_t)128 << 20,
        .dictionary_limit = (size_t)1 << 20,
        .dictionary = 1,
    };
    floe__abi_init(opts, size, &d, sizeof d);
}

int floe_compression_from_name(const char *name)
{
    static const struct {
        const char *name;
        int code;
    } names[] = {
        {"none", FLOE_COMPRESSION_NONE},
        {"uncompressed", FLOE_COMPRESSION_NONE},
        {"snappy", FLOE_COMPRESSION_SNAPPY},
        {"gzip", FLOE_COMPRESSION_GZIP},
        {"zstd", FLOE_COMPRESSION_ZSTD},
    };
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i].name) == 0)
            return names[i].code;
    return -1;
}

int floe_parquet_writer_open(const floe_schema *schema, const char *path,
                             const floe_parquet_options *opts, floe_parquet_writer **out,
                             floe_error *err)
{
    FLOE_RETURN_IF(!schema || !path || !out, err, FLOE_EINVAL,
                   "floe_parquet_writer_open: schema, path and out are required");
    floe_parquet_options po;
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_parquet_options, &po, opts, err));
    floe_parquet_writer *pw = floe__calloc(1, sizeof *pw);
    if (!pw)
        return FLOE_OOM(err);
    floe__output *o = NULL;
    int rc = floe__local_output_open(path, &o, err);
    if (rc == FLOE_OK)
        rc = floe__pq_writer_new(schema, &po, o, &pw->w, err);
    if (rc != FLOE_OK) {
        floe__free(pw);
        return floe__err_wrap(err, rc, "parquet file %s", path);
    }
    pw->schema = schema;
    *out = pw;
    return FLOE_OK;
}

int floe_parquet_writer_write(floe_parquet_writer *w, const floe_row *row, floe_error *err)
{
    FLOE_RETURN_IF(!w || !row, err, FLOE_EINVAL, "floe_parquet_writer_write: no writer or row");
    FLOE_RETURN_IF(row->schema != w->schema, err, FLOE_EINVAL,
                   "floe_parquet_writer_write: the row belongs to another schema");
    return floe__pq_write_row(w->w, row->data.data, row->data.len, err);
}

uint64_t floe_parquet_writer_rows(const floe_parquet_writer *w)
{
    return w ? floe__pq_writer_rows(w->w) : 0;
}

uint64_t floe_parquet_writer_bytes(const floe_parquet_writer *w)
{
    return w ? floe__pq_writer_bytes(w->w) : 0;
}

int floe_parquet_writer_close(floe_parquet_writer *w, uint64_t *file_size, floe_error *err)
{
    FLOE_RETURN_IF(!w, err, FLOE_EINVAL, "floe_parquet_writer_close: no writer");
    floe__file_metrics m;
    int rc = floe__pq_writer_close(w->w, file_size ? &m : NULL, err);
    floe__free(w);
    if (rc == FLOE_OK && file_size) {
        *file_size = m.file_size;
        floe__file_metrics_free(&m);
    }
    return rc;
}

void floe_parquet_writer_abort(floe_parquet_writer *w)
{
    if (!w)
        return;
    floe__pq_writer_abort(w->w);
    floe__free(w);
}
