/*
 * test_catalog.c - the local FileIO and the SQLite catalog: URIs, the
 * catalog tables, namespaces, create / load / commit / drop, requirement
 * failures, a lost compare-and-swap (simulated with a trigger that makes
 * the swap match no row), create transactions, default locations.
 * (Peer checks against pyiceberg live in tests/test_catalog_sql.py.)
 */
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "catalog/catalog_internal.h"
#include "unit.h"

static char tmp_root[256];

static void make_tmp(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "catalog");
}

static void remove_tmp(void)
{
    unit_remove_tmp(tmp_root);
}

/* "<tmp>/<name>" in a static buffer (one at a time). */
static const char *tmp_path(const char *fmt, const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, fmt, tmp_root, name);
    return buf;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fprintf(stderr, "bad test JSON: %s: %s\n", e.text, text);
    return v;
}

static bool msg_has(const floe_error *err, const char *needle)
{
    bool ok = strstr(floe_error_message(err), needle) != NULL;
    if (!ok)
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", floe_error_message(err), needle);
    return ok;
}

/* ---- FileIO -------------------------------------------------------------------------- */

TEST(fileio_local)
{
    floe__fileio *io = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__fileio_local_new(&io, err), FLOE_OK);
    if (!io)
        return;
    char uri[700], path[600];
    snprintf(path, sizeof path, "%s/io/a/b/obj.bin", tmp_root);
    snprintf(uri, sizeof uri, "file://%s", path);
    bool exists = true;
    CHECK_EQ_INT(floe__fileio_exists(io, uri, &exists, err), FLOE_OK);
    CHECK(!exists);
    CHECK_EQ_INT(floe__fileio_write_all(io, uri, "hello", 5, err), FLOE_OK);
    CHECK_EQ_INT(floe__fileio_exists(io, uri, &exists, err), FLOE_OK);
    CHECK(exists);
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__fileio_read_all(io, path, &b, err), FLOE_OK);   /* plain path too */
    CHECK(b.len == 5 && memcmp(b.data, "hello", 5) == 0);
    floe__buf_free(&b);
    /* other spellings of the same file */
    char alt[800];
    snprintf(alt, sizeof alt, "file:%s", path);
    CHECK_EQ_INT(floe__fileio_read_all(io, alt, &b, err), FLOE_OK);
    CHECK_EQ_INT(b.len, 5);
    floe__buf_free(&b);
    snprintf(alt, sizeof alt, "file://localhost%s", path);
    CHECK_EQ_INT(floe__fileio_read_all(io, alt, &b, err), FLOE_OK);
    CHECK_EQ_INT(b.len, 5);
    floe__buf_free(&b);
    /* bounded reads */
    floe__buf_init(&b, 3);
    CHECK_EQ_INT(floe__fileio_read_all(io, uri, &b, err), FLOE_ELIMIT);
    floe__buf_free(&b);
    /* abort leaves nothing behind, not even the temporary file */
    char uri2[620];
    snprintf(uri2, sizeof uri2, "file://%s/io/a/b/never.bin", tmp_root);
    floe__output *o = NULL;
    CHECK_EQ_INT(floe__fileio_open_output(io, uri2, &o, err), FLOE_OK);
    if (o) {
        CHECK_EQ_INT(floe__output_write(o, "x", 1, err), FLOE_OK);
        o->abort(o);
    }
    CHECK_EQ_INT(floe__fileio_exists(io, uri2, &exists, err), FLOE_OK);
    CHECK(!exists);
    CHECK_EQ_INT(count_files(tmp_path("%s/io/a/b%s", "")), 1);
    /* remove, then it is gone */
    CHECK_EQ_INT(floe__fileio_remove(io, uri, err), FLOE_OK);
    CHECK_EQ_INT(floe__fileio_remove(io, uri, err), FLOE_ENOTFOUND);
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__fileio_read_all(io, uri, &b, err), FLOE_ENOTFOUND);
    floe__buf_free(&b);
    /* not ours */
    CHECK_EQ_INT(floe__fileio_read_all(io, "s3://bucket/key", &b, err), FLOE_EUNSUPPORTED);
    CHECK(msg_has(err, "s3: URIs are not supported"));
    CHECK_EQ_INT(floe__fileio_open_output(io, "gs://b/k", &o, err), FLOE_EUNSUPPORTED);
    CHECK_EQ_INT(floe__fileio_exists(io, "", &exists, err), FLOE_EINVAL);
    CHECK_EQ_STR(io->ops->name, "local");
    floe__fileio_free(io);
    floe__fileio_free(NULL);
    floe_error_free(err);
}

