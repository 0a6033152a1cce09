/* test_keymem.c - the upsert key memory: put, take, overwrite, growth. */
#include <stdio.h>

#include "sink/sink_internal.h"
#include "unit.h"

TEST(put_take_overwrite)
{
    floe__keymem *km = NULL;
    CHECK_EQ_INT(floe__keymem_new(&km, NULL), FLOE_OK);
    floe__keypos at = {3, 42}, got;
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"k1", 2, at, NULL), FLOE_OK);
    CHECK(!floe__keymem_take(km, (const uint8_t *)"k2", 2, &got));
    CHECK(!floe__keymem_take(km, (const uint8_t *)"k", 1, &got));        /* prefix */
    at.pos = 43;
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"k1", 2, at, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__keymem_count(km), 1);
    CHECK(floe__keymem_take(km, (const uint8_t *)"k1", 2, &got));
    CHECK(got.file == 3 && got.pos == 43);
    CHECK(!floe__keymem_take(km, (const uint8_t *)"k1", 2, &got));      /* taken */
    CHECK_EQ_INT(floe__keymem_count(km), 0);
    at.pos = 7;
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"k1", 2, at, NULL), FLOE_OK);
    CHECK(floe__keymem_take(km, (const uint8_t *)"k1", 2, &got) && got.pos == 7);
    CHECK_EQ_INT(floe__keymem_put(km, (const uint8_t *)"", 0, at, NULL), FLOE_OK);
    CHECK(floe__keymem_take(km, (const uint8_t *)"", 0, &got));
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
    RUN(put_take_overwrite);
    RUN(many_keys_and_memory_per_key);
    return UNIT_DONE();
}
