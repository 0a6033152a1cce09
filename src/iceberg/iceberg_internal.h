/*
 * iceberg_internal.h - the Iceberg format layer of libfloe: table metadata
 * (metadata_internal.h), content files (what a manifest entry describes)
 * and schema compatibility.  It knows files and formats, never catalogs or
 * tables (those are catalog/ and table/, above it).
 */
#ifndef FLOE_ICEBERG_INTERNAL_H
#define FLOE_ICEBERG_INTERNAL_H

#include "iceberg/metadata_internal.h"
#include "parquet/parquet_internal.h"
#include "schema/schema_internal.h"

/* ---- content files (content.c) --------------------------------------------------- */
typedef enum floe__content {
    FLOE_CONTENT_DATA = 0,
    FLOE_CONTENT_POSITION_DELETES = 1,
    FLOE_CONTENT_EQUALITY_DELETES = 2,
} floe__content;

/* One written file, as a manifest entry will describe it. */
typedef struct floe__content_file {
    floe__content content;
    char *path;                       /* full URI */
    floe__file_metrics metrics;       /* record_count, file_size, columns, split offsets */
    int32_t *equality_ids;            /* EQUALITY_DELETES only */
    size_t n_equality_ids;
} floe__content_file;

void floe__content_file_clear(floe__content_file *f);   /* frees what it holds */

/* A growable list of content files (what one batch/commit adds). */
typedef struct floe__content_list {
    floe__content_file *files;
    size_t n, cap;
} floe__content_list;
void floe__content_list_clear(floe__content_list *l);   /* frees every file */
/* Move *f to the end of l (*f ends zeroed); on failure *f is unchanged. */
int floe__content_list_push(floe__content_list *l, floe__content_file *f, floe_error *err);
/* Move every file of src to the end of dst (src ends empty). */
int floe__content_list_take(floe__content_list *dst, floe__content_list *src, floe_error *err);

/* ---- schema compatibility (schema_compat.c) ------------------------------------------- */

/* SPEC 4: same column names, order, nesting, nullability and types; a
 * table fixed[16] (or uuid) column is accepted where string (a declared
 * uuid) is expected; field ids are not compared.  FLOE_EINCOMPATIBLE with a
 * message naming the first difference and both schemas. */
int floe__schema_compatible(const floe__schema *declared, const floe__schema *table,
                            floe_error *err);

/* Give the table's fields `t` the declared source types of the compatible
 * declared tree `d` (floe__schema_compatible said yes).  A uuid stored as
 * fixed[16]/uuid then reads uuid strings. */
void floe__schema_adopt_decl(floe__field *t, const floe__field *d);

/* A schema of the top-level columns `names` of `s`, keeping their field ids
 * (for equality delete files).  FLOE_EINVAL naming an unknown column. */
int floe__schema_project(const floe__schema *s, const char *const *names, size_t n,
                         floe__schema **out, floe_error *err);

#endif /* FLOE_ICEBERG_INTERNAL_H */
