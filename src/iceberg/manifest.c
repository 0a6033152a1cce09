/*
 * manifest.c - Iceberg v2 manifests and manifest lists: written with the
 * spec's Avro schemas and field ids (deflate, which every reader handles
 * without extras), and read back by field id from any writer.
 *
 * Writing follows the shapes Java and pyiceberg write: manifest entries
 * are ADDED with the adding snapshot's id and null sequence numbers (the
 * reader inherits the manifest list's), metrics maps as arrays of
 * {key, value} records (Iceberg's Avro map encoding for non-string keys),
 * header keys schema / schema-id / partition-spec / partition-spec-id /
 * format-version / content.  Manifest lists carry their snapshot-id,
 * parent-snapshot-id ("null" when none), sequence-number and
 * format-version.
 *
 * Reading is for carrying a parent snapshot's manifests forward (lists)
 * and for tests and tools (manifests).  Input is untrusted: every field is
 * looked up by id and type-checked, and anything missing or mistyped is
 * FLOE_EFORMAT naming the entry and field.
 */
#include <stdio.h>
#include <stdlib.h>

#include "avro/avro_internal.h"
#include "iceberg/manifest_internal.h"
#include "iceberg/partition_internal.h"

/* ---- schemas ------------------------------------------------------------------------ */

#define MAP_FIELD(name, id, kid, vid, vtype)                                          \
    "{\"name\":\"" name "\",\"field-id\":" #id ",\"default\":null,\"type\":[\"null\","  \
    "{\"type\":\"array\",\"logicalType\":\"map\",\"items\":{\"type\":\"record\","      \
    "\"name\":\"k" #kid "_v" #vid "\",\"fields\":["                                    \
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":" #kid "},"                      \
    "{\"name\":\"value\",\"type\":\"" vtype "\",\"field-id\":" #vid "}]}}]}"

