/*
 * test_avro_tool.c - drives floe's Avro writer and reader for the Python
 * cross-checks against fastavro and pyiceberg (tests/test_avro*.py).  Not a
 * unit test itself: the test runner skips programs ending in "_tool".
 *
 *   test_avro_tool write-sample OUT CODEC         every Avro type, 4 objects;
 *                                                 prints the schema text
 *   test_avro_tool write-many OUT CODEC N BLOCK   N objects, BLOCK-byte blocks
 *   test_avro_tool write-manifest OUT CODEC       an Iceberg v2 manifest
 *   test_avro_tool dump IN                        the file as JSON (below)
 *
 * dump prints {"codec": .., "meta": {key: value}, "objects": [..]} where a
 * value is: null, true/false, a number (int, long, float, double; NaN and
 * infinities as {"$float": "NaN" | "Infinity" | "-Infinity"}), a string,
 * {"$bytes": "<hex>"} for bytes and fixed, the symbol for an enum, an
 * object for a record or map, a list for an array, and {"$union": branch,
 * "value": v} for a value of a union.  Failures print the code name and
 * message on stderr and exit 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "avro/avro_internal.h"
#include "io/io_internal.h"

int main(int argc, char **argv);

static const char SAMPLE_SCHEMA[] =
    "{\"type\": \"record\", \"name\": \"sample\", \"namespace\": \"floe.test\", "
    "\"doc\": \"every Avro type\", \"fields\": [\n"
    " {\"name\": \"n\", \"type\": \"null\", \"field-id\": 1},\n"
    " {\"name\": \"b\", \"type\": \"boolean\", \"field-id\": 2},\n"
    " {\"name\": \"i\", \"type\": \"int\", \"field-id\": 3},\n"
    " {\"name\": \"l\", \"type\": \"long\", \"field-id\": 4},\n"
    " {\"name\": \"f\", \"type\": \"float\", \"field-id\": 5},\n"
    " {\"name\": \"d\", \"type\": \"double\", \"field-id\": 6},\n"
    " {\"name\": \"by\", \"type\": \"bytes\", \"field-id\": 7},\n"
    " {\"name\": \"s\", \"type\": \"string\", \"field-id\": 8, \"doc\": \"text\"},\n"
    " {\"name\": \"fx\", \"type\": {\"type\": \"fixed\", \"name\": \"four\", \"size\": 4}, \"field-id\": 9},\n"
    " {\"name\": \"e\", \"type\": {\"type\": \"enum\", \"name\": \"color\", \"symbols\": [\"RED\", \"GREEN\", \"BLUE\"]}, \"field-id\": 10},\n"
    " {\"name\": \"arr\", \"type\": {\"type\": \"array\", \"items\": \"long\", \"element-id\": 12}, \"field-id\": 11},\n"
    " {\"name\": \"m\", \"type\": {\"type\": \"map\", \"values\": \"string\", \"key-id\": 14, \"value-id\": 15}, \"field-id\": 13},\n"
    " {\"name\": \"opt\", \"type\": [\"null\", \"string\"], \"default\": null, \"field-id\": 16},\n"
    " {\"name\": \"u\", \"type\": [\"null\", \"long\", \"string\", {\"type\": \"record\", \"name\": \"point\", \"fields\": [\n"
    "     {\"name\": \"x\", \"type\": \"int\", \"field-id\": 18}, {\"name\": \"y\", \"type\": \"int\", \"field-id\": 19}]}], \"field-id\": 17},\n"
    " {\"name\": \"nested\", \"type\": {\"type\": \"record\", \"name\": \"inner\", \"fields\": [\n"
    "     {\"name\": \"pts\", \"type\": {\"type\": \"array\", \"items\": \"point\", \"element-id\": 21}, \"field-id\": 22},\n"
    "     {\"name\": \"imap\", \"type\": {\"type\": \"array\", \"logicalType\": \"map\", \"items\": {\"type\": \"record\", \"name\": \"k23_v24\", \"fields\": [\n"
    "         {\"name\": \"key\", \"type\": \"int\", \"field-id\": 23}, {\"name\": \"value\", \"type\": [\"null\", \"bytes\"], \"field-id\": 24}]}}, \"field-id\": 25}]},\n"
    "   \"field-id\": 20},\n"
    " {\"name\": \"dec\", \"type\": {\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 9, \"scale\": 2}, \"field-id\": 26},\n"
    " {\"name\": \"dt\", \"type\": {\"type\": \"int\", \"logicalType\": \"date\"}, \"field-id\": 27},\n"
    " {\"name\": \"ts\", \"type\": {\"type\": \"long\", \"logicalType\": \"timestamp-micros\", \"adjust-to-utc\": true}, \"field-id\": 28},\n"
    " {\"name\": \"decf\", \"type\": {\"type\": \"fixed\", \"name\": \"dec16\", \"size\": 16, \"logicalType\": \"decimal\", \"precision\": 38, \"scale\": 4}, \"field-id\": 29},\n"
    " {\"name\": \"list\", \"type\": {\"type\": \"record\", \"name\": \"LongList\", \"fields\": [\n"
    "     {\"name\": \"value\", \"type\": \"long\"}, {\"name\": \"next\", \"type\": [\"null\", \"LongList\"]}]}, \"field-id\": 30}\n"
    "]}";

/* ---- writing ----------------------------------------------------------- */