/* ---- the SQLite catalog ---------------------------------------------------------------- */

typedef struct fixture {
    floe__fileio *io;
    floe__catalog *cat;
    floe_error *err;
    char dir[400];
    char uri[500];
    char warehouse[500];
} fixture;

static const char SCHEMA[] =
    "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,"
    "\"type\":\"long\"},{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"}]}";

static void fx_open(fixture *f, const char *sub)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s/%s", tmp_root, sub);
    snprintf(f->uri, sizeof f->uri, "sqlite:%s/db/catalog.db", f->dir);
    snprintf(f->warehouse, sizeof f->warehouse, "file://%s/wh/", f->dir);
    f->err = floe_error_new();
    CHECK_EQ_INT(floe__fileio_local_new(&f->io, f->err), FLOE_OK);
    int rc = floe__catalog_sql_open(f->uri, NULL, f->warehouse, f->io, &f->cat, f->err);
    if (rc)
        fprintf(stderr, "open: %s\n", floe_error_message(f->err));
    CHECK_EQ_INT(rc, FLOE_OK);
}

static void fx_close(fixture *f)
{
    floe__catalog_free(f->cat);
    floe__fileio_free(f->io);
    floe_error_free(f->err);
}

/* Run SQL on the catalog database directly. */
static int raw_sql(const fixture *f, const char *sql)
{
    char path[520];
    snprintf(path, sizeof path, "%s/db/catalog.db", f->dir);
    sqlite3 *db;
    int rc = sqlite3_open(path, &db);
    char *msg = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "raw sql failed: %s\n", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc;
}

/* The first column of the first row as a string ("" when none). */
static const char *raw_value(const fixture *f, const char *sql)
{
    static char out[1024];
    char path[520];
    snprintf(path, sizeof path, "%s/db/catalog.db", f->dir);
    sqlite3 *db;
    sqlite3_stmt *st;
    out[0] = '\0';
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return out;
}

TEST(sql_uris_and_tables)
{
    floe__fileio *io = NULL;
    floe__catalog *cat = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__fileio_local_new(&io, err), FLOE_OK);
    char uri[600];
    /* SQLAlchemy's absolute form: four slashes; parent directories are made */
    snprintf(uri, sizeof uri, "sqlite:///%s/uris/deep/dir/a.db", tmp_root);
    CHECK_EQ_INT(floe__catalog_sql_open(uri, "c1", NULL, io, &cat, err), FLOE_OK);
    floe__catalog_free(cat);
    cat = NULL;
    struct stat st;
    CHECK(stat(tmp_path("%s/uris/deep/dir/a.db%s", ""), &st) == 0);
    snprintf(uri, sizeof uri, "sqlite:%s/uris/b.db", tmp_root);
    CHECK_EQ_INT(floe__catalog_sql_open(uri, "c1", NULL, io, &cat, err), FLOE_OK);
    CHECK(cat && strcmp(cat->ops->name, "sql") == 0);
    floe__catalog_free(cat);
    static const char *const bad[] = {"sqlite://", "sqlite:", "http://x/y", "sqlite://host/x",
                                      "sqlite:///"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cat = NULL;
        CHECK_EQ_INT(floe__catalog_sql_open(bad[i], NULL, NULL, io, &cat, err), FLOE_EINVAL);
        CHECK(cat == NULL);
    }
    CHECK_EQ_INT(floe__catalog_sql_open(NULL, NULL, NULL, io, &cat, err), FLOE_EINVAL);
    /* not a database */
    snprintf(uri, sizeof uri, "%s/uris/junk.db", tmp_root);
    FILE *fp = fopen(uri, "w");
    if (fp) {
        fputs("this is not sqlite, not at all, no.................................", fp);
        fclose(fp);
    }
    snprintf(uri, sizeof uri, "sqlite:%s/uris/junk.db", tmp_root);
    CHECK_EQ_INT(floe__catalog_sql_open(uri, NULL, NULL, io, &cat, err), FLOE_ECATALOG);
    floe__fileio_free(io);
    floe_error_free(err);
}

