/*
 * fuzz_dv_read.c - the deletion vector and Puffin readers
 * (iceberg/puffin.c, iceberg/roaring.c) on untrusted bytes: the input is
 * tried as one DV blob, as a bare portable Roaring bitmap, and as a whole
 * Puffin file (footer, then every blob it lists as a DV).  Whatever is
 * accepted is re-encoded and must decode to the same positions.
 */
#include <stdint.h>
#include <stdlib.h>

#include "iceberg/puffin_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const floe__posbitmap *b)
{
    floe__buf s;
    floe__buf_init(&s, 0);
    floe__posbitmap back = {0};
    if (floe__dv_encode(b, &s, NULL) == FLOE_OK) {
        if (floe__dv_decode(s.data, s.len, &back, NULL) != FLOE_OK ||
            floe__posbitmap_count(&back) != floe__posbitmap_count(b))
            abort();                                 /* check-src: allow (fuzz oracle) */
        floe__posbitmap_iter x = {b, 0, 0, 0}, y = {&back, 0, 0, 0};
        uint64_t p, q;
        while (floe__posbitmap_next(&x, &p))
            if (!floe__posbitmap_next(&y, &q) || p != q || !floe__posbitmap_contains(b, p))
                abort();                             /* check-src: allow (fuzz oracle) */
    }
    floe__posbitmap_clear(&back);
    floe__buf_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    floe__posbitmap b = {0};
    if (floe__dv_decode(data, size, &b, NULL) == FLOE_OK)
        round_trip(&b);
    floe__posbitmap_clear(&b);
    size_t used;
    if (floe__posbitmap_deserialize(data, size, &b, &used, NULL) == FLOE_OK)
        round_trip(&b);
    floe__posbitmap_clear(&b);
    floe__puffin_footer f;
    if (floe__puffin_footer_parse(data, size, &f, NULL) == FLOE_OK) {
        for (size_t i = 0; i < f.n; i++) {
            if (floe__dv_read_at(data, size, f.blobs[i].offset, f.blobs[i].length,
                                 f.blobs[i].has_cardinality ? f.blobs[i].cardinality : -1, &b,
                                 NULL) == FLOE_OK)
                round_trip(&b);
            floe__posbitmap_clear(&b);
        }
        floe__puffin_footer_clear(&f);
    }
    return 0;
}
