/*
 * test_schema.c - the column-list parser (parse.c), the type tree
 * operations and Iceberg schema JSON (type.c).
 */
#include <jansson.h>
#include <stdlib.h>

#include "schema/schema_internal.h"
#include "unit.h"

/* Parses `cols`, which must succeed. */
static floe_schema *parse_ok(const char *cols)
{
    floe_error *e = floe_error_new();
    floe_schema *s = NULL;
    int rc = floe_schema_parse(cols, &s, e);
    if (rc != FLOE_OK)
        fprintf(stderr, "unexpected error for [%s]: %s\n", cols, floe_error_message(e));
    floe_error_free(e);
    return s;
}

/* Parsing `cols` fails with FLOE_ESCHEMA and a message holding all of the
 * given fragments. */
static int parse_fails(const char *cols, const char *frag1, const char *frag2)
{
    floe_error *e = floe_error_new();
    floe_schema *s = NULL;
    int rc = floe_schema_parse(cols, &s, e);
    const char *m = floe_error_message(e);
    int ok = rc == FLOE_ESCHEMA && s == NULL && strstr(m, frag1) &&
             (!frag2 || strstr(m, frag2));
    if (!ok)
        fprintf(stderr, "for [%s]: rc=%d message \"%s\" (wanted \"%s\" and \"%s\")\n", cols, rc,
                m, frag1, frag2 ? frag2 : "");
    floe_error_free(e);
    floe_schema_free(s);
    return ok;
}

static char *to_json(const floe_schema *s)
{
    char *j = NULL;
    CHECK_EQ_INT(floe_schema_to_json(s, &j, NULL), FLOE_OK);
    return j;
}

/* The declared and Iceberg type names of the single column of `cols`. */
static void check_type(const char *cols, floe__kind kind, floe__decl decl, const char *iceberg,
                       const char *declared)
{
    floe_schema *s = parse_ok(cols);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_EQ_INT(floe_schema_column_count(s), 1);
    const floe__field *f = &s->root.children[0];
    char name[128];
    if (f->kind != kind || f->decl != decl)
        fprintf(stderr, "for [%s]: kind %d decl %d\n", cols, f->kind, f->decl);
    CHECK_EQ_INT(f->kind, kind);
    CHECK_EQ_INT(f->decl, decl);
    floe__type_name(f, false, name, sizeof name);
    CHECK_EQ_STR(name, iceberg);
    floe__type_name(f, true, name, sizeof name);
    CHECK_EQ_STR(name, declared);
    floe_schema_free(s);
}

