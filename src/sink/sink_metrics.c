/*
 * sink_metrics.c - the sink's metrics in the Prometheus text format
 * (floe_sink_metrics, and floe__sinks_metrics for several sinks at once:
 * each metric's HELP and TYPE once, a sample per sink).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink/sink_state_internal.h"

/* A label value with \, " and newlines escaped (Prometheus text format). */
static int escaped_label(floe__buf *b, const char *v, floe_error *err)
{
    for (; *v; v++) {
        const char *e = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
        FLOE_FORWARD(e ? floe__buf_append(b, e, 2, err) : floe__buf_putc(b, (uint8_t)*v, err));
    }
    return FLOE_OK;
}

static int sample(floe__buf *b, const char *name, const char *label, double v, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, "%s{sink=\"", name));
    FLOE_FORWARD(escaped_label(b, label, err));
    if (isnan(v))                        /* Prometheus spells it NaN */
        return floe__buf_printf(b, err, "\"} NaN\n");
    return floe__buf_printf(b, err, "\"} %.17g\n", v);
}

typedef struct metric_def {
    const char *name, *type, *help;
} metric_def;

static const metric_def METRICS[] = {
    {"floe_snapshots_committed_total", "counter", "Snapshots committed."},
    {"floe_data_files_written_total", "counter", "Data files committed."},
    {"floe_delete_files_written_total", "counter", "Delete files and deletion vectors committed."},
    {"floe_stashed_rows", "gauge", "Updates waiting for the frontier."},
    {"floe_commit_failures_total", "counter", "Commit attempts that failed."},
    {"floe_commit_conflicts_total", "counter", "Commit attempts that hit a conflict."},
    {"floe_commit_lost_responses_total", "counter", "Commits found to have landed after an unknown outcome."},
    {"floe_messages_staged_total", "counter", "Updates received."},
    {"floe_bytes_staged_total", "counter", "Row bytes received."},
    {"floe_messages_committed_total", "counter", "Data rows committed."},
    {"floe_bytes_committed_total", "counter", "File bytes committed."},
    {"floe_primary_key_violations_total", "counter", "Insertions of a key that was live (within a time or across them)."},
    {"floe_input_frontier", "gauge", "The input frontier (-1 once the input is closed)."},
    {"floe_committed_frontier", "gauge", "The last committed frontier (-1: closed input; NaN: nothing committed yet)."},
    {"floe_freshness_seconds", "gauge", "Seconds since the oldest input no commit covers yet arrived (0: all committed)."},
    {"floe_batches_skipped_total", "counter", "Batches an earlier run of this sink had committed already."},
    {"floe_index_keys", "gauge", "Live rows in the key index (position mode)."},
    {"floe_index_memory_bytes", "gauge", "The key index's memory tier."},
    {"floe_index_disk_bytes", "gauge", "The key index's disk tier."},
    {"floe_index_rebuilds_total", "counter", "Full reads of the table's files into the key index."},
    {"floe_index_snapshots_synced_total", "counter", "Snapshots of other writers read into the key index."},
    {"floe_index_rows_read_total", "counter", "Rows the key index read back from data files."},
    {"floe_index_rows_moved_total", "counter", "Rows the key index re-pointed after the sink's own compactions and copy-on-write commits, without reading."},
    {"floe_deletes_retargeted_total", "counter", "Position deletes moved onto files a compaction wrote."},
    {"floe_retractions_missing_total", "counter", "Retractions of a key with no live row."},
    {"floe_retractions_mismatched_total", "counter", "Retractions whose row differs from the key's live row."},
    {"floe_maintenance_runs_total", "counter", "Table maintenance rounds (--maintain auto)."},
    {"floe_maintenance_failures_total", "counter", "Table maintenance rounds that failed."},
    {"floe_maintenance_seconds_total", "counter", "Time table maintenance took."},
    {"floe_maintenance_compactions_total", "counter", "Compaction groups committed."},
    {"floe_maintenance_files_compacted_total", "counter", "Data files compaction rewrote."},
    {"floe_maintenance_deletes_carried_total", "counter", "Rows deleted while compaction ran, deleted from its new files."},
    {"floe_maintenance_snapshots_expired_total", "counter", "Snapshots expired."},
    {"floe_maintenance_files_removed_total", "counter", "Files deleted by expiry and orphan removal."},
    {"floe_maintenance_bytes_removed_total", "counter", "Bytes of the files deleted by maintenance."},
    {"floe_maintenance_orphans_removed_total", "counter", "Orphan files deleted."},
    {"floe_table_data_files", "gauge", "Live data files (NaN before maintenance first looked)."},
    {"floe_table_small_data_files", "gauge", "Live data files below 75% of the target file size."},
    {"floe_table_old_spec_data_files", "gauge", "Live data files of an older partition spec."},
    {"floe_table_delete_files", "gauge", "Live delete files (each DV counts one)."},
    {"floe_table_deletion_vectors", "gauge", "Live deletion vectors."},
    {"floe_table_equality_delete_files", "gauge", "Live equality delete files."},
    {"floe_table_deleted_rows_ratio", "gauge", "Rows position deletes and DVs delete, over data rows."},
    {"floe_table_manifests", "gauge", "Manifests in the current manifest list."},
    {"floe_table_snapshots", "gauge", "Snapshots in the table metadata."},
    {"floe_table_oldest_snapshot_age_seconds", "gauge", "Age of the oldest snapshot."},
    {"floe_table_metadata_bytes", "gauge", "Size of the current metadata file."},
    {"floe_rewritten_files_total", "counter", "Data files copy-on-write commits rewrote."},
    {"floe_rewritten_rows_total", "counter", "Rows the files copy-on-write commits wrote hold."},
    {"floe_rewrites_reused_total", "counter", "Files' copy-on-write rewrites taken over by the attempt after a conflict."},
};
#define N_METRICS (sizeof METRICS / sizeof METRICS[0])

