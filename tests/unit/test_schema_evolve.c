/*
 * test_schema_evolve.c - schema evolution: the planner's rules
 * (iceberg/schema_evolve.c), rows carried into an evolved schema
 * (schema/convert.c), defaults and the column list's `default` and `was`
 * clauses (schema/default_value.c, parse.c), and the name mapping.
 */
#include <jansson.h>
#include <math.h>

#include "iceberg/iceberg_internal.h"
#include "source/source_internal.h"
#include "unit.h"

static floe__schema *cols(const char *text)
{
    floe_error *e = floe_error_new();
    floe__schema *s = NULL;
    if (floe_schema_parse(text, &s, e) != FLOE_OK)
        fprintf(stderr, "parse [%s]: %s\n", text, floe_error_message(e));
    floe_error_free(e);
    return s;
}

/* Evolve `table` (its ids as parsed, last-column-id `last`) into `decl`. */
static int evolve(const char *table, int32_t last, int version, const char *decl,
                  floe__evolution *out, char *msg, size_t cap)
{
    floe__schema *t = cols(table), *d = cols(decl);
    floe_error *e = floe_error_new();
    int rc = t && d ? floe__schema_evolve(t, last, version, d, out, e) : -1;
    snprintf(msg, cap, "%s", floe_error_message(e));
    floe_error_free(e);
    floe_schema_free(t);
    floe_schema_free(d);
    return rc;
}

static const floe__field *col(const floe__schema *s, const char *name)
{
    for (uint32_t i = 0; i < s->root.n_children; i++)
        if (strcmp(s->root.children[i].name, name) == 0)
            return &s->root.children[i];
    return NULL;
}

/* Refused with FLOE_EINCOMPATIBLE and a message holding both fragments. */
static void refused(const char *table, int version, const char *decl, const char *f1,
                    const char *f2)
{
    floe__evolution evo;
    char msg[1024];
    int rc = evolve(table, 0, version, decl, &evo, msg, sizeof msg);
    CHECK_EQ_INT(rc, FLOE_EINCOMPATIBLE);
    if (rc == FLOE_OK)
        floe__evolution_clear(&evo);
    if (!strstr(msg, f1) || (f2 && !strstr(msg, f2)))
        fprintf(stderr, "[%s] -> [%s]: \"%s\" lacks \"%s\" / \"%s\"\n", table, decl, msg, f1,
                f2 ? f2 : "");
    CHECK(strstr(msg, f1) != NULL);
    CHECK(!f2 || strstr(msg, f2) != NULL);
}

TEST(unchanged_declaration_keeps_ids)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("id bigint not null, name text", 2, 2, "id int8 not null, name text",
                        &evo, msg, sizeof msg), FLOE_OK);
    CHECK(!evo.changed);
    CHECK_EQ_INT(evo.summary.len, 0);
    CHECK_EQ_INT(col(evo.schema, "name")->id, 2);
    CHECK_EQ_INT(evo.last_column_id, 2);
    floe__evolution_clear(&evo);
}

TEST(added_columns_take_fresh_ids_above_last_column_id)
{
    floe__evolution evo;
    char msg[512];
    /* ids 1, 2 in use; 7 was handed out before (to a dropped column) */
    CHECK_EQ_INT(evolve("id bigint not null, name text", 7, 2,
                        "id bigint not null, name text, tags text[], addr record(zip integer)",
                        &evo, msg, sizeof msg), FLOE_OK);
    CHECK(evo.changed);
    CHECK_EQ_INT(col(evo.schema, "tags")->id, 8);
    CHECK_EQ_INT(col(evo.schema, "tags")->children[0].id, 9);
    CHECK_EQ_INT(col(evo.schema, "addr")->id, 10);
    CHECK_EQ_INT(col(evo.schema, "addr")->children[0].id, 11);
    CHECK_EQ_INT(evo.last_column_id, 11);
    CHECK(strstr((const char *)evo.summary.data, "added tags") != NULL);
    floe__evolution_clear(&evo);
}