TEST(sql_schema_shape)
{
    fixture f;
    fx_open(&f, "shape");
    CHECK_EQ_STR(raw_value(&f, "SELECT group_concat(name, ',') FROM pragma_table_info("
                               "'iceberg_tables')"),
                 "catalog_name,table_namespace,table_name,metadata_location,"
                 "previous_metadata_location,iceberg_type");
    CHECK_EQ_STR(raw_value(&f, "SELECT group_concat(name, ',') FROM pragma_table_info("
                               "'iceberg_tables') WHERE pk > 0"),
                 "catalog_name,table_namespace,table_name");
    CHECK_EQ_STR(raw_value(&f, "SELECT group_concat(name, ',') FROM pragma_table_info("
                               "'iceberg_namespace_properties')"),
                 "catalog_name,namespace,property_key,property_value");
    fx_close(&f);
}

TEST(sql_namespaces)
{
    fixture f;
    fx_open(&f, "ns");
    if (!f.cat)
        return;
    floe__catalog *c = f.cat;
    json_t *props = J("{\"owner\":\"me\",\"location\":\"s3://elsewhere/a/\"}");
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "a", props, f.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "a.b", NULL, f.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "c", NULL, f.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "a", NULL, f.err), FLOE_EEXISTS);
    CHECK(msg_has(f.err, "namespace a already exists"));
    CHECK_EQ_STR(raw_value(&f, "SELECT group_concat(property_key || '=' || property_value, ',')"
                               " FROM (SELECT * FROM iceberg_namespace_properties WHERE"
                               " namespace = 'a' ORDER BY property_key)"),
                 "exists=true,location=s3://elsewhere/a/,owner=me");
    bool exists = false;
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "a.b", &exists, f.err), FLOE_OK);
    CHECK(exists);
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "A", &exists, f.err), FLOE_OK);
    CHECK(!exists);                             /* exact, although LIKE ignores case */
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "a_", &exists, f.err), FLOE_OK);
    CHECK(!exists);                             /* '_' is no wildcard */
    json_t *list = NULL;
    CHECK_EQ_INT(floe__catalog_list_namespaces(c, NULL, &list, f.err), FLOE_OK);
    CHECK_EQ_INT(json_array_size(list), 2);
    CHECK_EQ_STR(json_string_value(json_array_get(list, 0)), "a");
    CHECK_EQ_STR(json_string_value(json_array_get(list, 1)), "c");
    json_decref(list);
    CHECK_EQ_INT(floe__catalog_list_namespaces(c, "a", &list, f.err), FLOE_OK);
    CHECK_EQ_INT(json_array_size(list), 1);
    CHECK_EQ_STR(json_string_value(json_array_get(list, 0)), "a.b");
    json_decref(list);
    CHECK_EQ_INT(floe__catalog_list_namespaces(c, "zz", &list, f.err), FLOE_ENOTFOUND);
    /* a namespace known only through a table row (as other tools may leave it) */
    CHECK_EQ_INT(raw_sql(&f, "INSERT INTO iceberg_tables VALUES ('floe', 'x.y.z', 't', 'm',"
                             " NULL, 'TABLE')"),
                 SQLITE_OK);
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "x.y", &exists, f.err), FLOE_OK);
    CHECK(exists);
    CHECK_EQ_INT(floe__catalog_list_namespaces(c, "x", &list, f.err), FLOE_OK);
    CHECK_EQ_INT(json_array_size(list), 1);
    CHECK_EQ_STR(json_string_value(json_array_get(list, 0)), "x.y");
    json_decref(list);
    /* other catalogs in the same database are invisible */
    CHECK_EQ_INT(raw_sql(&f, "INSERT INTO iceberg_namespace_properties VALUES ('other', 'q',"
                             " 'exists', 'true')"),
                 SQLITE_OK);
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "q", &exists, f.err), FLOE_OK);
    CHECK(!exists);
    static const char *const bad[] = {"", ".a", "a.", "a..b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(floe__catalog_create_namespace(c, bad[i], NULL, f.err), FLOE_EINVAL);
    json_t *badprops = J("{\"n\":1}");
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "d", badprops, f.err), FLOE_EINVAL);
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "d", &exists, f.err), FLOE_OK);
    CHECK(!exists);
    json_decref(badprops);
    json_decref(props);
    fx_close(&f);
}

