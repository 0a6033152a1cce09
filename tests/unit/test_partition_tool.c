/*
 * test_partition_tool.c - floe's partition transforms on values from
 * stdin, for tests/test_partition_transforms.py (which compares them with
 * pyiceberg's).  Without arguments it runs a short self-test.
 *
 *   test_partition_tool TYPE TRANSFORM < values
 *
 * TYPE is an Iceberg type ("long", "decimal(9,2)", "fixed[4]", ...),
 * TRANSFORM a metadata transform ("bucket[16]").  Each input line is one
 * JSON value in Iceberg's single-value form (null allowed); each output
 * line the result in the same form, except that int, long, date, time and
 * timestamp results are plain integers (days, microseconds).  A bad line prints "ERROR message".
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "iceberg/partition_internal.h"
#include "unit.h"

static floe__schema *schema_for(const char *type)
{
    char buf[512];
    bool quoted = type[0] != '{';
    snprintf(buf, sizeof buf, "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"c\","
             "\"required\":false,\"type\":%s%s%s}]}", quoted ? "\"" : "", type,
             quoted ? "\"" : "");
    floe__schema *s = NULL;
    floe_error *e = floe_error_new();
    if (floe__schema_from_json(buf, strlen(buf), &s, e) != FLOE_OK)
        fprintf(stderr, "bad type %s: %s\n", type, floe_error_message(e));
    floe_error_free(e);
    return s;
}

/* One value line: its result as text into out. */
static int one(const floe__field *f, const floe__transform *t, const floe__field *r,
               const char *line, floe__buf *out, floe_error *e)
{
    json_error_t je;
    json_t *v = json_loads(line, JSON_DECODE_ANY, &je);
    if (!v)
        return floe__err_set(e, FLOE_EINPUT, "bad JSON: %s", je.text);
    uint8_t *payload = NULL;
    uint32_t plen = 0;
    int rc = floe__default_from_json(f, v, NULL, 0, &payload, &plen, e);
    json_decref(v);
    floe__buf res;
    floe__buf_init(&res, 0);
    if (rc == FLOE_OK)
        rc = floe__transform_apply(t, f, payload, &res, e);
    if (rc == FLOE_OK && res.data[0] == FLOE_SLOT_NULL)
        rc = floe__buf_printf(out, e, "null");
    else if (rc == FLOE_OK && (r->kind == FLOE_K_INT || r->kind == FLOE_K_DATE))
        rc = floe__buf_printf(out, e, "%d", (int)(int32_t)floe__get_le32(res.data + 1));
    else if (rc == FLOE_OK && (r->kind == FLOE_K_LONG || r->kind == FLOE_K_TIME ||
                               r->kind == FLOE_K_TIMESTAMP || r->kind == FLOE_K_TIMESTAMPTZ))
        rc = floe__buf_printf(out, e, "%lld", (long long)(int64_t)floe__get_le64(res.data + 1));
    else if (rc == FLOE_OK) {
        json_t *j = floe__default_to_json(r, res.data + 1, (uint32_t)(res.len - 1));
        char *s = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        rc = s ? floe__buf_printf(out, e, "%s", s) : FLOE_OOM(e);
        free(s);
        json_decref(j);
    }
    floe__free(payload);
    floe__buf_free(&res);
    return rc;
}

static int run(const char *type, const char *transform, FILE *in, FILE *outf)
{
    floe__schema *s = schema_for(type);
    floe__transform t;
    floe__field r;
    floe_error *e = floe_error_new();
    if (!s || floe__transform_parse(transform, &t, e) != FLOE_OK ||
        floe__transform_result(&t, &s->root.children[0], &r, e) != FLOE_OK) {
        fprintf(stderr, "%s\n", floe_error_message(e));
        floe_error_free(e);
        floe_schema_free(s);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    floe__buf out;
    floe__buf_init(&out, 0);
    while (getline(&line, &cap, in) > 0) {
        floe__buf_reset(&out);
        if (one(&s->root.children[0], &t, &r, line, &out, e) != FLOE_OK)
            fprintf(outf, "ERROR %s\n", floe_error_message(e));
        else
            fprintf(outf, "%.*s\n", (int)out.len, (const char *)out.data);
    }
    free(line);
    floe__buf_free(&out);
    floe_error_free(e);
    floe_schema_free(s);
    return 0;
}

TEST(self_test)
{
    FILE *in = tmpfile(), *out = tmpfile();
    fputs("34\nnull\n", in);
    rewind(in);
    CHECK_EQ_INT(run("int", "bucket[2147483647]", in, out), 0);
    rewind(out);
    char buf[64] = {0};
    CHECK(fgets(buf, sizeof buf, out) && strcmp(buf, "2017239379\n") == 0);
    CHECK(fgets(buf, sizeof buf, out) && strcmp(buf, "null\n") == 0);
    fclose(in);
    fclose(out);
}

int main(int argc, char **argv)
{
    if (argc == 3)
        return run(argv[1], argv[2], stdin, stdout);
    RUN(self_test);
    return UNIT_DONE();
}