TEST(rename_by_was_keeps_the_field_id)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("id bigint not null, name text, qty integer", 3, 2,
                        "id bigint not null, label text was name, qty integer", &evo, msg,
                        sizeof msg), FLOE_OK);
    CHECK(evo.changed);
    CHECK_EQ_INT(col(evo.schema, "label")->id, 2);
    CHECK(col(evo.schema, "name") == NULL);
    CHECK(strstr((const char *)evo.summary.data, "renamed name to label") != NULL);
    CHECK_EQ_INT(evo.last_column_id, 3);
    floe__evolution_clear(&evo);
    /* replayed: the table has the new name already, `was` is satisfied */
    CHECK_EQ_INT(evolve("id bigint not null, label text", 2, 2,
                        "id bigint not null, label text was name", &evo, msg, sizeof msg),
                 FLOE_OK);
    CHECK(!evo.changed);
    floe__evolution_clear(&evo);
    refused("id bigint, name text", 2, "id bigint, name text, label text was name",
            "both stand for", "\"name\"");
    refused("id bigint, name text", 2, "id bigint, label text was nmae", "no column \"nmae\"",
            NULL);
}

TEST(widenings_allowed_and_refused)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("a integer, b real, c numeric(10,2), d smallint", 4, 2,
                        "a bigint, b double precision, c numeric(12,2), d integer", &evo, msg,
                        sizeof msg), FLOE_OK);
    CHECK(evo.changed);
    CHECK_EQ_INT(col(evo.schema, "a")->kind, FLOE_K_LONG);
    CHECK_EQ_INT(col(evo.schema, "b")->kind, FLOE_K_DOUBLE);
    CHECK_EQ_INT(col(evo.schema, "c")->precision, 12);
    CHECK_EQ_INT(col(evo.schema, "d")->decl, FLOE_D_INTEGER);     /* same Iceberg int */
    CHECK(strstr((const char *)evo.summary.data, "widened a from int to long") != NULL);
    CHECK(strstr((const char *)evo.summary.data, "d from") == NULL);
    floe__evolution_clear(&evo);
    refused("a bigint", 2, "a integer", "column \"a\": long cannot become int", "widens only");
    refused("a integer", 2, "a text", "int cannot become string", NULL);
    refused("c numeric(10,2)", 2, "c numeric(12,3)", "scale never changes", NULL);
    refused("c numeric(10,2)", 2, "c numeric(9,2)", "precision may only grow", NULL);
    refused("d date", 2, "d timestamp", "date cannot become timestamp", "on format 3");
    CHECK_EQ_INT(evolve("d date", 1, 3, "d timestamp", &evo, msg, sizeof msg), FLOE_OK);
    floe__evolution_clear(&evo);
    refused("d date", 3, "d timestamptz", "date cannot become timestamptz", NULL);
    refused("t text[]", 2, "t text", "keeps its kind", NULL);
}

TEST(nullability_and_defaults)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("id bigint not null, q integer not null", 2, 2,
                        "id bigint not null, q integer", &evo, msg, sizeof msg), FLOE_OK);
    CHECK(!col(evo.schema, "q")->required);
    CHECK(strstr((const char *)evo.summary.data, "made q nullable") != NULL);
    floe__evolution_clear(&evo);
    refused("id bigint, q integer", 2, "id bigint, q integer not null", "cannot become not null",
            NULL);
    refused("id bigint", 2, "id bigint, s text not null", "column \"s\"", "needs a default");
    refused("id bigint", 2, "id bigint, s text default \"x\"", "format version 3", NULL);
    CHECK_EQ_INT(evolve("id bigint", 1, 3, "id bigint, s text not null default \"new\"", &evo,
                        msg, sizeof msg), FLOE_OK);
    const floe__field *s = col(evo.schema, "s");
    CHECK(s->initial_default && s->write_default);
    CHECK_EQ_INT(s->initial_default_len, 7);
    CHECK_MEM(s->initial_default + 4, "new", 3);
    floe__evolution_clear(&evo);
}

TEST(drops_and_identifier_fields)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("id bigint, a text, b text", 3, 2, "id bigint, b text", &evo, msg,
                        sizeof msg), FLOE_OK);
    CHECK(strstr((const char *)evo.summary.data, "dropped a") != NULL);
    CHECK_EQ_INT(evo.last_column_id, 3);            /* a's id is never handed out again */
    floe__evolution_clear(&evo);
    floe__schema *t = cols("id bigint not null, a text"), *d = cols("a text");
    int32_t ids[1] = {1};
    CHECK_EQ_INT(floe__schema_set_identifiers(t, ids, 1, NULL), FLOE_OK);
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__schema_evolve(t, 2, 2, d, &evo, e), FLOE_EINCOMPATIBLE);
    CHECK(strstr(floe_error_message(e), "identifier field") != NULL);
    floe_error_free(e);
    floe_schema_free(t);
    floe_schema_free(d);
}