static floe__loaded_table *create(fixture *f, const char *ns, const char *name,
                                  const char *location, int want)
{
    json_t *schema = J(SCHEMA);
    floe__table_def def = {.schema = schema, .location = location};
    floe__loaded_table *lt = NULL;
    int rc = floe__catalog_create_table(f->cat, ns, name, &def, &lt, f->err);
    if (rc != want)
        fprintf(stderr, "create %s.%s: %s\n", ns, name, floe_error_message(f->err));
    CHECK_EQ_INT(rc, want);
    json_decref(schema);
    return lt;
}

TEST(sql_create_load_drop)
{
    fixture f;
    fx_open(&f, "cld");
    if (!f.cat)
        return;
    floe__catalog *c = f.cat;
    create(&f, "ns", "t", NULL, FLOE_ENOTFOUND);
    CHECK(msg_has(f.err, "namespace ns does not exist"));
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "ns", NULL, f.err), FLOE_OK);
    floe__loaded_table *lt = create(&f, "ns", "t", NULL, FLOE_OK);
    char want[600];
    if (lt) {
        snprintf(want, sizeof want, "file://%s/wh/ns/t", f.dir);
        CHECK_EQ_STR(floe__metadata_location(lt->metadata), want);
        snprintf(want, sizeof want, "file://%s/wh/ns/t/metadata/00000-", f.dir);
        CHECK(strncmp(lt->metadata_location, want, strlen(want)) == 0);
        CHECK_EQ_STR(raw_value(&f, "SELECT metadata_location FROM iceberg_tables"),
                     lt->metadata_location);
        CHECK_EQ_STR(raw_value(&f, "SELECT coalesce(previous_metadata_location, 'NULL') || ','"
                                   " || iceberg_type || ',' || catalog_name FROM iceberg_tables"),
                     "NULL,TABLE,floe");
    }
    floe__loaded_table *again = NULL;
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "t", &again, f.err), FLOE_OK);
    CHECK(lt && again && strcmp(lt->metadata_location, again->metadata_location) == 0);
    CHECK(lt && again &&
          json_equal(floe__metadata_json(lt->metadata), floe__metadata_json(again->metadata)));
    floe__loaded_table_free(again);
    create(&f, "ns", "t", NULL, FLOE_EEXISTS);
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "nope", &again, f.err), FLOE_ENOTFOUND);
    CHECK(msg_has(f.err, "table ns.nope does not exist"));
    /* explicit location, trailing slashes trimmed */
    floe__loaded_table *x = create(&f, "ns", "x", "file:///somewhere/x//", FLOE_OK);
    CHECK(x && strcmp(floe__metadata_location(x->metadata), "file:///somewhere/x") == 0);
    floe__loaded_table_free(x);
    /* a namespace location wins over the warehouse */
    json_t *props = J("{\"location\":\"file:///nsloc/\"}");
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "placed", props, f.err), FLOE_OK);
    json_decref(props);
    char loc[600];
    snprintf(loc, sizeof loc, "file://%s/nsloc/", f.dir);
    floe__loaded_table *p = NULL;
    {
        /* point the namespace location into the test directory */
        char sql[800];
        snprintf(sql, sizeof sql, "UPDATE iceberg_namespace_properties SET property_value = '%s'"
                                  " WHERE namespace = 'placed' AND property_key = 'location'",
                 loc);
        CHECK_EQ_INT(raw_sql(&f, sql), SQLITE_OK);
        p = create(&f, "placed", "t", NULL, FLOE_OK);
        snprintf(want, sizeof want, "file://%s/nsloc/t", f.dir);
        CHECK(p && strcmp(floe__metadata_location(p->metadata), want) == 0);
    }
    floe__loaded_table_free(p);
    json_t *names = NULL;
    CHECK_EQ_INT(floe__catalog_list_tables(c, "ns", &names, f.err), FLOE_OK);
    CHECK_EQ_INT(json_array_size(names), 2);
    CHECK_EQ_STR(json_string_value(json_array_get(names, 0)), "t");
    CHECK_EQ_STR(json_string_value(json_array_get(names, 1)), "x");
    json_decref(names);
    CHECK_EQ_INT(floe__catalog_list_tables(c, "none", &names, f.err), FLOE_ENOTFOUND);
    /* a view row of the same name is not a table */
    CHECK_EQ_INT(raw_sql(&f, "INSERT INTO iceberg_tables VALUES ('floe', 'ns', 'v', 'm', NULL,"
                             " 'VIEW')"),
                 SQLITE_OK);
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "v", &again, f.err), FLOE_ENOTFOUND);
    CHECK_EQ_INT(floe__catalog_list_tables(c, "ns", &names, f.err), FLOE_OK);
    CHECK_EQ_INT(json_array_size(names), 2);
    json_decref(names);
    CHECK_EQ_INT(floe__catalog_drop_table(c, "ns", "v", f.err), FLOE_ENOTFOUND);
    /* drop */
    CHECK_EQ_INT(floe__catalog_drop_table(c, "ns", "t", f.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_drop_table(c, "ns", "t", f.err), FLOE_ENOTFOUND);
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "t", &again, f.err), FLOE_ENOTFOUND);
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "", &again, f.err), FLOE_EINVAL);
    floe__loaded_table_free(lt);
    fx_close(&f);

    /* no warehouse and no location */
    fixture g;
    fx_open(&g, "nowh");
    floe__catalog_free(g.cat);
    g.cat = NULL;
    CHECK_EQ_INT(floe__catalog_sql_open(g.uri, "floe", NULL, g.io, &g.cat, g.err), FLOE_OK);
    if (g.cat) {
        CHECK_EQ_INT(floe__catalog_create_namespace(g.cat, "ns", NULL, g.err), FLOE_OK);
        create(&g, "ns", "t", NULL, FLOE_EINVAL);
        CHECK(msg_has(g.err, "no location given and the catalog has no warehouse"));
    }
    fx_close(&g);
}