TEST(every_scalar_type_and_alias)
{
    check_type("a boolean", FLOE_K_BOOLEAN, FLOE_D_BOOLEAN, "boolean", "boolean");
    check_type("a bool", FLOE_K_BOOLEAN, FLOE_D_BOOLEAN, "boolean", "boolean");
    check_type("a smallint", FLOE_K_INT, FLOE_D_SMALLINT, "int", "smallint");
    check_type("a int2", FLOE_K_INT, FLOE_D_SMALLINT, "int", "smallint");
    check_type("a integer", FLOE_K_INT, FLOE_D_INTEGER, "int", "integer");
    check_type("a int", FLOE_K_INT, FLOE_D_INTEGER, "int", "integer");
    check_type("a int4", FLOE_K_INT, FLOE_D_INTEGER, "int", "integer");
    check_type("a bigint", FLOE_K_LONG, FLOE_D_BIGINT, "long", "bigint");
    check_type("a int8", FLOE_K_LONG, FLOE_D_BIGINT, "long", "bigint");
    check_type("a uint2", FLOE_K_INT, FLOE_D_UINT2, "int", "uint2");
    check_type("a uint4", FLOE_K_LONG, FLOE_D_UINT4, "long", "uint4");
    check_type("a uint8", FLOE_K_DECIMAL, FLOE_D_UINT8, "decimal(20,0)", "uint8");
    check_type("a real", FLOE_K_FLOAT, FLOE_D_REAL, "float", "real");
    check_type("a float4", FLOE_K_FLOAT, FLOE_D_REAL, "float", "real");
    check_type("a double precision", FLOE_K_DOUBLE, FLOE_D_DOUBLE, "double", "double precision");
    check_type("a float8", FLOE_K_DOUBLE, FLOE_D_DOUBLE, "double", "double precision");
    check_type("a numeric(12,2)", FLOE_K_DECIMAL, FLOE_D_NUMERIC, "decimal(12,2)", "numeric(12,2)");
    check_type("a numeric(7)", FLOE_K_DECIMAL, FLOE_D_NUMERIC, "decimal(7,0)", "numeric(7,0)");
    check_type("a decimal(38, 38)", FLOE_K_DECIMAL, FLOE_D_NUMERIC, "decimal(38,38)",
               "numeric(38,38)");
    check_type("a text", FLOE_K_STRING, FLOE_D_TEXT, "string", "text");
    check_type("a varchar", FLOE_K_STRING, FLOE_D_TEXT, "string", "text");
    check_type("a varchar(20)", FLOE_K_STRING, FLOE_D_TEXT, "string", "text");
    check_type("a character varying(5)", FLOE_K_STRING, FLOE_D_TEXT, "string", "text");
    check_type("a jsonb", FLOE_K_STRING, FLOE_D_JSONB, "string", "jsonb");
    check_type("a json", FLOE_K_STRING, FLOE_D_JSONB, "string", "jsonb");
    check_type("a interval", FLOE_K_STRING, FLOE_D_INTERVAL, "string", "interval");
    check_type("a uuid", FLOE_K_STRING, FLOE_D_UUID, "string", "uuid");
    check_type("a bytea", FLOE_K_BINARY, FLOE_D_BYTEA, "binary", "bytea");
    check_type("a date", FLOE_K_DATE, FLOE_D_DATE, "date", "date");
    check_type("a time", FLOE_K_TIME, FLOE_D_TIME, "time", "time");
    check_type("a time without time zone", FLOE_K_TIME, FLOE_D_TIME, "time", "time");
    check_type("a timestamp", FLOE_K_TIMESTAMP, FLOE_D_TIMESTAMP, "timestamp", "timestamp");
    check_type("a timestamp without time zone", FLOE_K_TIMESTAMP, FLOE_D_TIMESTAMP, "timestamp",
               "timestamp");
    check_type("a timestamptz", FLOE_K_TIMESTAMPTZ, FLOE_D_TIMESTAMPTZ, "timestamptz",
               "timestamptz");
    check_type("a timestamp with time zone", FLOE_K_TIMESTAMPTZ, FLOE_D_TIMESTAMPTZ,
               "timestamptz", "timestamptz");
}

TEST(type_names_are_case_insensitive_and_blanks_flexible)
{
    check_type("a BIGINT", FLOE_K_LONG, FLOE_D_BIGINT, "long", "bigint");
    check_type("  a\tDouble\n  Precision  ", FLOE_K_DOUBLE, FLOE_D_DOUBLE, "double",
               "double precision");
    check_type("a TimeStamp  WITH\ttime ZONE", FLOE_K_TIMESTAMPTZ, FLOE_D_TIMESTAMPTZ,
               "timestamptz", "timestamptz");
    check_type("a Numeric ( 10 , 3 )", FLOE_K_DECIMAL, FLOE_D_NUMERIC, "decimal(10,3)",
               "numeric(10,3)");
    check_type("a Text [ ]", FLOE_K_LIST, FLOE_D_LIST, "list<string>", "text[]");
    check_type("a MAP [ TEXT => INT ]", FLOE_K_MAP, FLOE_D_MAP, "map<string, int>",
               "map[text=>integer]");
}