/* A table written again whole (a resync): a type Iceberg cannot change in
 * place becomes a new column of the same name, renames keep their ids,
 * nothing becomes required, format 2 drops defaults; a dropped identifier
 * field is still refused. */
TEST(replacing_a_table_frees_the_types)
{
    floe__schema *t = cols("id int not null, a bigint, b text, c int"), *d =
        cols("id int not null, a int, b2 int was b, c int not null default 7, n int not null "
             "default 1");
    floe__evolution evo;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__schema_evolve(t, 4, 2, d, &evo, e), FLOE_EINCOMPATIBLE);
    floe_error_clear(e);
    CHECK_EQ_INT(floe__schema_replace(t, 4, 2, d, &evo, e), FLOE_OK);
    CHECK(evo.changed);
    CHECK_EQ_INT(col(evo.schema, "id")->id, 1);
    CHECK_EQ_INT(col(evo.schema, "a")->id, 5);          /* long -> int: a new column */
    CHECK_EQ_INT(col(evo.schema, "a")->kind, FLOE_K_INT);
    CHECK_EQ_INT(col(evo.schema, "b2")->id, 6);         /* renamed, and text -> int */
    CHECK_EQ_INT(col(evo.schema, "c")->id, 4);
    CHECK(!col(evo.schema, "c")->required && !col(evo.schema, "c")->write_default);
    CHECK(!col(evo.schema, "n")->required && !col(evo.schema, "n")->initial_default);
    CHECK_EQ_INT(evo.last_column_id, 7);
    CHECK(strstr((const char *)evo.summary.data, "replaced a") != NULL);
    floe__evolution_clear(&evo);
    /* format 3 keeps a new column's default (and it may be required) */
    CHECK_EQ_INT(floe__schema_replace(t, 4, 3, d, &evo, e), FLOE_OK);
    CHECK(col(evo.schema, "n")->required && col(evo.schema, "n")->initial_default);
    floe__evolution_clear(&evo);
    floe_schema_free(d);
    d = cols("a text");
    int32_t ids[1] = {1};
    CHECK_EQ_INT(floe__schema_set_identifiers(t, ids, 1, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__schema_replace(t, 4, 2, d, &evo, e), FLOE_EINCOMPATIBLE);
    CHECK(strstr(floe_error_message(e), "identifier field") != NULL);
    floe_error_free(e);
    floe_schema_free(t);
    floe_schema_free(d);
}

TEST(nested_fields_and_reorder)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("id bigint, addr record(zip integer, city text), tags integer[], "
                        "attrs map[text=>real]", 7, 2,
                        "tags bigint[], id bigint, addr record(postcode bigint was zip, "
                        "street text), attrs map[text=>double precision]", &evo, msg,
                        sizeof msg), FLOE_OK);
    const floe__field *addr = col(evo.schema, "addr");
    CHECK_EQ_INT(addr->n_children, 2);
    CHECK_EQ_INT(addr->children[0].id, 3);                 /* zip renamed and widened */
    CHECK_EQ_INT(addr->children[0].kind, FLOE_K_LONG);
    CHECK_EQ_INT(addr->children[1].id, 10);                /* street is new: above id 9 */
    CHECK_EQ_INT(col(evo.schema, "tags")->children[0].kind, FLOE_K_LONG);
    CHECK_EQ_INT(col(evo.schema, "tags")->children[0].id, 6);
    CHECK_EQ_INT(col(evo.schema, "attrs")->children[1].kind, FLOE_K_DOUBLE);
    CHECK_EQ_INT(evo.schema->root.children[0].id, 5);      /* tags moved first */
    const char *sum = (const char *)evo.summary.data;
    CHECK(strstr(sum, "moved tags") && strstr(sum, "renamed zip to addr.postcode") &&
          strstr(sum, "dropped addr.city") && strstr(sum, "added addr.street"));
    floe__evolution_clear(&evo);
}

/* ---- rows carried across ------------------------------------------------------------------ */

/* The JSON row `json` of schema `from` as a row of `to`, as JSON. */
static char *carried(const floe__schema *from, const floe__schema *to, const char *json)
{
    floe__buf a, b, out;
    floe__buf_init(&a, 0);
    floe__buf_init(&b, 0);
    floe__buf_init(&out, 0);
    const char *end;
    char *text = NULL;
    if (floe__json_parse_row(from, json, json + strlen(json), &end, &a, NULL) == FLOE_OK &&
        floe__datum_convert(from, to, a.data, a.len, &b, NULL) == FLOE_OK &&
        floe__datum_validate(to, b.data, b.len, NULL) == FLOE_OK &&
        floe__datum_to_json(to, b.data, b.len, &out, NULL) == FLOE_OK)
        text = floe__buf_strdup(&out);
    floe__buf_free(&a);
    floe__buf_free(&b);
    floe__buf_free(&out);
    return text;
}