static char *metadata_dir(const fixture *f, const char *ns, const char *name)
{
    return floe__sprintf("%s/wh/%s/%s/metadata", f->dir, ns, name);
}

TEST(sql_commit)
{
    fixture f;
    fx_open(&f, "commit");
    if (!f.cat)
        return;
    floe__catalog *c = f.cat;
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "ns", NULL, f.err), FLOE_OK);
    floe__loaded_table *t0 = create(&f, "ns", "t", NULL, FLOE_OK);
    if (!t0)
        return;
    char *mdir = metadata_dir(&f, "ns", "t");
    json_t *reqs = json_pack("[{s:s, s:s}, {s:s, s:s, s:n}]", "type", "assert-table-uuid", "uuid",
                             floe__metadata_table_uuid(t0->metadata), "type",
                             "assert-ref-snapshot-id", "ref", "main", "snapshot-id");
    json_t *ups = J("[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]");
    floe__loaded_table *t1 = NULL;
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", reqs, ups, &t1, f.err), FLOE_OK);
    if (t1) {
        CHECK_EQ_INT(floe__metadata_file_version(t1->metadata_location), 1);
        CHECK_EQ_STR(floe__metadata_property(t1->metadata, "k"), "v");
        CHECK_EQ_INT(floe__metadata_metadata_log_count(t1->metadata), 1);
        CHECK_EQ_STR(floe__metadata_metadata_log_at(t1->metadata, 0)->metadata_file,
                     t0->metadata_location);
        CHECK_EQ_STR(raw_value(&f, "SELECT metadata_location FROM iceberg_tables"),
                     t1->metadata_location);
        CHECK_EQ_STR(raw_value(&f, "SELECT previous_metadata_location FROM iceberg_tables"),
                     t0->metadata_location);
        /* what was written is what was returned */
        floe__metadata *disk = NULL;
        CHECK_EQ_INT(floe__catalog_read_metadata(f.io, t1->metadata_location, &disk, f.err),
                     FLOE_OK);
        CHECK(disk && json_equal(floe__metadata_json(disk), floe__metadata_json(t1->metadata)));
        floe__metadata_free(disk);
    }
    CHECK_EQ_INT(count_files(mdir), 2);
    /* the same commit again: main still absent, property already set: no new file */
    floe__loaded_table *t2 = NULL;
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", reqs, ups, &t2, f.err), FLOE_OK);
    CHECK(t1 && t2 && strcmp(t1->metadata_location, t2->metadata_location) == 0);
    CHECK_EQ_INT(count_files(mdir), 2);
    floe__loaded_table_free(t2);
    t2 = NULL;
    /* a failed requirement writes nothing */
    json_t *stale = J("[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":9}]");
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", stale, ups, &t2, f.err),
                 FLOE_ECONFLICT);
    CHECK(msg_has(f.err, "commit to ns.t: requirements[0] (assert-ref-snapshot-id)"));
    CHECK(floe_error_retryable(f.err));
    CHECK(t2 == NULL);
    CHECK_EQ_INT(count_files(mdir), 2);
    /* a bad update writes nothing either */
    json_t *bad = J("[{\"action\":\"set-current-schema\",\"schema-id\":5}]");
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", NULL, bad, &t2, f.err), FLOE_EINVAL);
    CHECK_EQ_INT(count_files(mdir), 2);
    json_t *notarray = J("{}");
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", notarray, ups, &t2, f.err),
                 FLOE_EINVAL);
    json_decref(notarray);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "missing", NULL, ups, &t2, f.err),
                 FLOE_ENOTFOUND);

    /* a lost compare-and-swap: the trigger makes the swap match no row,
     * as if another commit had moved the pointer first */
    CHECK_EQ_INT(raw_sql(&f, "CREATE TRIGGER lose BEFORE UPDATE ON iceberg_tables"
                             " BEGIN SELECT RAISE(IGNORE); END"),
                 SQLITE_OK);
    json_t *ups2 = J("[{\"action\":\"set-properties\",\"updates\":{\"k\":\"w\"}}]");
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", NULL, ups2, &t2, f.err),
                 FLOE_ECONFLICT);
    CHECK(msg_has(f.err, "was changed by a concurrent commit"));
    CHECK(t2 == NULL);
    CHECK_EQ_INT(count_files(mdir), 2);           /* the orphan file was removed */
    CHECK(t1 && strcmp(raw_value(&f, "SELECT metadata_location FROM iceberg_tables"),
                       t1->metadata_location) == 0);
    CHECK_EQ_INT(raw_sql(&f, "DROP TRIGGER lose"), SQLITE_OK);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", NULL, ups2, &t2, f.err), FLOE_OK);
    CHECK(t2 && floe__metadata_file_version(t2->metadata_location) == 2);
    CHECK(t2 && strcmp(floe__metadata_property(t2->metadata, "k"), "w") == 0);
    floe__loaded_table_free(t2);
    t2 = NULL;

    /* a row pointing at a missing file is a broken entry, not a missing table */
    CHECK_EQ_INT(raw_sql(&f, "UPDATE iceberg_tables SET metadata_location = 'file:///no/such."
                             "metadata.json'"),
                 SQLITE_OK);
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "t", &t2, f.err), FLOE_EIO);
    CHECK(msg_has(f.err, "is missing"));
    json_decref(bad);
    json_decref(stale);
    json_decref(ups2);
    json_decref(reqs);
    json_decref(ups);
    floe__free(mdir);
    floe__loaded_table_free(t1);
    floe__loaded_table_free(t0);
    fx_close(&f);
}