/* Reports err and frees it. */
static int fail(const char *what, floe_error *err)
{
    fprintf(stderr, "%s: %s: %s\n", what, floe_code_name(floe_error_code(err)),
            floe_error_message(err));
    floe_error_free(err);
    return 1;
}

static int open_writer(const char *path, const char *schema, const char *codec, size_t block,
                       const floe__avro_meta *meta, size_t n_meta, floe__avro_writer **w,
                       floe_error *err)
{
    floe__avro_writer_options o = {0};
    FLOE_FORWARD(floe__avro_codec_parse(codec, strlen(codec), &o.codec, err));
    o.block_size = block;
    floe__output *out;
    FLOE_FORWARD(floe__local_output_open(path, &out, err));
    int rc = floe__avro_writer_new(schema, &o, meta, n_meta, out, w, err);
    if (rc != FLOE_OK)
        out->abort(out);
    return rc;
}

static void put_point(floe__avro_writer *w, int32_t x, int32_t y)
{
    floe__avro_begin_record(w);
    floe__avro_put_int(w, x);
    floe__avro_put_int(w, y);
    floe__avro_end_record(w, NULL);
}

/* Object k of the sample file: the expected values are spelled out again,
 * independently, in tests/test_avro.py. */
static void put_sample(floe__avro_writer *w, int k)
{
    static const int32_t ints[] = {INT32_MIN, INT32_MAX, 0, -1};
    static const int64_t longs[] = {INT64_MIN, INT64_MAX, 1, -64};
    static const float floats[] = {1.5f, -INFINITY, 0.0f, 3.4028235e38f};
    static const double doubles[] = {-0.0, 1e300, 2.5, -1.0 / 3.0};
    static const char *strs[] = {"h\xc3\xa9llo \xe2\x9c\x93", "", "plain", "\xf0\x9f\x90\x9f"};
    floe__avro_begin_record(w);
    floe__avro_put_null(w);
    floe__avro_put_boolean(w, k % 2 == 0);
    floe__avro_put_int(w, ints[k]);
    floe__avro_put_long(w, longs[k]);
    floe__avro_put_float(w, floats[k]);
    floe__avro_put_double(w, doubles[k]);
    floe__avro_put_bytes(w, "\x00\xff\x10", (size_t)(k % 4));
    floe__avro_put_cstr(w, strs[k]);
    floe__avro_put_fixed(w, k % 2 ? "\x00\x01\x02\xff" : "abcd", 4);
    floe__avro_put_enum(w, k % 3);
    floe__avro_begin_array(w, (size_t)k);                        /* arr */
    for (int i = 0; i < k; i++)
        floe__avro_put_long(w, i == 0 ? INT64_MAX : -(int64_t)i * 1000000007);
    floe__avro_end_array(w);
    floe__avro_begin_map(w, k == 0 ? 2 : 0);                     /* m */
    if (k == 0) {
        floe__avro_put_cstr(w, "a");
        floe__avro_put_cstr(w, "x");
        floe__avro_put_cstr(w, "b");
        floe__avro_put_cstr(w, "");
    }
    floe__avro_end_map(w);
    if (k % 2)                                                   /* opt */
        floe__avro_put_cstr(w, "present");
    else
        floe__avro_put_null(w);
    switch (k) {                                                 /* u */
    case 0: floe__avro_put_null(w); break;
    case 1: floe__avro_put_long(w, 42); break;
    case 2: floe__avro_put_cstr(w, "str"); break;
    default: put_point(w, 7, -8); break;
    }
    floe__avro_begin_record(w);                                  /* nested */
    floe__avro_begin_array(w, k == 0 ? 2 : 0);
    if (k == 0) {
        put_point(w, 1, 2);
        put_point(w, -3, 4);
    }
    floe__avro_end_array(w);
    floe__avro_begin_array(w, k == 0 ? 2 : 0);
    if (k == 0) {
        floe__avro_begin_record(w);
        floe__avro_put_int(w, 1);
        floe__avro_put_null(w);
        floe__avro_end_record(w, NULL);
        floe__avro_begin_record(w);
        floe__avro_put_int(w, 2);
        floe__avro_put_bytes(w, "\x01", 1);
        floe__avro_end_record(w, NULL);
    }
    floe__avro_end_array(w);
    floe__avro_end_record(w, NULL);
    static const uint8_t decs[4][2] = {{0x30, 0x39}, {0xff, 0x00}, {0x00, 0x00}, {0x7f, 0xff}};
    floe__avro_put_bytes(w, decs[k], k == 2 ? 1 : 2);           /* 123.45, -2.56, 0, 327.67 */
    floe__avro_put_int(w, k == 1 ? -719162 : 19000 + k);        /* dt */
    floe__avro_put_long(w, k == 1 ? -1 : 1700000000123456LL + k); /* ts */
    uint8_t d16[16];
    memset(d16, k == 1 ? 0xff : 0, 16);                          /* -0.0001 or 0.0001 * k */
    if (k != 1)
        d16[15] = (uint8_t)k;
    floe__avro_put_fixed(w, d16, 16);
    floe__avro_begin_record(w);                                  /* list: k+1 .. 1 */
    for (int i = k + 1; i >= 1; i--) {
        floe__avro_put_long(w, i);
        if (i > 1)
            floe__avro_begin_record(w);
        else
            floe__avro_put_null(w);
    }
    for (int i = 0; i < k; i++)                                 /* the inner nodes */
        floe__avro_end_record(w, NULL);
    floe__avro_end_record(w, NULL);                              /* list */
    floe__avro_end_record(w, NULL);                              /* the object */
}