TEST(nested_types)
{
    check_type("a text[]", FLOE_K_LIST, FLOE_D_LIST, "list<string>", "text[]");
    check_type("a int[3]", FLOE_K_LIST, FLOE_D_LIST, "list<int>", "integer[]");
    check_type("a text[][]", FLOE_K_LIST, FLOE_D_LIST, "list<list<string>>", "text[][]");
    check_type("a list<bigint>", FLOE_K_LIST, FLOE_D_LIST, "list<long>", "bigint[]");
    check_type("a list<list<date>>", FLOE_K_LIST, FLOE_D_LIST, "list<list<date>>", "date[][]");
    check_type("a map[text=>text]", FLOE_K_MAP, FLOE_D_MAP, "map<string, string>",
               "map[text=>text]");
    check_type("a map[varchar=>numeric(5,1)[]]", FLOE_K_MAP, FLOE_D_MAP,
               "map<string, list<decimal(5,1)>>", "map[text=>numeric(5,1)[]]");
    check_type("a record(b int, c text not null)", FLOE_K_STRUCT, FLOE_D_RECORD,
               "struct<b: int, c: string>", "record(b integer, c text not null)");
    check_type("a record(b int)[]", FLOE_K_LIST, FLOE_D_LIST, "list<struct<b: int>>",
               "record(b integer)[]");
    check_type("a map[text=>int][]", FLOE_K_LIST, FLOE_D_LIST, "list<map<string, int>>",
               "map[text=>integer][]");
}