TEST(sql_commit_creates)
{
    fixture f;
    fx_open(&f, "txn");
    if (!f.cat)
        return;
    floe__catalog *c = f.cat;
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "ns", NULL, f.err), FLOE_OK);
    json_t *schema = J(SCHEMA), *props = J("{\"p\":\"1\"}");
    floe__table_def def = {.schema = schema, .properties = props};
    json_t *ups = NULL;
    CHECK_EQ_INT(floe__metadata_creation_updates(&def, &ups, f.err), FLOE_OK);
    json_t *reqs = J("[{\"type\":\"assert-create\"}]");
    floe__loaded_table *t = NULL;
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", NULL, ups, &t, f.err), FLOE_ENOTFOUND);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", reqs, ups, &t, f.err), FLOE_OK);
    if (t) {
        char want[600];
        snprintf(want, sizeof want, "file://%s/wh/ns/t", f.dir);
        CHECK_EQ_STR(floe__metadata_location(t->metadata), want);
        CHECK_EQ_STR(floe__metadata_property(t->metadata, "p"), "1");
        CHECK_EQ_INT(floe__metadata_file_version(t->metadata_location), 0);
    }
    floe__loaded_table *t2 = NULL;
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", reqs, ups, &t2, f.err), FLOE_ECONFLICT);
    CHECK(msg_has(f.err, "the table already exists"));
    CHECK_EQ_INT(floe__catalog_commit_table(c, "nons", "t", reqs, ups, &t2, f.err),
                 FLOE_ENOTFOUND);
    floe__loaded_table_free(t);
    json_decref(reqs);
    json_decref(ups);
    json_decref(schema);
    json_decref(props);
    fx_close(&f);
}