static int write_sample(const char *path, const char *codec)
{
    floe_error *err = floe_error_new();
    floe__avro_meta meta[] = {{"floe.test", "sample", FLOE_AVRO_STRLEN}};
    floe__avro_writer *w;
    if (open_writer(path, SAMPLE_SCHEMA, codec, 0, meta, 1, &w, err) != FLOE_OK)
        return fail("write-sample", err);
    for (int k = 0; k < 4; k++)
        put_sample(w, k);
    if (floe__avro_writer_close(w, NULL, err) != FLOE_OK)
        return fail("write-sample", err);
    floe_error_free(err);
    fputs(SAMPLE_SCHEMA, stdout);
    return 0;
}

static const char MANY_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"row\",\"fields\":["
    "{\"name\":\"id\",\"type\":\"long\",\"field-id\":1},"
    "{\"name\":\"name\",\"type\":\"string\",\"field-id\":2},"
    "{\"name\":\"score\",\"type\":[\"null\",\"double\"],\"field-id\":3}]}";

static int write_many(const char *path, const char *codec, long n, long block)
{
    floe_error *err = floe_error_new();
    floe__avro_writer *w;
    if (open_writer(path, MANY_SCHEMA, codec, (size_t)block, NULL, 0, &w, err) != FLOE_OK)
        return fail("write-many", err);
    char name[64];
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "row-%ld", i);
        floe__avro_begin_record(w);
        floe__avro_put_long(w, i * 7919 - 5000000);
        floe__avro_put_cstr(w, name);
        if (i % 3 == 0)
            floe__avro_put_null(w);
        else
            floe__avro_put_double(w, (double)i / 4.0);
        if (floe__avro_end_record(w, err) != FLOE_OK) {
            floe__avro_writer_abort(w);
            return fail("write-many", err);
        }
    }
    if (floe__avro_writer_close(w, NULL, err) != FLOE_OK)
        return fail("write-many", err);
    floe_error_free(err);
    return 0;
}