TEST(range_types)
{
    static const struct {
        const char *cols, *elem, *decl;
    } cases[] = {
        {"r int4range", "int", "range<integer>"},
        {"r int8range", "long", "range<bigint>"},
        {"r daterange", "date", "range<date>"},
        {"r tsrange", "timestamp", "range<timestamp>"},
        {"r tstzrange", "timestamptz", "range<timestamptz>"},
        {"r numrange(10,2)", "decimal(10,2)", "range<numeric(10,2)>"},
        {"r range<uuid>", "string", "range<uuid>"},
        {"r range<numeric(5)>", "decimal(5,0)", "range<numeric(5,0)>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        floe_schema *s = parse_ok(cases[i].cols);
        CHECK(s != NULL);
        if (!s)
            continue;
        const floe__field *r = &s->root.children[0];
        CHECK_EQ_INT(r->kind, FLOE_K_STRUCT);
        CHECK_EQ_INT(r->decl, FLOE_D_RANGE);
        CHECK_EQ_INT(r->n_children, 5);
        char want[128], got[128];
        snprintf(want, sizeof want,
                 "struct<lower: %s, upper: %s, lower_inclusive: boolean, upper_inclusive: "
                 "boolean, empty: boolean>",
                 cases[i].elem, cases[i].elem);
        floe__type_name(r, false, got, sizeof got);
        CHECK_EQ_STR(got, want);
        floe__type_name(r, true, got, sizeof got);
        CHECK_EQ_STR(got, cases[i].decl);
        for (uint32_t k = 0; k < 5; k++)
            CHECK(!r->children[k].required);
        CHECK_EQ_INT(r->children[0].id, 2);
        CHECK_EQ_INT(r->children[4].id, 6);
        CHECK_EQ_INT(s->highest_id, 6);
        floe_schema_free(s);
    }
}

TEST(nullability)
{
    floe_schema *s = parse_ok("a int not null, b int null, c int, d text[] not null, "
                              "e list<int not null>, f map[text=>int not null], "
                              "g map[text=>int], h record(x int not null, y int)");
    CHECK(s != NULL);
    if (!s)
        return;
    const floe__field *c = s->root.children;
    CHECK(c[0].required);
    CHECK(!c[1].required);
    CHECK(!c[2].required);
    CHECK(c[3].required);
    CHECK(!c[3].children[0].required);        /* T[] elements are nullable */
    CHECK(c[4].children[0].required);
    CHECK(c[5].children[0].required);         /* map keys are required */
    CHECK(c[5].children[1].required);
    CHECK(c[6].children[0].required);
    CHECK(!c[6].children[1].required);
    CHECK(c[7].children[0].required);
    CHECK(!c[7].children[1].required);
    floe_schema_free(s);
}

TEST(field_ids_depth_first_preorder)
{
    floe_schema *s = parse_ok("id bigint not null, tags text[], attrs map[text=>text], "
                              "addr record(street text, geo record(lat real, lon real)), "
                              "last int");
    CHECK(s != NULL);
    if (!s)
        return;
    const floe__field *c = s->root.children;
    CHECK_EQ_INT(c[0].id, 1);
    CHECK_EQ_INT(c[1].id, 2);
    CHECK_EQ_INT(c[1].children[0].id, 3);
    CHECK_EQ_STR(c[1].children[0].name, "element");
    CHECK_EQ_INT(c[2].id, 4);
    CHECK_EQ_INT(c[2].children[0].id, 5);
    CHECK_EQ_STR(c[2].children[0].name, "key");
    CHECK_EQ_INT(c[2].children[1].id, 6);
    CHECK_EQ_STR(c[2].children[1].name, "value");
    CHECK_EQ_INT(c[3].id, 7);
    CHECK_EQ_INT(c[3].children[0].id, 8);
    CHECK_EQ_INT(c[3].children[1].id, 9);
    CHECK_EQ_INT(c[3].children[1].children[0].id, 10);
    CHECK_EQ_INT(c[3].children[1].children[1].id, 11);
    CHECK_EQ_INT(c[4].id, 12);
    CHECK_EQ_INT(s->highest_id, 12);
    CHECK_EQ_INT(s->schema_id, 0);
    const floe__field *f = floe__schema_find_id(s, 10);
    CHECK(f != NULL && strcmp(f->name, "lat") == 0);
    CHECK(floe__schema_find_id(s, 13) == NULL);
    CHECK(floe__schema_find_id(s, 0) == NULL);
    floe_schema_free(s);
}

TEST(names)
{
    floe_schema *s = parse_ok("\"Weird Name\" int, \"quo\"\"te\" text, CamelCase int, _x1 int, "
                              "\"ünï\" int, \"int\" int");
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_EQ_INT(floe_schema_column_count(s), 6);
    CHECK_EQ_STR(s->root.children[0].name, "Weird Name");
    CHECK_EQ_STR(s->root.children[1].name, "quo\"te");
    CHECK_EQ_STR(s->root.children[2].name, "CamelCase");
    CHECK_EQ_STR(s->root.children[3].name, "_x1");
    CHECK_EQ_STR(s->root.children[4].name, "ünï");
    CHECK_EQ_STR(s->root.children[5].name, "int");
    floe_schema_free(s);
}

TEST(errors_name_column_and_reason)
{
    CHECK(parse_fails("a integr", "column \"a\"", "unknown type \"integr\""));
    CHECK(parse_fails("id int, price numeric", "column \"price\"", "needs a precision"));
    CHECK(parse_fails("price numeric(39,2)", "column \"price\"", "precision 39"));
    CHECK(parse_fails("price numeric(0)", "precision 0", NULL));
    CHECK(parse_fails("price numeric(5,6)", "scale 6", NULL));
    CHECK(parse_fails("price numeric(5,-1)", "scale", NULL));
    CHECK(parse_fails("r numrange", "column \"r\"", "numrange needs a precision"));
    CHECK(parse_fails("a int, b text, a bigint", "duplicate column name \"a\"", NULL));
    CHECK(parse_fails("r record(x int, x text)", "column \"r\"", "duplicate field name \"x\""));
    CHECK(parse_fails("", "the column list is empty", NULL));
    CHECK(parse_fails("   \n ", "the column list is empty", NULL));
    CHECK(parse_fails("a int,", "expected a column name", "end of input"));
    CHECK(parse_fails("a int b", "column \"a\"", "expected \",\""));
    CHECK(parse_fails("a int) ", "found \")\"", NULL));
    CHECK(parse_fails("a record(b int", "expected \",\" or \")\"", "end of input"));
    CHECK(parse_fails("a record()", "at least one field", NULL));
    CHECK(parse_fails("a list<int", "\">\" closing list<", NULL));
    CHECK(parse_fails("a int[", "\"]\"", NULL));
    CHECK(parse_fails("a map[int=>text]", "column \"a\"", "map keys must be text, not integer"));
    CHECK(parse_fails("a map[text[]=>text]", "map keys must be text", NULL));
    CHECK(parse_fails("a map[text, text]", "expected \"=>\"", NULL));
    CHECK(parse_fails("a time with time zone", "not supported", NULL));
    CHECK(parse_fails("a double", "double precision", NULL));
    CHECK(parse_fails("a range<int[]>", "scalar element type", NULL));
    CHECK(parse_fails("a timestamp with zone", "expected \"time zone\"", NULL));
    CHECK(parse_fails("\"\" int", "empty quoted name", NULL));
    CHECK(parse_fails("\"abc int", "unterminated quoted name", NULL));
    CHECK(parse_fails("a int not nul", "expected \",\"", NULL));
    CHECK(parse_fails("1a int", "expected a column name", NULL));
    CHECK(parse_fails("a", "column \"a\"", "expected a type"));
    CHECK(parse_fails("r record(x record(y integr))", "column \"r.x.y\"", "unknown type"));
    /* the position is reported, 1-based */
    CHECK(parse_fails("a int, b integr", "unknown type", "(at position 10)"));
}

static char *nested(const char *open, const char *leaf, const char *close, int depth)
{
    size_t n = strlen(open) * depth + strlen(leaf) + strlen(close) * depth + 8;
    char *s = malloc(n);
    strcpy(s, "a ");
    for (int i = 0; i < depth; i++)
        strcat(s, open);
    strcat(s, leaf);
    for (int i = 0; i < depth; i++)
        strcat(s, close);
    return s;
}

TEST(nesting_depth_is_capped)
{
    /* a column is level 1; 63 list levels + the int leaf = 64 levels */
    char *ok = nested("list<", "int", ">", 63);
    floe_schema *s = parse_ok(ok);
    CHECK(s != NULL);
    floe_schema_free(s);
    free(ok);
    char *deep = nested("list<", "int", ">", 64);
    CHECK(parse_fails(deep, "nested too deeply", NULL));
    free(deep);
    char *brackets = nested("", "int", "[]", 64);
    CHECK(parse_fails(brackets, "nested too deeply", NULL));
    free(brackets);
    char *records = nested("record(x ", "int", ")", 5000);
    CHECK(parse_fails(records, "nested too deeply", NULL));
    free(records);
    char *many = nested("", "int", "[]", 100000);
    CHECK(parse_fails(many, "nested too deeply", NULL));
    free(many);
}

TEST(schema_json)
{
    floe_schema *s = parse_ok("id bigint not null, tags text[], m map[text=>int not null], "
                              "p numeric(12,2), r record(a uuid, b bytea not null), t timestamptz");
    CHECK(s != NULL);
    if (!s)
        return;
    char *j = to_json(s);
    CHECK_EQ_STR(j,
                 "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
                 "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
                 "{\"id\":2,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\","
                 "\"element-id\":3,\"element\":\"string\",\"element-required\":false}},"
                 "{\"id\":4,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\","
                 "\"key-id\":5,\"key\":\"string\",\"value-id\":6,\"value\":\"int\","
                 "\"value-required\":true}},"
                 "{\"id\":7,\"name\":\"p\",\"required\":false,\"type\":\"decimal(12,2)\"},"
                 "{\"id\":8,\"name\":\"r\",\"required\":false,\"type\":{\"type\":\"struct\","
                 "\"fields\":[{\"id\":9,\"name\":\"a\",\"required\":false,\"type\":\"string\"},"
                 "{\"id\":10,\"name\":\"b\",\"required\":true,\"type\":\"binary\"}]}},"
                 "{\"id\":11,\"name\":\"t\",\"required\":false,\"type\":\"timestamptz\"}]}");

    /* and back: same tree (kinds, ids, names, nullability), decl NONE */
    floe__schema *back = NULL;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__schema_from_json(j, strlen(j), &back, e), FLOE_OK);
    if (back) {
        char *j2 = to_json(back);
        CHECK_EQ_STR(j2, j);
        CHECK_EQ_INT(back->highest_id, 11);
        CHECK_EQ_INT(back->root.children[0].decl, FLOE_D_NONE);
        CHECK_EQ_INT(back->root.children[3].precision, 12);
        CHECK_EQ_INT(back->root.children[3].scale, 2);
        floe_free(j2);
    }
    floe_schema_free(back);
    floe_error_free(e);
    floe_free(j);
    floe_schema_free(s);
}