#define ENTRY_HEAD_A                                                                         \
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["                      \
    "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"                             \
    "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1}," \
    "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,"       \
    "\"field-id\":3},"                                                                   \
    "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,"  \
    "\"field-id\":4},"                                                                   \
    "{\"name\":\"data_file\",\"field-id\":2,\"type\":{\"type\":\"record\",\"name\":\"r2\"," \
    "\"fields\":["                                                                       \
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"                          \
    "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"                     \
    "{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"                   \
    "{\"name\":\"partition\",\"field-id\":102,"                                          \
    "\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":["
/* the spec's partition fields go here (manifest_partition.c) */
#define ENTRY_HEAD_B                                                                         \
    "]}},"                                                                               \
    "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"                    \
    "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104},"              \
    MAP_FIELD("column_sizes", 108, 117, 118, "long") ","                                 \
    MAP_FIELD("value_counts", 109, 119, 120, "long") ","                                 \
    MAP_FIELD("null_value_counts", 110, 121, 122, "long") ","                            \
    MAP_FIELD("nan_value_counts", 137, 138, 139, "long") ","                             \
    MAP_FIELD("lower_bounds", 125, 126, 127, "bytes") ","                                \
    MAP_FIELD("upper_bounds", 128, 129, 130, "bytes") ","                                \
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,"         \
    "\"field-id\":131},"                                                                 \
    "{\"name\":\"split_offsets\",\"default\":null,\"field-id\":132,"                     \
    "\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\",\"element-id\":133}]},"   \
    "{\"name\":\"equality_ids\",\"default\":null,\"field-id\":135,"                      \
    "\"type\":[\"null\",{\"type\":\"array\",\"items\":\"int\",\"element-id\":136}]},"    \
    "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"default\":null,"          \
    "\"field-id\":140}"
#define ENTRY_TAIL "]}}]}"
#define F_FIRST_ROW_ID                                                                       \
    ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":142}"
#define F_REFERENCED                                                                         \
    ",{\"name\":\"referenced_data_file\",\"type\":[\"null\",\"string\"],\"default\":null,"       \
    "\"field-id\":143}"
#define F_CONTENT_RANGE                                                                      \
    ",{\"name\":\"content_offset\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":144}" \
    ",{\"name\":\"content_size_in_bytes\",\"type\":[\"null\",\"long\"],\"default\":null,"       \
    "\"field-id\":145}"

/* The manifest_entry schema for spec ps: v2 data manifests, v2 delete
 * manifests (referenced_data_file for file-scoped position deletes), v3
 * manifests (row lineage, DV ranges). */
static int entry_schema(const floe__partition_spec *ps, int version, bool deletes,
                        floe__buf *out, floe_error *err)
{
    FLOE_FORWARD(floe__buf_append(out, ENTRY_HEAD_A, strlen(ENTRY_HEAD_A), err));
    FLOE_FORWARD(floe__manifest_partition_schema(ps, out, err));
    const char *tail = version >= 3 ? ENTRY_HEAD_B F_FIRST_ROW_ID F_REFERENCED F_CONTENT_RANGE
                                      ENTRY_TAIL
                       : deletes ? ENTRY_HEAD_B F_REFERENCED ENTRY_TAIL
                                 : ENTRY_HEAD_B ENTRY_TAIL;
    FLOE_FORWARD(floe__buf_append(out, tail, strlen(tail) + 1, err));   /* with the NUL */
    return FLOE_OK;
}


#define LIST_HEAD                                                                            \
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["                       \
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"                 \
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"                 \
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"                \
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"                          \
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"                 \
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"             \
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"               \
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"                \
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"             \
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"              \
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"                \
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"             \
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"              \
    "{\"name\":\"partitions\",\"default\":null,\"field-id\":507,\"type\":[\"null\","     \
    "{\"type\":\"array\",\"element-id\":508,\"items\":{\"type\":\"record\",\"name\":\"r508\"," \
    "\"fields\":["                                                                       \
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"                \
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"default\":null,"       \
    "\"field-id\":518},"                                                                 \
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,"          \
    "\"field-id\":510},"                                                                 \
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,"          \
    "\"field-id\":511}"                                                                  \
    "]}}]},"                                                                             \
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,"         \
    "\"field-id\":519}"
static const char LIST_SCHEMA[] = LIST_HEAD "]}";
static const char LIST_SCHEMA_V3[] =
    LIST_HEAD ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
    "\"field-id\":520}]}";

/* ---- shared --------------------------------------------------------------------------- */

void floe__manifest_file_clear(floe__manifest_file *m)
{
    if (!m)
        return;
    floe__free(m->path);
    for (size_t i = 0; i < m->n_partitions; i++) {
        floe__buf_free(&m->partitions[i].lower);
        floe__buf_free(&m->partitions[i].upper);
    }
    floe__free(m->partitions);
    floe__buf_free(&m->key_metadata);
    memset(m, 0, sizeof *m);
}

void floe__manifest_list_clear(floe__manifest_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        floe__manifest_file_clear(&l->items[i]);
    floe__free(l->items);
    memset(l, 0, sizeof *l);
}

/* Grow an array of `size`-byte items to hold one more; NULL on failure. */
static void *grow(void **items, size_t *n, size_t *cap, size_t size)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        if (c > SIZE_MAX / size / 2)
            return NULL;
        void *p = floe__realloc(*items, c * size);
        if (!p)
            return NULL;
        *items = p;
        *cap = c;
    }
    uint8_t *slot = (uint8_t *)*items + (*n)++ * size;
    memset(slot, 0, size);
    return slot;
}

floe__manifest_file *floe__manifest_list_push(floe__manifest_list *l)
{
    return grow((void **)&l->items, &l->n, &l->cap, sizeof *l->items);
}

/* jansson (2.14) ignores a failed callback in some paths and still reports
 * success, so failures are remembered here and checked after the dump. */
typedef struct dump_sink {
    floe__buf buf;
    bool failed;
} dump_sink;

static int dump_cb(const char *buffer, size_t size, void *data)
{
    dump_sink *d = data;
    if (!d->failed && floe__buf_append(&d->buf, buffer, size, NULL) != FLOE_OK)
        d->failed = true;
    return d->failed ? -1 : 0;
}

/* Compact JSON text of v (caller frees). */
static int json_text(const json_t *v, char **out, floe_error *err)
{
    dump_sink d = {.failed = false};
    floe__buf_init(&d.buf, 0);
    int rc = json_dump_callback(v, dump_cb, &d, JSON_COMPACT | JSON_ENCODE_ANY) == 0 && !d.failed
                 ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK) {
        *out = floe__buf_strdup(&d.buf);
        rc = *out ? FLOE_OK : FLOE_OOM(err);
    }
    floe__buf_free(&d.buf);
    return rc;
}

/* Open an Avro writer on a new object `uri` (deflate). */
static int open_avro(floe__fileio *io, const char *uri, const char *schema,
                     const floe__avro_meta *meta, size_t n_meta, floe__avro_writer **w,
                     floe_error *err)
{
    floe__output *out;
    FLOE_FORWARD(floe__fileio_open_output(io, uri, &out, err));
    floe__avro_writer_options o = {.codec = FLOE_AVRO_CODEC_DEFLATE};
    int rc = floe__avro_writer_new(schema, &o, meta, n_meta, out, w, err);
    if (rc != FLOE_OK)
        out->abort(out);
    return rc;
}

/* End the top-level record, close the file, and wrap errors with its uri. */
static int finish_avro(floe__avro_writer *w, const char *uri, uint64_t *size, floe_error *err)
{
    int rc = floe__avro_writer_error(w, err);
    if (rc != FLOE_OK) {
        floe__avro_writer_abort(w);
        return floe__err_wrap(err, rc, "writing %s", uri);
    }
    FLOE_FORWARD_CTX(floe__avro_writer_close(w, size, err), err, "writing %s", uri);
    return FLOE_OK;
}

/* ---- writing manifests ------------------------------------------------------------------- */

/* One metrics map: pairs (field id, value) of the columns `has` selects. */
typedef enum which { SIZES, VALUES, NULLS, NANS, LOWER, UPPER } which;

static bool has_metric(const floe__col_metrics *c, which k)
{
    switch (k) {
    case SIZES: return true;
    case VALUES: case NULLS: return c->has_counts;
    case NANS: return c->has_nan_count;
    case LOWER: return c->has_lower;
    case UPPER: return c->has_upper;
    }
    return false;
}

static void put_map(floe__avro_writer *w, const floe__file_metrics *m, which k)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_columns; i++)
        n += has_metric(&m->columns[i], k);
    floe__avro_begin_array(w, n);
    for (size_t i = 0; i < m->n_columns; i++) {
        const floe__col_metrics *c = &m->columns[i];
        if (!has_metric(c, k))
            continue;
        floe__avro_begin_record(w);
        floe__avro_put_int(w, c->field_id);
        switch (k) {
        case SIZES: floe__avro_put_long(w, (int64_t)c->column_size); break;
        case VALUES: floe__avro_put_long(w, (int64_t)c->value_count); break;
        case NULLS: floe__avro_put_long(w, (int64_t)c->null_count); break;
        case NANS: floe__avro_put_long(w, (int64_t)c->nan_count); break;
        case LOWER: floe__avro_put_bytes(w, c->lower.data, c->lower.len); break;
        case UPPER: floe__avro_put_bytes(w, c->upper.data, c->upper.len); break;
        }
        floe__avro_end_record(w, NULL);
    }
    floe__avro_end_array(w);
}

static void put_opt_long(floe__avro_writer *w, bool has, int64_t v)
{
    if (has)
        floe__avro_put_long(w, v);
    else
        floe__avro_put_null(w);
}

static void put_opt_int(floe__avro_writer *w, bool has, int32_t v)
{
    if (has)
        floe__avro_put_int(w, v);
    else
        floe__avro_put_null(w);
}

static void put_opt_str(floe__avro_writer *w, const char *s)
{
    if (s)
        floe__avro_put_cstr(w, s);
    else
        floe__avro_put_null(w);
}