/* What one sink's metrics are read from. */
typedef struct {
    floe_sink_stats st;
    floe_table_debt debt;
    int debt_known;
} figures;

/* The values of METRICS, in its order. */
static void metric_values(const figures *f, double v[N_METRICS])
{
    const floe_sink_stats *st = &f->st;
    double committed = !st->has_committed_frontier ? NAN
                       : st->committed_frontier_empty ? -1.0 : (double)st->committed_frontier;
    const floe_table_debt *d = &f->debt;
    double unknown = f->debt_known ? 0 : NAN;      /* before maintenance first looked */
    double all[] = {
        (double)st->snapshots_committed, (double)st->data_files, (double)st->delete_files,
        (double)st->updates_stashed, (double)st->commit_failures, (double)st->commit_conflicts,
        (double)st->lost_responses, (double)st->updates_in, (double)st->bytes_in,
        (double)st->rows_committed, (double)st->bytes_committed, (double)st->pk_violations,
        st->input_frontier_empty ? -1.0 : (double)st->input_frontier, committed,
        st->freshness_seconds, (double)st->batches_skipped, (double)st->index_keys,
        (double)st->index_memory_bytes, (double)st->index_disk_bytes,
        (double)st->index_rebuilds, (double)st->index_snapshots_synced,
        (double)st->index_rows_read, (double)st->index_rows_moved, (double)st->deletes_retargeted, (double)st->retractions_missing,
        (double)st->retractions_mismatched, (double)st->maintenance_runs,
        (double)st->maintenance_failures, st->maintenance_us / 1e6, (double)st->compactions,
        (double)st->files_compacted, (double)st->deletes_carried,
        (double)st->snapshots_expired, (double)st->files_removed, (double)st->bytes_removed,
        (double)st->orphans_removed,
        d->data_files + unknown, d->small_data_files + unknown,
        d->old_spec_data_files + unknown, d->delete_files + unknown,
        d->deletion_vectors + unknown, d->equality_delete_files + unknown,
        d->deleted_ratio + unknown, d->data_manifests + d->delete_manifests + unknown,
        d->snapshots + unknown, d->oldest_snapshot_age_ms / 1e3 + unknown,
        d->metadata_bytes + unknown, (double)st->files_rewritten, (double)st->rows_rewritten,
        (double)st->rewrites_reused,
    };
    _Static_assert(sizeof all / sizeof all[0] == N_METRICS, "a value per metric");
    memcpy(v, all, sizeof all);
}