static int from_json_fails(const char *text, int code, const char *frag)
{
    floe__schema *s = NULL;
    floe_error *e = floe_error_new();
    int rc = floe__schema_from_json(text, strlen(text), &s, e);
    int ok = rc == code && !s && strstr(floe_error_message(e), frag);
    if (!ok)
        fprintf(stderr, "from_json [%s]: rc %d \"%s\"\n", text, rc, floe_error_message(e));
    floe_schema_free(s);
    floe_error_free(e);
    return ok;
}

TEST(schema_from_iceberg_json)
{
    const char *text =
        "{\"type\":\"struct\",\"schema-id\":3,\"identifier-field-ids\":[1],\"fields\":["
        "{\"id\":1,\"name\":\"u\",\"required\":true,\"type\":\"uuid\"},"
        "{\"id\":7,\"name\":\"f\",\"required\":false,\"type\":\"fixed[16]\",\"doc\":\"x\"},"
        "{\"id\":2,\"name\":\"d\",\"required\":false,\"type\":\"decimal(9, 3)\"},"
        "{\"id\":3,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":4,"
        "\"key\":\"int\",\"value-id\":5,\"value\":\"double\",\"value-required\":false}}]}";
    floe__schema *s = NULL;
    CHECK_EQ_INT(floe__schema_from_json(text, strlen(text), &s, NULL), FLOE_OK);
    if (!s)
        return;
    CHECK_EQ_INT(s->schema_id, 3);
    CHECK_EQ_INT(s->highest_id, 7);
    CHECK_EQ_INT(s->root.children[0].kind, FLOE_K_UUID);
    CHECK_EQ_INT(s->root.children[1].kind, FLOE_K_FIXED);
    CHECK_EQ_INT(s->root.children[1].length, 16);
    CHECK_EQ_INT(s->root.children[2].precision, 9);
    CHECK_EQ_INT(s->root.children[2].scale, 3);
    CHECK_EQ_INT(s->root.children[3].children[0].kind, FLOE_K_INT);
    CHECK(s->root.children[3].children[0].required);
    CHECK_EQ_INT(floe__schema_find_id(s, 5)->kind, FLOE_K_DOUBLE);

    floe__schema *copy = NULL;
    CHECK_EQ_INT(floe__schema_copy(s, &copy, NULL), FLOE_OK);
    char *a = to_json(s), *b = to_json(copy);
    CHECK_EQ_STR(a, b);
    floe_free(a);
    floe_free(b);
    floe_schema_free(copy);
    floe_schema_free(s);

    CHECK(from_json_fails("[1]", FLOE_EFORMAT, "\"type\": \"struct\""));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                          "\"required\":true,\"type\":\"int\"},{\"id\":1,\"name\":\"b\","
                          "\"required\":true,\"type\":\"int\"}]}",
                          FLOE_EFORMAT, "field id 1 is used twice"));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                          "\"required\":true,\"type\":\"timestamp_ns\"}]}",
                          FLOE_EUNSUPPORTED, "timestamp_ns"));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                          "\"required\":true,\"type\":\"decimal(40,2)\"}]}",
                          FLOE_EFORMAT, "decimal precision"));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":0,\"name\":\"a\","
                          "\"required\":true,\"type\":\"int\"}]}",
                          FLOE_EFORMAT, "positive \"id\""));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                          "\"type\":\"int\"}]}",
                          FLOE_EFORMAT, "\"required\""));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                          "\"required\":true,\"type\":{\"type\":\"list\",\"element-id\":2,"
                          "\"element\":\"int\"}}]}",
                          FLOE_EFORMAT, "element-required"));
    CHECK(from_json_fails("{not json", FLOE_EFORMAT, "invalid JSON"));
    CHECK(from_json_fails("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                          "\"required\":true,\"type\":\"int\"},{\"id\":2,\"name\":\"a\","
                          "\"required\":true,\"type\":\"int\"}]}",
                          FLOE_EFORMAT, "same name (field \"a\")"));
}

