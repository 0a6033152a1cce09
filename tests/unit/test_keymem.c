/* test_keymem.c - the upsert key memory: a multiset of positions per key, growth. */
#include <stdio.h>

#include "sink/sink_internal.h"
#include "unit.h"

TEST(put_take_multiset)
{
    floe__keymem *km = NULL;
    CHECK_EQ_INT(floe__keymem_new(&km, NULL), FLOE_OK);
    floe__keypos at = {3, 42}, got;
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"k1", 2, at, NULL), FLOE_OK);
    CHECK(!floe__keymem_take(km, (const uint8_t *)"k2", 2, &got));
    CHECK(!floe__keymem_take(km, (const uint8_t *)"k", 1, &got));        /* prefix */
    at.pos = 43;                                      /* a second row of the same key */
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"k1", 2, at, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__keymem_count(km), 2);
    uint64_t seen = 0;
    CHECK(floe__keymem_take(km, (const uint8_t *)"k1", 2, &got));
    seen += got.pos;
    CHECK(floe__keymem_take(km, (const uint8_t *)"k1", 2, &got));
    seen += got.pos;
    CHECK(seen == 42 + 43 && got.file == 3);                  /* each once */
    CHECK(!floe__keymem_take(km, (const uint8_t *)"k1", 2, &got));      /* all taken */
    CHECK_EQ_INT(floe__keymem_count(km), 0);
    at.pos = 7;                                       /* revives a dead slot */
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"k1", 2, at, NULL), FLOE_OK);
    CHECK(floe__keymem_take(km, (const uint8_t *)"k1", 2, &got) && got.pos == 7);
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"", 0, at, NULL), FLOE_OK);
    CHECK(floe__keymem_take(km, (const uint8_t *)"", 0, &got));
    floe__keymem_free(km);
}

/* Many copies of a few keys, interleaved, across table growth. */
TEST(duplicates_survive_growth)
{
    floe__keymem *km = NULL;
    CHECK_EQ_INT(floe__keymem_new(&km, NULL), FLOE_OK);
    for (uint32_t i = 0; i < 5000; i++) {
        char key[8];
        snprintf(key, sizeof key, "d%u", i % 7);
        floe__keypos at = {0, i};
        CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)key, strlen(key), at, NULL), FLOE_OK);
    }
    size_t taken = 0;
    floe__keypos got;
    while (floe__keymem_take(km, (const uint8_t *)"d3", 2, &got)) {
        CHECK(got.pos % 7 == 3);
        taken++;
    }
    CHECK_EQ_INT(taken, 714);
    CHECK_EQ_INT(floe__keymem_count(km), 5000 - 714);
    floe__keymem_free(km);
}

TEST(many_keys_and_memory_per_key)
{
    floe__keymem *km = NULL;
    CHECK_EQ_INT(floe__keymem_new(&km, NULL), FLOE_OK);
    const uint32_t n = 200000;
    char key[16];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key%08u", i);            /* 11 bytes */
        floe__keypos at = {i % 5, i};
        CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)key, 11, at, NULL), FLOE_OK);
    }
    CHECK_EQ_INT(floe__keymem_count(km), n);
    /* At most 64 bytes plus the key's 11 per key (allocation slack included). */
    CHECK(floe__keymem_bytes(km) <= (size_t)n * (64 + 11));
    for (uint32_t i = 0; i < n; i += 7) {
        snprintf(key, sizeof key, "key%08u", i);
        floe__keypos got;
        CHECK(floe__keymem_take(km, (const uint8_t *)key, 11, &got));
        CHECK(got.pos == i && got.file == i % 5);
    }
    floe__keymem_free(km);
}

int main(void)
{
    RUN(put_take_multiset);
    RUN(duplicates_survive_growth);
    RUN(many_keys_and_memory_per_key);
    return UNIT_DONE();
}