/* The data_file record; `version` picks the trailing v3 / v2-delete fields. */
static int put_data_file(floe__avro_writer *w, const floe__partition_spec *ps,
                         const floe__content_file *f, int version, bool deletes, floe_error *err)
{
    const floe__file_metrics *m = &f->metrics;
    floe__avro_begin_record(w);
    floe__avro_put_int(w, (int32_t)f->content);
    floe__avro_put_cstr(w, f->path);
    floe__avro_put_cstr(w, f->format ? f->format : "PARQUET");
    FLOE_FORWARD(floe__manifest_put_partition(w, ps, f, err));
    floe__avro_end_record(w, NULL);
    floe__avro_put_long(w, (int64_t)m->record_count);
    floe__avro_put_long(w, (int64_t)m->file_size);
    for (which k = SIZES; k <= UPPER; k++)
        put_map(w, m, k);
    if (f->has_key_metadata)
        floe__avro_put_bytes(w, f->key_metadata.data, f->key_metadata.len);
    else
        floe__avro_put_null(w);
    floe__avro_begin_array(w, m->n_splits);
    for (size_t i = 0; i < m->n_splits; i++)
        floe__avro_put_long(w, (int64_t)m->split_offsets[i]);
    floe__avro_end_array(w);
    if (f->content == FLOE_CONTENT_EQUALITY_DELETES) {
        floe__avro_begin_array(w, f->n_equality_ids);
        for (size_t i = 0; i < f->n_equality_ids; i++)
            floe__avro_put_int(w, f->equality_ids[i]);
        floe__avro_end_array(w);
    } else {
        floe__avro_put_null(w);
    }
    put_opt_int(w, f->has_sort_order_id, f->sort_order_id);   /* 140: an int */
    if (version >= 3)
        put_opt_long(w, f->has_first_row_id && f->content == FLOE_CONTENT_DATA, f->first_row_id);
    if (version >= 3 || deletes)
        put_opt_str(w, f->referenced_data_file);
    if (version >= 3) {
        put_opt_long(w, f->has_content_offset, f->content_offset);
        put_opt_long(w, f->has_content_offset, f->content_size);
    }
    floe__avro_end_record(w, NULL);
    return FLOE_OK;
}

static int put_entry(floe__avro_writer *w, const floe__partition_spec *ps,
                     const floe__manifest_entry *e, int version, bool deletes, floe_error *err)
{
    floe__avro_begin_record(w);
    floe__avro_put_int(w, e->status);
    put_opt_long(w, e->has_snapshot_id, e->snapshot_id);
    put_opt_long(w, e->has_sequence_number, e->sequence_number);
    put_opt_long(w, e->has_file_sequence_number, e->file_sequence_number);
    FLOE_FORWARD(put_data_file(w, ps, &e->file, version, deletes, err));
    return floe__avro_end_record(w, err);
}

static bool wanted(const floe__content_file *f, bool deletes)
{
    return (f->content != FLOE_CONTENT_DATA) == deletes;
}

static int check_file(const floe__content_file *f, size_t i, floe_error *err)
{
    FLOE_RETURN_IF(!f->path || !*f->path, err, FLOE_EINVAL, "file %zu has no path", i);
    FLOE_RETURN_IF(f->content > FLOE_CONTENT_EQUALITY_DELETES, err, FLOE_EINVAL,
                   "file %s: unknown content %d", f->path, (int)f->content);
    FLOE_RETURN_IF(f->content == FLOE_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 0, err,
                   FLOE_EINVAL, "equality delete file %s has no equality ids", f->path);
    FLOE_RETURN_IF(f->metrics.record_count > INT64_MAX || f->metrics.file_size > INT64_MAX, err,
                   FLOE_EINVAL, "file %s: counts out of range", f->path);
    return FLOE_OK;
}

/* The manifest's header metadata. */
static int manifest_meta(const floe__manifest_meta *m, int version, char **texts,
                         char ids[3][24], floe__avro_meta meta[6], floe_error *err)
{
    const json_t *fields = json_object_get(m->spec, "fields");
    FLOE_RETURN_IF(!json_is_array(fields), err, FLOE_EINVAL, "partition spec has no fields");
    FLOE_FORWARD(json_text(m->schema, &texts[0], err));
    FLOE_FORWARD(json_text(fields, &texts[1], err));
    snprintf(ids[0], 24, "%lld", (long long)json_integer_value(json_object_get(m->schema,
                                                                              "schema-id")));
    snprintf(ids[1], 24, "%lld", (long long)json_integer_value(json_object_get(m->spec,
                                                                              "spec-id")));
    snprintf(ids[2], 24, "%d", version);
    meta[0] = (floe__avro_meta){"schema", texts[0], FLOE_AVRO_STRLEN};
    meta[1] = (floe__avro_meta){"schema-id", ids[0], FLOE_AVRO_STRLEN};
    meta[2] = (floe__avro_meta){"partition-spec", texts[1], FLOE_AVRO_STRLEN};
    meta[3] = (floe__avro_meta){"partition-spec-id", ids[1], FLOE_AVRO_STRLEN};
    meta[4] = (floe__avro_meta){"format-version", ids[2], FLOE_AVRO_STRLEN};
    meta[5] = (floe__avro_meta){"content", m->deletes ? "deletes" : "data", FLOE_AVRO_STRLEN};
    return FLOE_OK;
}

/* Count an entry into the manifest list entry e (status, rows, min seq). */
static int count_entry(const floe__manifest_meta *m, const floe__manifest_entry *x,
                       floe__manifest_file *e, bool *any_live, floe_error *err)
{
    int64_t rows = (int64_t)x->file.metrics.record_count;
    int32_t *files = x->status == 1 ? &e->added_files
                                    : x->status == 0 ? &e->existing_files : &e->deleted_files;
    int64_t *r = x->status == 1 ? &e->added_rows
                                : x->status == 0 ? &e->existing_rows : &e->deleted_rows;
    FLOE_RETURN_IF(*files == INT32_MAX || *r > INT64_MAX - rows, err, FLOE_ELIMIT,
                   "too many files for one manifest");
    (*files)++;
    *r += rows;
    if (x->status != 2) {
        int64_t seq = x->has_sequence_number ? x->sequence_number : m->sequence_number;
        if (!*any_live || seq < e->min_sequence_number)
            e->min_sequence_number = seq;
        *any_live = true;
    }
    return FLOE_OK;
}