TEST(deep_iceberg_json_is_capped)
{
    /* 70 nested lists */
    char buf[8192];
    size_t n = 0;
    n += (size_t)sprintf(buf + n, "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                                  "\"required\":true,\"type\":");
    for (int i = 0; i < 70; i++)
        n += (size_t)sprintf(buf + n, "{\"type\":\"list\",\"element-id\":%d,"
                                      "\"element-required\":true,\"element\":", i + 2);
    n += (size_t)sprintf(buf + n, "\"int\"");
    for (int i = 0; i < 70; i++)
        buf[n++] = '}';
    n += (size_t)sprintf(buf + n, "}]}");
    CHECK(from_json_fails(buf, FLOE_EFORMAT, "nested too deeply"));
}

TEST(copy_and_type_name_truncation)
{
    floe_schema *s = parse_ok("a record(aaaaaaaaaa int, bbbbbbbbbbbb text, cccccccccc date)");
    CHECK(s != NULL);
    if (!s)
        return;
    char small[16];
    size_t need = floe__type_name(&s->root.children[0], false, small, sizeof small);
    CHECK_EQ_INT(need, strlen("struct<aaaaaaaaaa: int, bbbbbbbbbbbb: string, cccccccccc: date>"));
    CHECK_EQ_STR(small, "struct<aaaaa...");
    floe__field copy;
    CHECK_EQ_INT(floe__field_copy(&copy, &s->root, NULL), FLOE_OK);
    CHECK_EQ_INT(copy.n_children, 1);
    CHECK_EQ_STR(copy.children[0].children[1].name, "bbbbbbbbbbbb");
    CHECK(copy.children[0].children != s->root.children[0].children);
    floe__field_clear(&copy);
    CHECK(copy.children == NULL && copy.name == NULL);
    floe__field_clear(NULL);
    floe_schema_free(NULL);
    CHECK_EQ_INT(floe_schema_column_count(NULL), 0);
    floe_schema_free(s);
}

TEST(null_arguments)
{
    floe_schema *s = NULL;
    CHECK_EQ_INT(floe_schema_parse(NULL, &s, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe_schema_parse("a int", NULL, NULL), FLOE_EINVAL);
    char *j = NULL;
    CHECK_EQ_INT(floe_schema_to_json(NULL, &j, NULL), FLOE_EINVAL);
}

int main(void)
{
    RUN(every_scalar_type_and_alias);
    RUN(type_names_are_case_insensitive_and_blanks_flexible);
    RUN(nested_types);
    RUN(range_types);
    RUN(nullability);
    RUN(field_ids_depth_first_preorder);
    RUN(names);
    RUN(errors_name_column_and_reason);
    RUN(nesting_depth_is_capped);
    RUN(schema_json);
    RUN(schema_from_iceberg_json);
    RUN(deep_iceberg_json_is_capped);
    RUN(copy_and_type_name_truncation);
    RUN(null_arguments);
    return UNIT_DONE();
}