TEST(rows_are_carried_by_field_id)
{
    floe__evolution evo;
    char msg[512];
    const char *table = "id bigint not null, name text, qty integer, score real, gone text, "
                        "addr record(zip integer), m map[text=>integer]";
    CHECK_EQ_INT(evolve(table, 8, 3, "qty bigint, id bigint not null, label text was name, "
                        "score double precision, addr record(zip bigint, street text), "
                        "m map[text=>bigint], flag boolean not null default true", &evo, msg,
                        sizeof msg), FLOE_OK);
    floe__schema *from = cols(table);
    char *got = carried(from, evo.schema,
                        "{\"id\": 7, \"name\": \"x\", \"qty\": -3, \"score\": 1.5, "
                        "\"gone\": \"y\", \"addr\": {\"zip\": 12}, \"m\": {\"a\": 1, \"b\": -2}}");
    CHECK_EQ_STR(got, "{\"qty\":-3,\"id\":7,\"label\":\"x\",\"score\":1.5,"
                      "\"addr\":{\"zip\":12,\"street\":null},\"m\":{\"a\":1,\"b\":-2},"
                      "\"flag\":true}");
    floe__free(got);
    got = carried(from, evo.schema, "{\"id\": 8}");
    CHECK_EQ_STR(got, "{\"qty\":null,\"id\":8,\"label\":null,\"score\":null,\"addr\":null,"
                      "\"m\":null,\"flag\":true}");
    floe__free(got);
    floe_schema_free(from);
    floe__evolution_clear(&evo);
}

TEST(a_widened_map_key_keeps_rows_canonical)
{
    /* map entries are stored sorted by key bytes: date keys 1 and 3 are
     * 01 00.. / 03 00.. (1 first); as timestamps (micros, little-endian:
     * 00 60 d7 1d 14.. / 00 20 86 59 3c..) 3 comes first, so the carried
     * row is sorted again */
    floe__schema *from = cols("m map[text=>integer]");
    floe__schema *to = NULL;
    CHECK_EQ_INT(floe__schema_copy(from, &to, NULL), FLOE_OK);
    from->root.children[0].children[0].kind = FLOE_K_DATE;
    to->root.children[0].children[0].kind = FLOE_K_TIMESTAMP;
    uint8_t row[1 + 4 + 2 * 10], *p = row;
    *p++ = FLOE_SLOT_PRESENT;
    floe__put_le32(p, 2);
    p += 4;
    const int32_t days[2] = {1, 3};
    for (int i = 0; i < 2; i++) {
        *p++ = FLOE_SLOT_PRESENT;
        floe__put_le32(p, (uint32_t)days[i]);
        p += 4;
        *p++ = FLOE_SLOT_PRESENT;
        floe__put_le32(p, (uint32_t)i);
        p += 4;
    }
    floe__buf out;
    floe__buf_init(&out, 0);
    CHECK_EQ_INT(floe__datum_convert(from, to, row, sizeof row, &out, NULL), FLOE_OK);
    CHECK_EQ_INT(out.len, 1 + 4 + 2 * 14);
    if (out.len == 1 + 4 + 2 * 14) {
        const uint8_t *k0 = out.data + 6, *k1 = out.data + 6 + 14;
        CHECK(memcmp(k0, k1, 8) < 0);                     /* sorted by key bytes */
        CHECK_EQ_INT((int64_t)floe__get_le64(k0), 3 * 86400000000LL);   /* day 3 first */
        CHECK_EQ_INT(floe__get_le32(k0 + 9), 1);          /* with its value */
        CHECK_EQ_INT((int64_t)floe__get_le64(k1), 86400000000LL);
    }
    floe__buf_free(&out);
    floe_schema_free(from);
    floe_schema_free(to);
}

/* ---- defaults and the column list ------------------------------------------------------------- */