static int write_entries(floe__avro_writer *w, const floe__partition_spec *ps,
                         const floe__manifest_meta *m, int version,
                         const floe__manifest_entry *entries, size_t n, floe__manifest_file *e,
                         floe_error *err)
{
    bool any_live = false;
    for (size_t i = 0; i < n; i++) {
        FLOE_FORWARD(put_entry(w, ps, &entries[i], version, m->deletes, err));
        FLOE_FORWARD(count_entry(m, &entries[i], e, &any_live, err));
    }
    if (!any_live)
        e->min_sequence_number = m->sequence_number;
    return FLOE_OK;
}

/* m->spec bound to m->schema (*out NULL for an unpartitioned spec). */
static int bind_spec(const floe__manifest_meta *m, floe__partition_spec **out, floe_error *err)
{
    *out = NULL;
    if (json_array_size(json_object_get(m->spec, "fields")) == 0)
        return FLOE_OK;
    floe__schema *s;
    FLOE_FORWARD_CTX(floe__schema_from_jansson(m->schema, &s, err), err,
                     "the schema of a partitioned manifest");
    int rc = floe__partition_spec_from_json(m->spec, s, out, err);
    floe_schema_free(s);
    return rc;
}

static int write_manifest_file(floe__fileio *io, const char *uri, const floe__manifest_meta *m,
                               int version, const floe__partition_spec *ps,
                               const floe__manifest_entry *entries, size_t n,
                               floe__manifest_file *e, uint64_t *size, floe_error *err)
{
    char *texts[2] = {NULL, NULL};
    char ids[3][24];
    floe__avro_meta meta[6];
    floe__avro_writer *w = NULL;
    floe__buf schema;
    floe__buf_init(&schema, 0);
    int rc = entry_schema(ps, version, m->deletes, &schema, err);
    if (rc == FLOE_OK)
        rc = manifest_meta(m, version, texts, ids, meta, err);
    if (rc == FLOE_OK)
        rc = open_avro(io, uri, (const char *)schema.data, meta, 6, &w, err);
    floe__buf_free(&schema);
    if (rc == FLOE_OK) {
        rc = write_entries(w, ps, m, version, entries, n, e, err);
        if (rc == FLOE_OK) {
            rc = finish_avro(w, uri, size, err);
        } else {
            floe__avro_writer_abort(w);
            rc = floe__err_wrap(err, rc, "writing %s", uri);
        }
    }
    floe__free(texts[0]);
    floe__free(texts[1]);
    return rc;
}

int floe__manifest_write_entries(floe__fileio *io, const char *uri, const floe__manifest_meta *m,
                                 int format_version, const floe__manifest_entry *entries,
                                 size_t n, floe__manifest_file *entry, floe_error *err)
{
    int version = format_version >= 3 ? 3 : 2;
    for (size_t i = 0; i < n; i++) {
        FLOE_FORWARD(check_file(&entries[i].file, i, err));
        FLOE_RETURN_IF(!wanted(&entries[i].file, m->deletes) || entries[i].status < 0 ||
                       entries[i].status > 2, err, FLOE_EINVAL,
                       "manifest entry %zu (%s): wrong content or status for this manifest", i,
                       entries[i].file.path);
    }
    floe__manifest_file e = {0};
    uint64_t size = 0;
    floe__partition_spec *ps;
    FLOE_FORWARD(bind_spec(m, &ps, err));
    int rc = floe__manifest_partition_summaries(ps, entries, n, &e, err);
    if (rc == FLOE_OK)
        rc = write_manifest_file(io, uri, m, version, ps, entries, n, &e, &size, err);
    floe__partition_spec_free(ps);
    if (rc != FLOE_OK) {
        floe__manifest_file_clear(&e);
        return rc;
    }
    e.path = floe__strdup(uri);
    if (!e.path) {
        floe__manifest_file_clear(&e);
        floe__fileio_remove(io, uri, NULL);
        return FLOE_OOM(err);
    }
    e.length = (int64_t)size;
    e.spec_id = (int32_t)json_integer_value(json_object_get(m->spec, "spec-id"));
    e.content = m->deletes ? 1 : 0;
    e.sequence_number = m->sequence_number;
    e.added_snapshot_id = m->snapshot_id;
    *entry = e;
    return FLOE_OK;
}

int floe__manifest_write(floe__fileio *io, const char *uri, const floe__manifest_meta *m,
                         const floe__content_file *files, size_t n_files,
                         floe__manifest_file *entry, floe_error *err)
{
    for (size_t i = 0; i < n_files; i++)
        FLOE_FORWARD(check_file(&files[i], i, err));
    floe__manifest_entry *es = floe__calloc(n_files ? n_files : 1, sizeof *es);
    if (!es)
        return FLOE_OOM(err);
    size_t n = 0;
    for (size_t i = 0; i < n_files; i++) {
        if (!wanted(&files[i], m->deletes))
            continue;
        es[n] = (floe__manifest_entry){.status = 1, .has_snapshot_id = true,
                                       .snapshot_id = m->snapshot_id};
        es[n].file = files[i];               /* a shallow copy: not freed here */
        n++;
    }
    int rc = floe__manifest_write_entries(io, uri, m, 2, es, n, entry, err);
    floe__free(es);
    return rc;
}

/* ---- writing manifest lists ------------------------------------------------------------------ */

static void put_opt_bytes(floe__avro_writer *w, bool has, const floe__buf *b)
{
    if (has)
        floe__avro_put_bytes(w, b->data, b->len);
    else
        floe__avro_put_null(w);
}

