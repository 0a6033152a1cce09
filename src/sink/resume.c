/*
 * resume.c - where a sink starts (SPEC.md section 5.1-5.3): from what the
 * table records for its sink id, from a frontier the user gives
 * (--resume-from), or fresh.  Every case that could lose or double rows is
 * refused with a message that says what happened and how to go on:
 *
 *   this sink's progress found on main        resume there (fenced when a
 *                                             newer version wrote it)
 *   none, and main holds no rows              fresh start
 *   none, main holds rows (others' or a       refused unless --new-sink
 *     rollback took all of ours away)
 *   main's history cut by expiry before any   refused unless --resume-from
 *     snapshot of this sink                   (or, with no tag of ours and
 *                                             --new-sink, a fresh start)
 */
#include <inttypes.h>
#include <stdio.h>

#include "sink/sink_internal.h"

static int fenced(const floe__resume_ask *a, uint64_t version, floe__frontier f,
                  floe_error *err)
{
    char t[32];
    floe__frontier_format(f, t, sizeof t);
    return floe__err_set(err, FLOE_EFENCED,
                         "fenced: %s was written by sink '%s' version %" PRIu64 " (frontier %s); "
                         "this sink is version %" PRIu64, a->table, a->sink_id, version, t,
                         a->version);
}

static int known_ids(const floe__metadata *md, char *out, size_t n)
{
    floe__buf b;
    floe__buf_init(&b, n - 1);
    int rc = floe__progress_known_ids(md, &b, NULL);
    snprintf(out, n, "%.*s", (int)b.len, b.len ? (const char *)b.data : "none");
    floe__buf_free(&b);
    return rc;
}

/* Main holds rows, but no snapshot on its (whole) history is this sink's. */
static int refuse_none(const floe__resume_ask *a, const floe__metadata *md,
                       const floe__progress *p, floe_error *err)
{
    char ids[512], why[200] = "";
    known_ids(md, ids, sizeof ids);
    if (p->tag_has_progress)
        snprintf(why, sizeof why, "; its tag %s%s points at snapshot %" PRId64 ", which is no "
                 "longer on main's history (a rollback took all of its commits away)",
                 FLOE_PROGRESS_TAG_PREFIX, a->sink_id, p->tag_snapshot_id);
    return floe__err_set(err, FLOE_ESTATE,
                         "%s holds rows, but sink '%s' has no snapshot on main's history%s "
                         "(sink ids the table knows: %s).  Starting it from scratch could "
                         "duplicate rows: pass --new-sink to start this sink on the existing "
                         "table, --sink-id to resume one of those, or --resume-from FRONTIER",
                         a->table, a->sink_id, why, ids);
}

/* Main's history is cut before any snapshot of this sink. */
static int refuse_unknown(const floe__resume_ask *a, const floe__progress *p, floe_error *err)
{
    char tag[300] = "";
    if (p->tag_has_progress) {
        char f[32];
        floe__frontier_format(p->tag_frontier, f, sizeof f);
        snprintf(tag, sizeof tag, "; its tag %s%s points at snapshot %" PRId64 " (frontier %s), "
                 "but whether that snapshot is still on main's history cannot be told: if main "
                 "was not rolled back past it, pass --resume-from '%s'",
                 FLOE_PROGRESS_TAG_PREFIX, a->sink_id, p->tag_snapshot_id, f, f);
    }
    return floe__err_set(err, FLOE_ESTATE,
                         "the progress of sink '%s' in %s cannot be recovered: main's history "
                         "is cut at snapshot %" PRId64 " (its parent %" PRId64 " was expired and no "
                         "metadata file in the metadata-log has it) before any snapshot of this "
                         "sink%s.  Pass --resume-from FRONTIER to resume explicitly%s",
                         a->sink_id, a->table, p->cut_at, p->missing, tag,
                         p->has_tag ? "" : ", or --new-sink if this sink never wrote here");
}

static int from_table(const floe__resume_ask *a, const floe__progress *p, floe__resume *out,
                      floe_error *err)
{
    if (a->has_resume_from && floe__frontier_cmp(a->resume_from, p->frontier) != 0) {
        char have[32], want[32];
        floe__frontier_format(p->frontier, have, sizeof have);
        floe__frontier_format(a->resume_from, want, sizeof want);
        return floe__err_set(err, FLOE_EINVAL,
                             "--resume-from %s, but %s records frontier %s for sink '%s' "
                             "(snapshot %" PRId64 "): drop --resume-from", want, a->table, have,
                             a->sink_id, p->snapshot_id);
    }
    out->has = true;
    out->frontier = p->frontier;
    out->snapshot_id = p->snapshot_id;
    return FLOE_OK;
}

int floe__resume_decide(const floe__resume_ask *a, const floe__metadata *md, floe__fileio *io,
                        floe__resume *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    out->snapshot_id = -1;
    floe__progress p;
    FLOE_FORWARD(floe__progress_read(md, io, a->sink_id, &p, err));
    if (p.tag_has_progress && p.tag_version > a->version)
        return fenced(a, p.tag_version, p.tag_frontier, err);
    if (p.state == FLOE__PROGRESS_FOUND) {
        if (p.sink_version > a->version)
            return fenced(a, p.sink_version, p.frontier, err);
        return from_table(a, &p, out, err);
    }
    if (a->has_resume_from) {
        out->has = true;
        out->frontier = a->resume_from;
        return FLOE_OK;
    }
    bool holds = floe__table_holds_rows(md);
    if (p.state == FLOE__PROGRESS_UNKNOWN && (p.has_tag || (holds && !a->new_sink)))
        return refuse_unknown(a, &p, err);
    if (p.state == FLOE__PROGRESS_NONE && holds && !a->new_sink)
        return refuse_none(a, md, &p, err);
    return FLOE_OK;                                /* fresh */
}