/* The Iceberg v2 manifest_entry schema (format/spec.md, "Manifests"), for
 * a table partitioned by identity(category) -> field 1000. */
static const char MANIFEST_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
    "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
    "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
    "{\"name\":\"sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":3},"
    "{\"name\":\"file_sequence_number\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":4},"
    "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
    "{\"name\":\"content\",\"type\":\"int\",\"doc\":\"Contents of the file: 0=data, 1=position deletes, 2=equality deletes\",\"field-id\":134},"
    "{\"name\":\"file_path\",\"type\":\"string\",\"doc\":\"Location URI with FS scheme\",\"field-id\":100},"
    "{\"name\":\"file_format\",\"type\":\"string\",\"doc\":\"File format name: avro, orc, or parquet\",\"field-id\":101},"
    "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":["
    "{\"name\":\"category\",\"type\":[\"null\",\"string\"],\"default\":null,\"field-id\":1000}]},\"doc\":\"Partition data tuple, schema based on the partition spec\",\"field-id\":102},"
    "{\"name\":\"record_count\",\"type\":\"long\",\"doc\":\"Number of records in the file\",\"field-id\":103},"
    "{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"doc\":\"Total file size in bytes\",\"field-id\":104},"
    "{\"name\":\"column_sizes\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k117_v118\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":117},{\"name\":\"value\",\"type\":\"long\",\"field-id\":118}]},\"logicalType\":\"map\"}],\"doc\":\"Map of column id to total size on disk\",\"default\":null,\"field-id\":108},"
    "{\"name\":\"value_counts\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k119_v120\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":119},{\"name\":\"value\",\"type\":\"long\",\"field-id\":120}]},\"logicalType\":\"map\"}],\"doc\":\"Map of column id to total count, including null and NaN\",\"default\":null,\"field-id\":109},"
    "{\"name\":\"null_value_counts\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k121_v122\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":121},{\"name\":\"value\",\"type\":\"long\",\"field-id\":122}]},\"logicalType\":\"map\"}],\"doc\":\"Map of column id to null value count\",\"default\":null,\"field-id\":110},"
    "{\"name\":\"nan_value_counts\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k138_v139\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":138},{\"name\":\"value\",\"type\":\"long\",\"field-id\":139}]},\"logicalType\":\"map\"}],\"doc\":\"Map of column id to number of NaN values in the column\",\"default\":null,\"field-id\":137},"
    "{\"name\":\"lower_bounds\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k126_v127\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":126},{\"name\":\"value\",\"type\":\"bytes\",\"field-id\":127}]},\"logicalType\":\"map\"}],\"doc\":\"Map of column id to lower bound\",\"default\":null,\"field-id\":125},"
    "{\"name\":\"upper_bounds\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k129_v130\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":129},{\"name\":\"value\",\"type\":\"bytes\",\"field-id\":130}]},\"logicalType\":\"map\"}],\"doc\":\"Map of column id to upper bound\",\"default\":null,\"field-id\":128},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"doc\":\"Encryption key metadata blob\",\"default\":null,\"field-id\":131},"
    "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\",\"element-id\":133}],\"doc\":\"Splittable offsets\",\"default\":null,\"field-id\":132},"
    "{\"name\":\"equality_ids\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"int\",\"element-id\":136}],\"doc\":\"Equality comparison field IDs\",\"default\":null,\"field-id\":135},"
    "{\"name\":\"sort_order_id\",\"type\":[\"null\",\"int\"],\"doc\":\"Sort order ID\",\"default\":null,\"field-id\":140},"
    "{\"name\":\"referenced_data_file\",\"type\":[\"null\",\"string\"],\"doc\":\"Fully qualified location (URI with FS scheme) of a data file that all deletes reference\",\"default\":null,\"field-id\":143}"
    "]},\"field-id\":2}]}";

static const char TABLE_SCHEMA[] =
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"category\",\"required\":false,\"type\":\"string\"}]}";
static const char PARTITION_SPEC[] =
    "[{\"source-id\":2,\"field-id\":1000,\"name\":\"category\",\"transform\":\"identity\"}]";

/* A map<int, long> in Iceberg's array-of-records form. */
static void put_id_map(floe__avro_writer *w, const int64_t *values)
{
    floe__avro_begin_array(w, 2);
    for (int32_t id = 1; id <= 2; id++) {
        floe__avro_begin_record(w);
        floe__avro_put_int(w, id);
        floe__avro_put_long(w, values[id - 1]);
        floe__avro_end_record(w, NULL);
    }
    floe__avro_end_array(w);
}

static void put_bounds(floe__avro_writer *w, int64_t id_bound, const char *cat)
{
    uint8_t le[8];
    floe__put_le64(le, (uint64_t)id_bound);
    floe__avro_begin_array(w, 2);
    floe__avro_begin_record(w);
    floe__avro_put_int(w, 1);
    floe__avro_put_bytes(w, le, 8);
    floe__avro_end_record(w, NULL);
    floe__avro_begin_record(w);
    floe__avro_put_int(w, 2);
    floe__avro_put_bytes(w, cat, strlen(cat));
    floe__avro_end_record(w, NULL);
    floe__avro_end_array(w);
}

/* Entry k: data file k of partition category=cat{k}, ADDED by snapshot
 * 5551234 (sequence numbers left to inherit), 100*(k+1) rows. */
static void put_entry(floe__avro_writer *w, int k)
{
    char path[128], cat[16];
    snprintf(path, sizeof path, "s3://bucket/warehouse/db/t/data/category=cat%d/%05d.parquet", k, k);
    snprintf(cat, sizeof cat, "cat%d", k);
    int64_t rows = 100 * (k + 1);
    floe__avro_begin_record(w);
    floe__avro_put_int(w, 1);                   /* status ADDED */
    floe__avro_put_long(w, 5551234);            /* snapshot_id */
    floe__avro_put_null(w);                     /* sequence_number: inherit */
    floe__avro_put_null(w);                     /* file_sequence_number */
    floe__avro_begin_record(w);                 /* data_file */
    floe__avro_put_int(w, 0);
    floe__avro_put_cstr(w, path);
    floe__avro_put_cstr(w, "PARQUET");
    floe__avro_begin_record(w);
    floe__avro_put_cstr(w, cat);
    floe__avro_end_record(w, NULL);
    floe__avro_put_long(w, rows);
    floe__avro_put_long(w, 4096 + k);
    put_id_map(w, (int64_t[]){8 * rows, 5 * rows});              /* column_sizes */
    put_id_map(w, (int64_t[]){rows, rows});                      /* value_counts */
    put_id_map(w, (int64_t[]){0, k});                            /* null_value_counts */
    floe__avro_put_null(w);                                      /* nan_value_counts */
    put_bounds(w, k * 1000, cat);                                /* lower_bounds */
    put_bounds(w, k * 1000 + rows - 1, cat);                     /* upper_bounds */
    floe__avro_put_null(w);                                      /* key_metadata */
    floe__avro_begin_array(w, 1);                                /* split_offsets */
    floe__avro_put_long(w, 4);
    floe__avro_end_array(w);
    floe__avro_put_null(w);                                      /* equality_ids */
    floe__avro_put_int(w, 0);                                    /* sort_order_id */
    floe__avro_put_null(w);                                      /* referenced_data_file */
    floe__avro_end_record(w, NULL);
    floe__avro_end_record(w, NULL);
}

static int write_manifest(const char *path, const char *codec)
{
    floe_error *err = floe_error_new();
    floe__avro_meta meta[] = {
        {"schema", TABLE_SCHEMA, FLOE_AVRO_STRLEN},
        {"schema-id", "0", FLOE_AVRO_STRLEN},
        {"partition-spec", PARTITION_SPEC, FLOE_AVRO_STRLEN},
        {"partition-spec-id", "0", FLOE_AVRO_STRLEN},
        {"format-version", "2", FLOE_AVRO_STRLEN},
        {"content", "data", FLOE_AVRO_STRLEN},
    };
    floe__avro_writer *w;
    if (open_writer(path, MANIFEST_SCHEMA, codec, 0, meta, 6, &w, err) != FLOE_OK)
        return fail("write-manifest", err);
    for (int k = 0; k < 3; k++)
        put_entry(w, k);
    uint64_t size = 0;
    if (floe__avro_writer_close(w, &size, err) != FLOE_OK)
        return fail("write-manifest", err);
    floe_error_free(err);
    printf("%llu\n", (unsigned long long)size);
    return 0;
}

/* ---- dumping ------------------------------------------------------------- */

static json_t *hex_of(const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *s = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    s[2 * n] = 0;
    json_t *j = json_pack("{s:s}", "$bytes", s);
    free(s);
    return j;
}

static json_t *real_of(double d)
{
    if (isnan(d))
        return json_pack("{s:s}", "$float", "NaN");
    if (isinf(d))
        return json_pack("{s:s}", "$float", d > 0 ? "Infinity" : "-Infinity");
    return json_real(d);
}

static json_t *to_json(const floe__avro_value *v);

static json_t *container_json(const floe__avro_value *v)
{
    json_t *j = v->type == FLOE_AVRO_ARRAY ? json_array() : json_object();
    for (size_t i = 0; i < v->n; i++) {
        if (v->type == FLOE_AVRO_RECORD)
            json_object_set_new(j, v->schema->fields[i].name, to_json(&v->u.items[i]));
        else if (v->type == FLOE_AVRO_ARRAY)
            json_array_append_new(j, to_json(floe__avro_item(v, i)));
        else
            json_object_set_new(j, (const char *)floe__avro_map_key(v, i)->u.bytes,
                                to_json(floe__avro_map_value(v, i)));
    }
    return j;
}

static json_t *plain_json(const floe__avro_value *v)
{
    switch (v->type) {
    case FLOE_AVRO_NULL: return json_null();
    case FLOE_AVRO_BOOLEAN: return json_boolean(v->u.b);
    case FLOE_AVRO_INT:
    case FLOE_AVRO_LONG: return json_integer(v->u.i);
    case FLOE_AVRO_FLOAT: return real_of(v->u.f);
    case FLOE_AVRO_DOUBLE: return real_of(v->u.d);
    case FLOE_AVRO_STRING: return json_stringn((const char *)v->u.bytes, v->n);
    case FLOE_AVRO_BYTES:
    case FLOE_AVRO_FIXED: return hex_of(v->u.bytes, v->n);
    case FLOE_AVRO_ENUM: return json_string(v->schema->symbols[v->u.i]);
    default: return container_json(v);
    }
}

static json_t *to_json(const floe__avro_value *v)
{
    json_t *j = plain_json(v);
    if (v->branch < 0)
        return j;
    return json_pack("{s:i,s:o}", "$union", (int)v->branch, "value", j);
}

static int dump(const char *path)
{
    floe_error *err = floe_error_new();
    floe__buf data;
    floe__buf_init(&data, 0);
    floe__avro_reader *r = NULL;
    if (floe__local_read_all(path, &data, err) != FLOE_OK ||
        floe__avro_reader_open(data.data, data.len, NULL, &r, err) != FLOE_OK) {
        floe__buf_free(&data);
        return fail("dump", err);
    }
    json_t *meta = json_object(), *objects = json_array();
    for (size_t i = 0; i < floe__avro_reader_meta_count(r); i++) {
        size_t n;
        const char *val = floe__avro_reader_meta_value(r, i, &n);
        json_object_set_new(meta, floe__avro_reader_meta_key(r, i), json_stringn(val, n));
    }
    const floe__avro_value *v;
    int rc;
    while ((rc = floe__avro_reader_next(r, &v, err)) == FLOE_OK && v)
        json_array_append_new(objects, to_json(v));
    json_t *doc = json_pack("{s:s,s:o,s:o}", "codec",
                            floe__avro_codec_name(floe__avro_reader_codec(r)), "meta", meta,
                            "objects", objects);
    floe__avro_reader_free(r);
    floe__buf_free(&data);
    if (rc != FLOE_OK) {
        json_decref(doc);
        return fail("dump", err);
    }
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    puts(text);
    free(text);
    json_decref(doc);
    floe_error_free(err);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "write-sample") == 0)
        return write_sample(argv[2], argv[3]);
    if (argc == 6 && strcmp(argv[1], "write-many") == 0)
        return write_many(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
    if (argc == 4 && strcmp(argv[1], "write-manifest") == 0)
        return write_manifest(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    fprintf(stderr, "usage: %s write-sample OUT CODEC | write-many OUT CODEC N BLOCK |"
                    " write-manifest OUT CODEC | dump IN\n", argv[0]);
    return 2;
}
