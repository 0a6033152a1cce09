/*
 * write_props.c - the table's write properties as file writer options: the
 * Parquet settings and file sizes every writer of a shared table is asked
 * to use (Iceberg's TableProperties), so that files floe writes into a
 * table Spark configured come out as Spark's would.
 *
 *   write.parquet.compression-codec   zstd (default), snappy, gzip, uncompressed
 *   write.parquet.compression-level   the codec's level (default: the codec's)
 *   write.parquet.row-group-size-bytes   128 MiB
 *   write.parquet.page-size-bytes        1 MiB
 *   write.parquet.dict-size-bytes        2 MiB
 *   write.target-file-size-bytes         512 MiB
 *
 * Delete files read write.delete.parquet.* first (then the data forms; the
 * data level only with the data codec) and write.delete.target-file-size-bytes
 * (64 MiB).  A codec floe does not
 * write (lz4, brotli, lzo) or a size that is not a positive integer is an
 * error naming the property: writing other files than the table asks for
 * would go unnoticed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "table/table_internal.h"

#define MIB ((int64_t)1 << 20)

typedef struct props {
    const floe__metadata *md;
    bool del;                        /* delete files: write.delete.* first */
    bool own_codec;                  /* a delete codec of their own: no data level */
    char key[96];                    /* the last property read */
} props;

/* The value of write[.delete].<name>, or NULL; p->key names the one found. */
static const char *get(props *p, const char *name)
{
    const char *v = NULL;
    if (p->del) {
        snprintf(p->key, sizeof p->key, "write.delete.%s", name);
        v = floe__metadata_property(p->md, p->key);
    }
    bool data_level = !p->own_codec || strcmp(name, "parquet.compression-level") != 0;
    if (!v && data_level) {
        snprintf(p->key, sizeof p->key, "write.%s", name);
        v = floe__metadata_property(p->md, p->key);
    }
    return v;
}

static int get_int(props *p, const char *name, int64_t min, int64_t dflt, int64_t *out,
                   floe_error *err)
{
    const char *v = get(p, name);
    *out = dflt;
    if (!v)
        return FLOE_OK;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    FLOE_RETURN_IF(!*v || *end || n < min, err, FLOE_EINVAL, "table property %s is \"%s\": "
                   "not an integer of at least %lld", p->key, v, (long long)min);
    *out = n;
    return FLOE_OK;
}

static int get_codec(props *p, floe_compression *out, floe_error *err)
{
    const char *v = get(p, "parquet.compression-codec");
    *out = FLOE_COMPRESSION_ZSTD;
    if (!v)
        return FLOE_OK;
    p->own_codec = p->del && strncmp(p->key, "write.delete.", 13) == 0;
    int c = floe_compression_from_name(v);      /* any case; "none" or "uncompressed" */
    if (c >= 0) {
        *out = (floe_compression)c;
        return FLOE_OK;
    }
    return floe__err_set(err, FLOE_EUNSUPPORTED, "table property %s is \"%s\": floe writes "
                         "zstd, snappy, gzip or uncompressed Parquet", p->key, v);
}

/* A level the codec takes (zstd's negative "fast" levels included); codecs
 * without levels (snappy, none) ignore it. */
static int check_level(props *p, floe_compression c, int64_t *level, floe_error *err)
{
    int64_t lo = c == FLOE_COMPRESSION_ZSTD ? -(1 << 17) : 0;
    int64_t hi = c == FLOE_COMPRESSION_ZSTD ? 22 : c == FLOE_COMPRESSION_GZIP ? 9 : 0;
    if (!hi)
        *level = 0;
    FLOE_RETURN_IF(*level < lo || *level > hi, err, FLOE_EINVAL, "table property %s is %lld: "
                   "the codec takes levels %lld to %lld", p->key, (long long)*level,
                   (long long)lo, (long long)hi);
    return FLOE_OK;
}

int floe__table_file_options(const floe__table *t, floe__content content,
                             floe__file_writer_options *out, floe_error *err)
{
    props p = {.md = t->loaded->metadata, .del = content != FLOE_CONTENT_DATA};
    floe__file_writer_options o = {0};
    floe_parquet_options_init(&o.parquet, sizeof o.parquet);
    int64_t level, row_group, page, dict, target;
    FLOE_FORWARD(get_codec(&p, &o.parquet.compression, err));
    FLOE_FORWARD(get_int(&p, "parquet.compression-level", INT64_MIN, 0, &level, err));
    FLOE_FORWARD(check_level(&p, o.parquet.compression, &level, err));
    FLOE_FORWARD(get_int(&p, "parquet.row-group-size-bytes", 1, 128 * MIB, &row_group, err));
    FLOE_FORWARD(get_int(&p, "parquet.page-size-bytes", 1, MIB, &page, err));
    FLOE_FORWARD(get_int(&p, "parquet.dict-size-bytes", 1, 2 * MIB, &dict, err));
    FLOE_FORWARD(get_int(&p, "target-file-size-bytes", 1, p.del ? 64 * MIB : 512 * MIB, &target,
                         err));
    o.parquet.compression_level = (int)level;
    o.parquet.row_group_size = (size_t)row_group;
    o.parquet.page_size = (size_t)page;
    o.parquet.dictionary_limit = (size_t)dict;
    o.target_file_size = (uint64_t)target;
    *out = o;
    return FLOE_OK;
}