static int put_manifest_file(floe__avro_writer *w, const floe__manifest_file *m, bool v3,
                             floe_error *err)
{
    floe__avro_begin_record(w);
    floe__avro_put_cstr(w, m->path);
    floe__avro_put_long(w, m->length);
    floe__avro_put_int(w, m->spec_id);
    floe__avro_put_int(w, m->content);
    floe__avro_put_long(w, m->sequence_number);
    floe__avro_put_long(w, m->min_sequence_number);
    floe__avro_put_long(w, m->added_snapshot_id);
    floe__avro_put_int(w, m->added_files);
    floe__avro_put_int(w, m->existing_files);
    floe__avro_put_int(w, m->deleted_files);
    floe__avro_put_long(w, m->added_rows);
    floe__avro_put_long(w, m->existing_rows);
    floe__avro_put_long(w, m->deleted_rows);
    if (m->has_partitions) {
        floe__avro_begin_array(w, m->n_partitions);
        for (size_t i = 0; i < m->n_partitions; i++) {
            const floe__partition_summary *p = &m->partitions[i];
            floe__avro_begin_record(w);
            floe__avro_put_boolean(w, p->contains_null);
            if (p->contains_nan < 0)
                floe__avro_put_null(w);
            else
                floe__avro_put_boolean(w, p->contains_nan != 0);
            put_opt_bytes(w, p->has_lower, &p->lower);
            put_opt_bytes(w, p->has_upper, &p->upper);
            floe__avro_end_record(w, NULL);
        }
        floe__avro_end_array(w);
    } else {
        floe__avro_put_null(w);
    }
    put_opt_bytes(w, m->has_key_metadata, &m->key_metadata);
    if (v3)
        put_opt_long(w, m->has_first_row_id && m->content == 0, m->first_row_id);
    return floe__avro_end_record(w, err);
}

int floe__manifest_list_write_v(floe__fileio *io, const char *uri, const floe__manifest_list *l,
                                const floe__list_meta *lm, uint64_t *length, floe_error *err)
{
    char sid[24], pid[24], seq[24], rid[24];
    bool v3 = lm->format_version >= 3;
    snprintf(sid, sizeof sid, "%lld", (long long)lm->snapshot_id);
    if (lm->parent_id < 0)
        snprintf(pid, sizeof pid, "null");
    else
        snprintf(pid, sizeof pid, "%lld", (long long)lm->parent_id);
    snprintf(seq, sizeof seq, "%lld", (long long)lm->sequence_number);
    snprintf(rid, sizeof rid, "%lld", (long long)lm->first_row_id);
    floe__avro_meta meta[] = {
        {"snapshot-id", sid, FLOE_AVRO_STRLEN},
        {"parent-snapshot-id", pid, FLOE_AVRO_STRLEN},
        {"sequence-number", seq, FLOE_AVRO_STRLEN},
        {"format-version", v3 ? "3" : "2", FLOE_AVRO_STRLEN},
        {"first-row-id", rid, FLOE_AVRO_STRLEN},
    };
    floe__avro_writer *w;
    FLOE_FORWARD_CTX(open_avro(io, uri, v3 ? LIST_SCHEMA_V3 : LIST_SCHEMA, meta, v3 ? 5 : 4, &w,
                               err), err, "writing %s", uri);
    for (size_t i = 0; i < l->n; i++) {
        int rc = put_manifest_file(w, &l->items[i], v3, err);
        if (rc != FLOE_OK) {
            floe__avro_writer_abort(w);
            return floe__err_wrap(err, rc, "writing %s", uri);
        }
    }
    return finish_avro(w, uri, length, err);
}

int floe__manifest_list_write(floe__fileio *io, const char *uri, const floe__manifest_list *l,
                              int64_t snapshot_id, int64_t parent_id, int64_t sequence_number,
                              uint64_t *length, floe_error *err)
{
    floe__list_meta lm = {.snapshot_id = snapshot_id, .parent_id = parent_id,
                          .sequence_number = sequence_number, .format_version = 2};
    return floe__manifest_list_write_v(io, uri, l, &lm, length, err);
}

/* ---- reading: shared ----------------------------------------------------------------------------- */

typedef struct rd {
    floe_error *err;
    const char *what;        /* "manifest list entry", "manifest entry" */
    uint64_t index;
} rd;

static int bad(rd *r, int32_t id, const char *why)
{
    return floe__err_set(r->err, FLOE_EFORMAT, "%s %llu: field %d %s", r->what,
                         (unsigned long long)r->index, (int)id, why);
}

/* A required integer field (int or long). */
static int req_long(rd *r, const floe__avro_value *rec, int32_t id, int64_t *out)
{
    const floe__avro_value *v = floe__avro_get_id(rec, id);
    if (!v)
        return bad(r, id, "is missing");
    if (!floe__avro_long(v, out))
        return bad(r, id, "is not an integer");
    return FLOE_OK;
}

static int req_int(rd *r, const floe__avro_value *rec, int32_t id, int32_t *out)
{
    int64_t v;
    FLOE_FORWARD(req_long(r, rec, id, &v));
    if (v < INT32_MIN || v > INT32_MAX)
        return bad(r, id, "is out of range for an int");
    *out = (int32_t)v;
    return FLOE_OK;
}

/* An optional integer: absent or null leaves *has false. */
static int opt_long(rd *r, const floe__avro_value *rec, int32_t id, bool *has, int64_t *out)
{
    const floe__avro_value *v = floe__avro_get_id(rec, id);
    *has = false;
    if (floe__avro_is_null(v))
        return FLOE_OK;
    if (!floe__avro_long(v, out))
        return bad(r, id, "is not an integer");
    *has = true;
    return FLOE_OK;
}

static int opt_bytes(rd *r, const floe__avro_value *rec, int32_t id, bool *has, floe__buf *out)
{
    const floe__avro_value *v = floe__avro_get_id(rec, id);
    const uint8_t *p;
    size_t n;
    *has = false;
    if (floe__avro_is_null(v))
        return FLOE_OK;
    if (!floe__avro_bytes(v, &p, &n))
        return bad(r, id, "is not bytes");
    floe__buf_init(out, 0);
    FLOE_FORWARD(floe__buf_append(out, p, n, r->err));
    *has = true;
    return FLOE_OK;
}