TEST(column_list_default_and_was_clauses)
{
    floe__schema *s = cols("a integer not null default 5 was x, b text default \"hi\", "
                           "c numeric(10,2) default 1.25, d date default \"2024-02-29\", "
                           "e bytea default \"00ff\", f timestamptz default "
                           "\"2024-01-01T10:00:00+02:00\", g double precision default \"NaN\"");
    CHECK(s != NULL);
    if (!s)
        return;
    const floe__field *a = col(s, "a");
    CHECK(a->required && a->write_default && a->was && strcmp(a->was, "x") == 0);
    CHECK_EQ_INT((int32_t)floe__get_le32(a->write_default), 5);
    json_t *j;
    CHECK_EQ_INT(floe__schema_to_jansson(s, &j, NULL), FLOE_OK);
    char *text = json_dumps(json_object_get(j, "fields"), JSON_COMPACT);
    CHECK(strstr(text, "\"write-default\":5") && strstr(text, "\"write-default\":\"hi\"") &&
          strstr(text, "\"write-default\":\"1.25\"") &&
          strstr(text, "\"write-default\":\"2024-02-29\"") &&
          strstr(text, "\"write-default\":\"00ff\"") &&
          strstr(text, "\"write-default\":\"2024-01-01T08:00:00+00:00\"") &&
          strstr(text, "\"write-default\":\"NaN\""));
    free(text);
    floe__schema *back = NULL;
    CHECK_EQ_INT(floe__schema_from_jansson(j, &back, NULL), FLOE_OK);
    for (uint32_t i = 0; back && i < s->root.n_children; i++)
        CHECK(floe__default_equal(s->root.children[i].write_default,
                                  s->root.children[i].write_default_len,
                                  back->root.children[i].write_default,
                                  back->root.children[i].write_default_len));
    CHECK(back && floe__schema_equal(s, back));
    json_decref(j);
    floe_schema_free(back);
    floe_schema_free(s);
    floe_error *e = floe_error_new();
    floe__schema *bad = NULL;
    CHECK_EQ_INT(floe_schema_parse("a smallint default 70000", &bad, e), FLOE_ESCHEMA);
    CHECK(strstr(floe_error_message(e), "column \"a\"") &&
          strstr(floe_error_message(e), "out of range"));
    CHECK_EQ_INT(floe_schema_parse("a integer default \"x\"", &bad, e), FLOE_ESCHEMA);
    CHECK_EQ_INT(floe_schema_parse("a numeric(5,1) default 1.25", &bad, e), FLOE_ESCHEMA);
    CHECK_EQ_INT(floe_schema_parse("a text[] default \"x\"", &bad, e), FLOE_ESCHEMA);
    CHECK(strstr(floe_error_message(e), "primitive") != NULL);
    CHECK_EQ_INT(floe_schema_parse("a text not null not null", &bad, e), FLOE_ESCHEMA);
    CHECK_EQ_INT(floe_schema_parse("a text was", &bad, e), FLOE_ESCHEMA);
    floe_error_free(e);
}

TEST(missing_columns_take_their_write_default)
{
    floe__schema *s = cols("id bigint not null, status text not null default \"new\", "
                           "n integer default 3, note text");
    floe__buf row, out;
    floe__buf_init(&row, 0);
    floe__buf_init(&out, 0);
    const char *in[] = {"{\"id\": 1}", "{\"note\": \"x\", \"id\": 2}",
                        "{\"id\": 3, \"n\": null, \"status\": \"old\"}"};
    const char *want[] = {"{\"id\":1,\"status\":\"new\",\"n\":3,\"note\":null}",
                          "{\"id\":2,\"status\":\"new\",\"n\":3,\"note\":\"x\"}",
                          "{\"id\":3,\"status\":\"old\",\"n\":null,\"note\":null}"};
    for (int i = 0; i < 3; i++) {
        const char *end;
        floe__buf_reset(&row);
        floe__buf_reset(&out);
        CHECK_EQ_INT(floe__json_parse_row(s, in[i], in[i] + strlen(in[i]), &end, &row, NULL),
                     FLOE_OK);
        CHECK_EQ_INT(floe__datum_to_json(s, row.data, row.len, &out, NULL), FLOE_OK);
        CHECK_EQ_INT(floe__buf_putc(&out, 0, NULL), FLOE_OK);
        CHECK_EQ_STR((const char *)out.data, want[i]);
    }
    floe__buf_free(&row);
    floe__buf_free(&out);
    floe_schema_free(s);
}

