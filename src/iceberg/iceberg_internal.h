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

/* One content file, as a manifest entry describes it.  Every field after
 * n_equality_ids is optional: zero means absent, which is what floe's
 * writers leave for the Parquet data and delete files they make.  A
 * deletion vector is content POSITION_DELETES, format "PUFFIN",
 * record_count its cardinality, file_size the Puffin file's size, with
 * referenced_data_file and content_offset / content_size set. */
typedef struct floe__content_file {
    floe__content content;
    char *path;                       /* full URI */
    floe__file_metrics metrics;       /* record_count, file_size, columns, split offsets */
    int32_t *equality_ids;            /* EQUALITY_DELETES only */
    size_t n_equality_ids;
    char *format;                     /* 101 file_format as written; NULL: "PARQUET" */
    char *referenced_data_file;       /* 143: the one data file all deletes are in, or NULL */
    bool has_first_row_id;            /* 142 (v3 data files; explicit when carried) */
    int64_t first_row_id;
    bool has_content_offset;          /* 144 / 145: a blob inside the file (DVs) */
    int64_t content_offset, content_size;
    bool has_sort_order_id;           /* 140 */
    int32_t sort_order_id;
    bool has_key_metadata;            /* 131 */
    floe__buf key_metadata;
    floe__buf partition;              /* 102: the partition tuple, a row of its spec's
                                         partition type (partition_internal.h) in the
                                         manifest's field order; empty: unpartitioned */
} floe__content_file;

/* Whether f is a deletion vector (position deletes in a Puffin file). */
bool floe__content_is_dv(const floe__content_file *f);
/* A deep copy of src into *dst (zeroed first); on failure *dst is empty. */
int floe__content_file_copy(floe__content_file *dst, const floe__content_file *src,
                            floe_error *err);

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

/* ---- schema evolution (schema_evolve.c) ------------------------------------------------ */

/* A table's schema evolved into a declared one (SPEC.md section 4). */
typedef struct floe__evolution {
    floe__schema *schema;        /* the evolved schema (owned): the table's field ids for
                                    the fields it keeps, fresh ones above the table's
                                    last-column-id for those it adds, the declared source
                                    types; schema_id is the table's (the catalog assigns
                                    the new one) */
    int32_t last_column_id;      /* the table's last-column-id after it */
    bool changed;                /* the Iceberg schema differs from the table's */
    floe__buf summary;           /* what changed, for people ("added c (long); renamed a
                                    to b; ..."); empty when nothing did */
} floe__evolution;

/* Match the declared schema against the table's by name (a declared `was`
 * is a rename) and evolve by the Iceberg spec's rules for `format_version`
 * (see schema_evolve.c).  FLOE_EINCOMPATIBLE naming the column and the rule
 * a change breaks (narrowing, an incompatible type, a new not-null column
 * without a default, optional -> required, dropping an identifier field).
 * *out is the caller's to clear, on success only. */
int floe__schema_evolve(const floe__schema *table, int32_t last_column_id, int format_version,
                        const floe__schema *declared, floe__evolution *out, floe_error *err);
/* The same for a table whose every row is written again in the same commit
 * (a resync): a column whose type cannot change in place becomes a new
 * column of the same name (a fresh field id; older snapshots keep the old
 * one), and nothing becomes not null.  Only a dropped identifier field is
 * refused. */
int floe__schema_replace(const floe__schema *table, int32_t last_column_id, int format_version,
                         const floe__schema *declared, floe__evolution *out, floe_error *err);
void floe__evolution_clear(floe__evolution *out);
/* The table property schema.name-mapping.default after an evolution to
 * `to`: a renamed field's new name added to its names (the old ones stay:
 * files written before may carry them), an added field mapped, a dropped
 * one kept (as Java's UpdateSchema does).  *out NULL when `mapping` is
 * NULL; a mapping that is not a JSON list is FLOE_EFORMAT.  Caller frees. */
int floe__name_mapping_update(const char *mapping, const floe__schema *to, char **out,
                              floe_error *err);

#endif /* FLOE_ICEBERG_INTERNAL_H */