static int req_string(rd *r, const floe__avro_value *rec, int32_t id, char **out)
{
    const floe__avro_value *v = floe__avro_get_id(rec, id);
    const char *s;
    if (!v)
        return bad(r, id, "is missing");
    if (!floe__avro_string(v, &s, NULL))
        return bad(r, id, "is not a string");
    *out = floe__strdup(s);
    return *out ? FLOE_OK : FLOE_OOM(r->err);
}

/* The array value of an optional field: NULL when null/absent. */
static int opt_array(rd *r, const floe__avro_value *rec, int32_t id,
                     const floe__avro_value **out)
{
    const floe__avro_value *v = floe__avro_get_id(rec, id);
    *out = NULL;
    if (floe__avro_is_null(v))
        return FLOE_OK;
    if (v->type != FLOE_AVRO_ARRAY)
        return bad(r, id, "is not an array");
    *out = v;
    return FLOE_OK;
}

/* ---- reading manifest lists --------------------------------------------------------------------- */

static int read_partitions(rd *r, const floe__avro_value *rec, floe__manifest_file *m)
{
    const floe__avro_value *arr;
    FLOE_FORWARD(opt_array(r, rec, 507, &arr));
    if (!arr)
        return FLOE_OK;
    m->has_partitions = true;
    if (arr->n == 0)
        return FLOE_OK;
    m->partitions = floe__calloc(arr->n, sizeof *m->partitions);
    if (!m->partitions)
        return FLOE_OOM(r->err);
    for (size_t i = 0; i < arr->n; i++) {
        const floe__avro_value *p = floe__avro_item(arr, i);
        floe__partition_summary *s = &m->partitions[i];
        m->n_partitions = i + 1;
        if (!p || p->type != FLOE_AVRO_RECORD)
            return bad(r, 508, "holds a non-record");
        const floe__avro_value *cn = floe__avro_get_id(p, 509);
        if (!floe__avro_boolean(cn, &s->contains_null))
            return bad(r, 509, "is not a boolean");
        const floe__avro_value *nan = floe__avro_get_id(p, 518);
        bool b;
        s->contains_nan = floe__avro_is_null(nan) ? -1 : floe__avro_boolean(nan, &b) ? b : -2;
        if (s->contains_nan == -2)
            return bad(r, 518, "is not a boolean");
        FLOE_FORWARD(opt_bytes(r, p, 510, &s->has_lower, &s->lower));
        FLOE_FORWARD(opt_bytes(r, p, 511, &s->has_upper, &s->upper));
    }
    return FLOE_OK;
}

/* A v1 list may leave the counts null: refuse rather than invent them. */
static int req_count(rd *r, const floe__avro_value *rec, int32_t id, int64_t *out)
{
    bool has;
    FLOE_FORWARD(opt_long(r, rec, id, &has, out));
    if (!has)
        return floe__err_set(r->err, FLOE_EUNSUPPORTED,
                             "%s %llu: field %d (a file or row count) is null; floe cannot "
                             "carry such a manifest forward", r->what,
                             (unsigned long long)r->index, (int)id);
    if (*out < 0)
        return bad(r, id, "is negative");
    return FLOE_OK;
}

static int read_manifest_file(rd *r, const floe__avro_value *rec, floe__manifest_file *m)
{
    bool has;
    int64_t c[6];
    static const int32_t count_ids[6] = {504, 505, 506, 512, 513, 514};
    FLOE_FORWARD(req_string(r, rec, 500, &m->path));
    FLOE_FORWARD(req_long(r, rec, 501, &m->length));
    FLOE_FORWARD(req_int(r, rec, 502, &m->spec_id));
    FLOE_FORWARD(opt_long(r, rec, 517, &has, &c[0]));
    m->content = has ? (int32_t)c[0] : 0;
    if (has && c[0] != 0 && c[0] != 1)
        return bad(r, 517, "is not 0 (data) or 1 (deletes)");
    FLOE_FORWARD(opt_long(r, rec, 515, &has, &m->sequence_number));
    FLOE_FORWARD(opt_long(r, rec, 516, &has, &m->min_sequence_number));
    FLOE_FORWARD(req_long(r, rec, 503, &m->added_snapshot_id));
    for (int i = 0; i < 6; i++)
        FLOE_FORWARD(req_count(r, rec, count_ids[i], &c[i]));
    if (c[0] > INT32_MAX || c[1] > INT32_MAX || c[2] > INT32_MAX)
        return bad(r, 504, "(a file count) is out of range for an int");
    m->added_files = (int32_t)c[0];
    m->existing_files = (int32_t)c[1];
    m->deleted_files = (int32_t)c[2];
    m->added_rows = c[3];
    m->existing_rows = c[4];
    m->deleted_rows = c[5];
    FLOE_FORWARD(read_partitions(r, rec, m));
    FLOE_FORWARD(opt_long(r, rec, 520, &m->has_first_row_id, &m->first_row_id));
    return opt_bytes(r, rec, 519, &m->has_key_metadata, &m->key_metadata);
}

int floe__manifest_list_parse(const uint8_t *data, size_t len, floe__manifest_list *out,
                              floe_error *err)
{
    floe__avro_reader *ar;
    FLOE_FORWARD_CTX(floe__avro_reader_open(data, len, NULL, &ar, err), err,
                     "reading a manifest list");
    size_t keep = out->n;
    rd r = {err, "manifest list entry", 0};
    const floe__avro_value *v;
    int rc;
    while ((rc = floe__avro_reader_next(ar, &v, err)) == FLOE_OK && v) {
        floe__manifest_file *m = floe__manifest_list_push(out);
        if (!m) {
            rc = FLOE_OOM(err);
            break;
        }
        if (v->type != FLOE_AVRO_RECORD)
            rc = floe__err_set(err, FLOE_EFORMAT, "manifest list entry %llu is not a record",
                               (unsigned long long)r.index);
        else
            rc = read_manifest_file(&r, v, m);
        if (rc != FLOE_OK)
            break;
        r.index++;
    }
    floe__avro_reader_free(ar);
    if (rc != FLOE_OK) {
        for (size_t i = keep; i < out->n; i++)
            floe__manifest_file_clear(&out->items[i]);
        out->n = keep;
        return floe__err_wrap(err, rc, "reading a manifest list");
    }
    return FLOE_OK;
}