TEST(iceberg_defaults_read_from_metadata)
{
    const char *json = "{\"type\":\"struct\",\"schema-id\":3,\"identifier-field-ids\":[1],"
                       "\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
                       "{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"timestamp\","
                       "\"doc\":\"when\",\"initial-default\":\"2017-11-16T22:31:08.123456\","
                       "\"write-default\":\"2017-11-16T22:31:08\"},"
                       "{\"id\":3,\"name\":\"u\",\"required\":false,\"type\":\"uuid\","
                       "\"initial-default\":\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"},"
                       "{\"id\":4,\"name\":\"d\",\"required\":false,\"type\":\"decimal(9, 2)\","
                       "\"initial-default\":\"14.20\"}]}";
    floe__schema *s = NULL;
    CHECK_EQ_INT(floe__schema_from_json(json, strlen(json), &s, NULL), FLOE_OK);
    if (!s)
        return;
    CHECK_EQ_INT(s->n_identifier_ids, 1);
    const floe__field *ts = col(s, "ts");
    CHECK_EQ_STR(ts->doc, "when");
    CHECK_EQ_INT((int64_t)floe__get_le64(ts->initial_default), 1510871468123456LL);
    CHECK_EQ_INT((int64_t)floe__get_le64(ts->write_default), 1510871468000000LL);
    CHECK_EQ_INT(col(s, "u")->initial_default_len, 16);
    floe__i128 d;
    memcpy(&d, col(s, "d")->initial_default, 16);
    CHECK(d == 1420);
    json_t *j;
    CHECK_EQ_INT(floe__schema_to_jansson(s, &j, NULL), FLOE_OK);
    CHECK_EQ_INT(json_array_size(json_object_get(j, "identifier-field-ids")), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_object_get(j, "fields"), 1), "initial-default")),
                 "2017-11-16T22:31:08.123456");
    json_decref(j);
    floe_schema_free(s);
    const char *nested = "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"l\","
                         "\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":2,"
                         "\"element\":\"int\",\"element-required\":false},"
                         "\"initial-default\":[1]}]}";
    CHECK_EQ_INT(floe__schema_from_json(nested, strlen(nested), &s, NULL), FLOE_EUNSUPPORTED);
}

TEST(fingerprint_and_equality)
{
    floe__schema *a = cols("id bigint not null, name text"), *b = cols("id int8, title text");
    CHECK(floe__schema_fingerprint(a) == floe__schema_fingerprint(b));   /* same bytes */
    CHECK(!floe__schema_equal(a, b));                                     /* not the same */
    floe__schema *c = cols("id integer not null, name text");
    CHECK(floe__schema_fingerprint(a) != floe__schema_fingerprint(c));
    floe_schema_free(a);
    floe_schema_free(b);
    floe_schema_free(c);
}

TEST(name_mapping_follows_renames_and_adds)
{
    floe__evolution evo;
    char msg[512];
    CHECK_EQ_INT(evolve("id bigint, name text", 2, 2, "id bigint, label text was name, "
                        "tags text[]", &evo, msg, sizeof msg), FLOE_OK);
    char *out = NULL;
    CHECK_EQ_INT(floe__name_mapping_update("[{\"field-id\":1,\"names\":[\"id\"]},"
                                           "{\"field-id\":2,\"names\":[\"name\",\"nm\"]}]",
                                           evo.schema, &out, NULL), FLOE_OK);
    CHECK_EQ_STR(out, "[{\"field-id\":1,\"names\":[\"id\"]},{\"field-id\":2,\"names\":[\"name\","
                      "\"nm\",\"label\"]},{\"field-id\":3,\"names\":[\"tags\"],\"fields\":"
                      "[{\"field-id\":4,\"names\":[\"element\"]}]}]");
    floe__free(out);
    CHECK_EQ_INT(floe__name_mapping_update(NULL, evo.schema, &out, NULL), FLOE_OK);
    CHECK(out == NULL);
    CHECK_EQ_INT(floe__name_mapping_update("{\"a\":1}", evo.schema, &out, NULL), FLOE_EFORMAT);
    floe__evolution_clear(&evo);
}

int main(void)
{
    RUN(unchanged_declaration_keeps_ids);
    RUN(added_columns_take_fresh_ids_above_last_column_id);
    RUN(rename_by_was_keeps_the_field_id);
    RUN(widenings_allowed_and_refused);
    RUN(nullability_and_defaults);
    RUN(drops_and_identifier_fields);
    RUN(replacing_a_table_frees_the_types);
    RUN(nested_fields_and_reorder);
    RUN(rows_are_carried_by_field_id);
    RUN(a_widened_map_key_keeps_rows_canonical);
    RUN(column_list_default_and_was_clauses);
    RUN(missing_columns_take_their_write_default);
    RUN(iceberg_defaults_read_from_metadata);
    RUN(fingerprint_and_equality);
    RUN(name_mapping_follows_renames_and_adds);
    return UNIT_DONE();
}