TEST(sql_two_handles)
{
    fixture a, b;
    fx_open(&a, "two");
    fx_open(&b, "two");
    if (!a.cat || !b.cat)
        return;
    CHECK_EQ_INT(floe__catalog_create_namespace(a.cat, "ns", NULL, a.err), FLOE_OK);
    floe__loaded_table *t = create(&a, "ns", "t", NULL, FLOE_OK), *seen = NULL;
    CHECK_EQ_INT(floe__catalog_load_table(b.cat, "ns", "t", &seen, b.err), FLOE_OK);
    CHECK(t && seen && strcmp(t->metadata_location, seen->metadata_location) == 0);
    floe__loaded_table_free(seen);
    floe__loaded_table_free(t);
    /* a catalog with another name sees nothing */
    floe__catalog *other = NULL;
    CHECK_EQ_INT(floe__catalog_sql_open(a.uri, "other", a.warehouse, a.io, &other, a.err),
                 FLOE_OK);
    if (other)
        CHECK_EQ_INT(floe__catalog_load_table(other, "ns", "t", &seen, a.err), FLOE_ENOTFOUND);
    floe__catalog_free(other);
    fx_close(&a);
    fx_close(&b);
}

int main(void)
{
    make_tmp();
    RUN(fileio_local);
    RUN(sql_uris_and_tables);
    RUN(sql_schema_shape);
    RUN(sql_namespaces);
    RUN(sql_create_load_drop);
    RUN(sql_commit);
    RUN(sql_commit_creates);
    RUN(sql_two_handles);
    remove_tmp();
    return UNIT_DONE();
}