/* ---- reading manifests ---------------------------------------------------------------------------- */

void floe__manifest_entries_clear(floe__manifest_entries *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++) {
        floe__free(e->items[i].file_format);
        floe__content_file_clear(&e->items[i].file);
    }
    floe__free(e->items);
    floe__free(e->content);
    memset(e, 0, sizeof *e);
}

/* The metrics maps: field id of the map, and of its key and value. */
static const struct {
    int32_t id;
    which kind;
} MAPS[] = {{108, SIZES}, {109, VALUES}, {110, NULLS}, {137, NANS}, {125, LOWER}, {128, UPPER}};

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The {key, value} records of a metrics map, checked. */
static int map_item(rd *r, const floe__avro_value *arr, size_t i, int32_t map_id, int32_t *key,
                    const floe__avro_value **val)
{
    const floe__avro_value *it = floe__avro_item(arr, i);
    int64_t k;
    if (!it || it->type != FLOE_AVRO_RECORD)
        return bad(r, map_id, "holds a non-record item");
    if (!floe__avro_long(floe__avro_get(it, "key"), &k) || k < INT32_MIN || k > INT32_MAX)
        return bad(r, map_id, "has an item without an int key");
    *val = floe__avro_get(it, "value");
    if (!*val)
        return bad(r, map_id, "has an item without a value");
    *key = (int32_t)k;
    return FLOE_OK;
}

/* The distinct column ids named by any metrics map, sorted. */
static int collect_ids(rd *r, const floe__avro_value *df, int32_t **ids, size_t *n)
{
    size_t total = 0;
    const floe__avro_value *maps[6];
    for (size_t k = 0; k < 6; k++) {
        FLOE_FORWARD(opt_array(r, df, MAPS[k].id, &maps[k]));
        total += maps[k] ? maps[k]->n : 0;
    }
    *ids = floe__malloc((total ? total : 1) * sizeof **ids);
    if (!*ids)
        return FLOE_OOM(r->err);
    size_t at = 0;
    for (size_t k = 0; k < 6; k++) {
        for (size_t i = 0; maps[k] && i < maps[k]->n; i++) {
            const floe__avro_value *val;
            FLOE_FORWARD(map_item(r, maps[k], i, MAPS[k].id, &(*ids)[at], &val));
            at++;
        }
    }
    qsort(*ids, at, sizeof **ids, cmp_i32);
    size_t u = 0;
    for (size_t i = 0; i < at; i++)
        if (u == 0 || (*ids)[u - 1] != (*ids)[i])
            (*ids)[u++] = (*ids)[i];
    *n = u;
    return FLOE_OK;
}

static int set_metric(rd *r, floe__col_metrics *c, which kind, const floe__avro_value *val,
                      int32_t map_id)
{
    int64_t v = 0;
    const uint8_t *p;
    size_t n;
    if (kind == LOWER || kind == UPPER) {
        if (!floe__avro_bytes(val, &p, &n))
            return bad(r, map_id, "has a non-bytes bound");
        floe__buf *b = kind == LOWER ? &c->lower : &c->upper;
        floe__buf_reset(b);
        FLOE_FORWARD(floe__buf_append(b, p, n, r->err));
        floe__buf_shrink(b);                         /* a plan holds every file's */
        *(kind == LOWER ? &c->has_lower : &c->has_upper) = true;
        return FLOE_OK;
    }
    if (!floe__avro_long(val, &v) || v < 0)
        return bad(r, map_id, "has a value that is not a non-negative integer");
    switch (kind) {
    case SIZES: c->column_size = (uint64_t)v; break;
    case VALUES: c->value_count = (uint64_t)v; c->has_counts = true; break;
    case NULLS: c->null_count = (uint64_t)v; c->has_counts = true; break;
    default: c->nan_count = (uint64_t)v; c->has_nan_count = true; break;
    }
    return FLOE_OK;
}

static int read_metrics(rd *r, const floe__avro_value *df, floe__file_metrics *m)
{
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = collect_ids(r, df, &ids, &n);
    if (rc == FLOE_OK && n) {
        m->columns = floe__calloc(n, sizeof *m->columns);
        rc = m->columns ? FLOE_OK : FLOE_OOM(r->err);
    }
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        m->columns[i].field_id = ids[i];
        floe__buf_init(&m->columns[i].lower, 0);
        floe__buf_init(&m->columns[i].upper, 0);
        m->n_columns = i + 1;
    }
    for (size_t k = 0; rc == FLOE_OK && k < 6; k++) {
        const floe__avro_value *arr = floe__avro_get_id(df, MAPS[k].id);
        for (size_t i = 0; rc == FLOE_OK && !floe__avro_is_null(arr) && i < arr->n; i++) {
            int32_t key;
            const floe__avro_value *val;
            rc = map_item(r, arr, i, MAPS[k].id, &key, &val);
            int32_t *hit = rc == FLOE_OK ? bsearch(&key, ids, n, sizeof *ids, cmp_i32) : NULL;
            if (rc == FLOE_OK && hit)
                rc = set_metric(r, &m->columns[hit - ids], MAPS[k].kind, val, MAPS[k].id);
        }
    }
    floe__free(ids);
    return rc;
}