static int quantile(floe__buf *b, const char *name, const char *sink, const char *q, double v,
                    floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, "%s{sink=\"", name));
    FLOE_FORWARD(escaped_label(b, sink, err));
    return floe__buf_printf(b, err, "\",quantile=\"%s\"} %.9g\n", q, v);
}

/* A summary, NAME_sum and NAME_count per sink; the commit durations also
 * with their p50 and p99 over the last FLOE__COMMIT_WINDOW commits. */
static int summaries(floe__buf *b, const char *name, const char *help,
                     const floe_sink *const *sinks, const figures *f, size_t n,
                     bool close, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, "# HELP %s %s\n# TYPE %s summary\n", name, help, name));
    char sum[96], count[96];
    snprintf(sum, sizeof sum, "%s_sum", name);
    snprintf(count, sizeof count, "%s_count", name);
    for (size_t i = 0; i < n; i++) {
        const floe_sink_stats *st = &f[i].st;
        double us = (double)(close ? st->close_seconds_total_us : st->commit_seconds_total_us);
        double k = (double)(close ? st->batches_sealed : st->snapshots_committed);
        if (!close && k > 0) {
            FLOE_FORWARD(quantile(b, name, sinks[i]->sink_id, "0.5", st->commit_p50_us / 1e6,
                                  err));
            FLOE_FORWARD(quantile(b, name, sinks[i]->sink_id, "0.99", st->commit_p99_us / 1e6,
                                  err));
        }
        FLOE_FORWARD(sample(b, sum, sinks[i]->sink_id, us / 1e6, err));
        FLOE_FORWARD(sample(b, count, sinks[i]->sink_id, k, err));
    }
    return FLOE_OK;
}

static int sinks_metrics(const floe_sink *const *sinks, size_t n, figures *st,
                         floe__buf *b, floe_error *err)
{
    for (size_t i = 0; i < n; i++) {
        floe_sink_stats_get(sinks[i], &st[i].st, sizeof st[i].st);
        st[i].debt_known = floe_sink_debt_get(sinks[i], &st[i].debt, sizeof st[i].debt);
    }
    FLOE_FORWARD(summaries(b, "floe_commit_duration_seconds", "Time spent committing a batch "
                           "(quantiles over the last 100 commits).", sinks, st, n, false, err));
    FLOE_FORWARD(summaries(b, "floe_close_duration_seconds", "Time spent closing a batch's files.",
                           sinks, st, n, true, err));
    for (size_t m = 0; m < N_METRICS; m++) {
        FLOE_FORWARD(floe__buf_printf(b, err, "# HELP %s %s\n# TYPE %s %s\n", METRICS[m].name,
                                      METRICS[m].help, METRICS[m].name, METRICS[m].type));
        for (size_t i = 0; i < n; i++) {
            double v[N_METRICS];
            metric_values(&st[i], v);
            FLOE_FORWARD(sample(b, METRICS[m].name, sinks[i]->sink_id, v[m], err));
        }
    }
    return FLOE_OK;
}

int floe__sinks_metrics(const floe_sink *const *sinks, size_t n, floe__buf *out,
                        floe_error *err)
{
    figures *st = floe__calloc(n ? n : 1, sizeof *st);
    if (!st)
        return FLOE_OOM(err);
    int rc = sinks_metrics(sinks, n, st, out, err);
    floe__free(st);
    return rc;
}

int floe_sink_metrics(const floe_sink *sink, char **out, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, (size_t)1 << 24);
    int rc = floe__sinks_metrics(&sink, 1, &b, err);
    if (rc == FLOE_OK && !(*out = floe__buf_strdup(&b)))
        rc = FLOE_OOM(err);
    floe__buf_free(&b);
    return rc;
}