static int read_lists(rd *r, const floe__avro_value *df, floe__content_file *f)
{
    const floe__avro_value *arr;
    int64_t v;
    FLOE_FORWARD(opt_array(r, df, 132, &arr));
    if (arr && arr->n) {
        f->metrics.split_offsets = floe__malloc(arr->n * sizeof(uint64_t));
        if (!f->metrics.split_offsets)
            return FLOE_OOM(r->err);
        for (size_t i = 0; i < arr->n; i++) {
            if (!floe__avro_long(floe__avro_item(arr, i), &v) || v < 0)
                return bad(r, 132, "holds a value that is not a non-negative long");
            f->metrics.split_offsets[i] = (uint64_t)v;
            f->metrics.n_splits = i + 1;
        }
    }
    FLOE_FORWARD(opt_array(r, df, 135, &arr));
    if (arr && arr->n) {
        f->equality_ids = floe__malloc(arr->n * sizeof(int32_t));
        if (!f->equality_ids)
            return FLOE_OOM(r->err);
        for (size_t i = 0; i < arr->n; i++) {
            if (!floe__avro_long(floe__avro_item(arr, i), &v) || v < INT32_MIN || v > INT32_MAX)
                return bad(r, 135, "holds a value that is not an int");
            f->equality_ids[i] = (int32_t)v;
            f->n_equality_ids = i + 1;
        }
    }
    return FLOE_OK;
}

static int opt_string(rd *r, const floe__avro_value *rec, int32_t id, char **out)
{
    const floe__avro_value *v = floe__avro_get_id(rec, id);
    if (floe__avro_is_null(v))
        return FLOE_OK;
    return req_string(r, rec, id, out);
}

/* Fields 131, 140, 142-145 (key metadata, sort order, lineage, DV ranges). */
static int read_v3_fields(rd *r, const floe__avro_value *df, floe__manifest_entry *e)
{
    floe__content_file *f = &e->file;
    bool has;
    int64_t v = 0;
    f->format = floe__strdup(e->file_format);
    if (!f->format)
        return FLOE_OOM(r->err);
    FLOE_FORWARD(opt_bytes(r, df, 131, &f->has_key_metadata, &f->key_metadata));
    FLOE_FORWARD(opt_long(r, df, 140, &has, &v));
    if (has && (v < INT32_MIN || v > INT32_MAX))
        return bad(r, 140, "is out of range for an int");
    f->has_sort_order_id = has;
    f->sort_order_id = (int32_t)v;
    FLOE_FORWARD(opt_long(r, df, 142, &f->has_first_row_id, &f->first_row_id));
    FLOE_FORWARD(opt_string(r, df, 143, &f->referenced_data_file));
    FLOE_FORWARD(opt_long(r, df, 144, &f->has_content_offset, &f->content_offset));
    FLOE_FORWARD(opt_long(r, df, 145, &has, &f->content_size));
    if (f->has_content_offset != has || (has && (f->content_offset < 0 || f->content_size < 0)))
        return bad(r, 145, "and content_offset (144) must both be set, non-negative, or both "
                   "null");
    return FLOE_OK;
}

static int read_data_file(rd *r, const floe__avro_value *df, floe__manifest_entry *e)
{
    floe__content_file *f = &e->file;
    bool has;
    int64_t v;
    if (!df || df->type != FLOE_AVRO_RECORD)
        return bad(r, 2, "is not a record");
    FLOE_FORWARD(opt_long(r, df, 134, &has, &v));
    if (has && (v < 0 || v > 2))
        return bad(r, 134, "is not 0, 1 or 2");
    f->content = has ? (floe__content)v : FLOE_CONTENT_DATA;
    FLOE_FORWARD(req_string(r, df, 100, &f->path));
    FLOE_FORWARD(req_string(r, df, 101, &e->file_format));
    FLOE_FORWARD(req_long(r, df, 103, &v));
    if (v < 0)
        return bad(r, 103, "is negative");
    f->metrics.record_count = (uint64_t)v;
    FLOE_FORWARD(req_long(r, df, 104, &v));
    if (v < 0)
        return bad(r, 104, "is negative");
    f->metrics.file_size = (uint64_t)v;
    FLOE_FORWARD(floe__manifest_read_partition(floe__avro_get_id(df, 102), &f->partition,
                                               r->err));
    FLOE_FORWARD(read_metrics(r, df, &f->metrics));
    FLOE_FORWARD(read_lists(r, df, f));
    return read_v3_fields(r, df, e);
}

static int read_entry(rd *r, const floe__avro_value *v, floe__manifest_entry *e)
{
    if (v->type != FLOE_AVRO_RECORD)
        return bad(r, 0, "(the entry) is not a record");
    FLOE_FORWARD(req_int(r, v, 0, &e->status));
    if (e->status < 0 || e->status > 2)
        return bad(r, 0, "(status) is not 0, 1 or 2");
    FLOE_FORWARD(opt_long(r, v, 1, &e->has_snapshot_id, &e->snapshot_id));
    FLOE_FORWARD(opt_long(r, v, 3, &e->has_sequence_number, &e->sequence_number));
    FLOE_FORWARD(opt_long(r, v, 4, &e->has_file_sequence_number, &e->file_sequence_number));
    return read_data_file(r, floe__avro_get_id(v, 2), e);
}

int floe__manifest_parse(const uint8_t *data, size_t len, floe__manifest_entries *out,
                         floe_error *err)
{
    floe__avro_reader *ar;
    FLOE_FORWARD_CTX(floe__avro_reader_open(data, len, NULL, &ar, err), err,
                     "reading a manifest");
    const char *content = floe__avro_reader_meta(ar, "content", NULL);
    int rc = FLOE_OK;
    if (content && !out->content) {
        out->content = floe__strdup(content);
        rc = out->content ? FLOE_OK : FLOE_OOM(err);
    }
    size_t keep = out->n;
    rd r = {err, "manifest entry", 0};
    const floe__avro_value *v = NULL;
    while (rc == FLOE_OK && (rc = floe__avro_reader_next(ar, &v, err)) == FLOE_OK && v) {
        floe__manifest_entry *e = grow((void **)&out->items, &out->n, &out->cap, sizeof *e);
        if (!e) {
            rc = FLOE_OOM(err);
            break;
        }
        rc = read_entry(&r, v, e);
        r.index++;
    }
    floe__avro_reader_free(ar);
    if (rc != FLOE_OK) {
        for (size_t i = keep; i < out->n; i++) {
            floe__free(out->items[i].file_format);
            floe__content_file_clear(&out->items[i].file);
        }
        out->n = keep;
        return floe__err_wrap(err, rc, "reading a manifest");
    }
    return FLOE_OK;
}
