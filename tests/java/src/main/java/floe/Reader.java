package floe;

import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Consumer;

import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.TypeUtil;

/**
 * Reads an Iceberg table through Iceberg's JdbcCatalog (or RESTCatalog, when
 * DB is an http(s):// URI; see {@link Catalogs}) and Iceberg's generic
 * readers (its scan planning, DeleteFilter and file readers, as
 * IcebergGenerics uses them; see Engine.liveRows) and prints what it finds as
 * JSON lines with tagged values, for floe's Python tests to compare.
 *
 * Usage:
 *   Reader read DB WAREHOUSE CATALOG NS.TABLE [SNAPSHOT_ID]   one JSON array per row
 *   Reader snapshots DB WAREHOUSE CATALOG NS.TABLE            one JSON object per snapshot
 *   Reader schema DB WAREHOUSE CATALOG NS.TABLE               the table schema (Iceberg JSON)
 *   Reader read-snapshots DB WAREHOUSE CATALOG NS.TABLE       per snapshot: its summary and rows
 *   Reader lineage DB WAREHOUSE CATALOG NS.TABLE              per live row: [its columns,
 *                                                             _row_id, _last_updated_sequence_number]
 *                                                             (v3 row lineage, as Java resolves it)
 *   Reader count DB WAREHOUSE CATALOG NS.TABLE [ROUNDS]       bench/: rows, sum of the first column
 *                                                             and the time to read them (cold, and
 *                                                             the best warm read of ROUNDS)
 *   Reader replace DB WAREHOUSE CATALOG NS.TABLE              rewrite one data file as a copy of
 *                                                             itself (a `replace` snapshot, as
 *                                                             compaction makes)
 */
public final class Reader {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        int status = run(args, Catalogs.envProps(), out, err);
        System.err.print(err);
        if (status != 0) System.exit(status);
        System.out.print(out);
    }

    /**
     * One Reader command line, with `props` as the extra catalog properties:
     * returns the exit status, the output in `out` and messages in `err`.
     * Failures are thrown (main lets them end the JVM with status 1).
     */
    static int run(String[] args, Map<String, String> props, StringBuilder out, StringBuilder err)
            throws Exception {
        if (args.length < 5) {
            err.append("usage: Reader read|snapshots|schema DB WAREHOUSE CATALOG NS.TABLE [SNAPSHOT]\n");
            return 2;
        }
        switch (args[0]) {
            case "read": case "snapshots": case "read-snapshots": case "replace": case "schema":
            case "count": case "lineage": case "partitions":
                break;
            default:
                err.append("unknown mode ").append(args[0]).append('\n');
                return 2;
        }
        Catalog catalog = Catalogs.open(args[1], args[2], args[3], props);
        try {
            Table table = catalog.loadTable(TableIdentifier.parse(args[4]));
            switch (args[0]) {
                case "read": {
                    TableScan scan = table.newScan();
                    if (args.length > 5) scan = scan.useSnapshot(Long.parseLong(args[5]));
                    int n = table.schema().columns().size();
                    read(table, scan, r -> {
                        row(out, r, n);
                        out.append('\n');
                    });
                    break;
                }
                case "partitions": {
                    /* each planned data file's spec id and partition values; with
                       COLUMN VALUE, the scan filters column = VALUE (a long) first; with
                       COLUMN LO HI, LO <= column < HI (literals as Iceberg converts text,
                       e.g. timestamps) */
                    org.apache.iceberg.TableScan scan = table.newScan();
                    if (args.length > 7)
                        scan = scan.filter(org.apache.iceberg.expressions.Expressions.and(
                            org.apache.iceberg.expressions.Expressions.greaterThanOrEqual(
                                args[5], args[6]),
                            org.apache.iceberg.expressions.Expressions.lessThan(args[5], args[7])));
                    else if (args.length > 6)
                        scan = scan.filter(org.apache.iceberg.expressions.Expressions.equal(
                            args[5], Long.parseLong(args[6])));
                    try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = scan.planFiles()) {
                        for (org.apache.iceberg.FileScanTask task : tasks) {
                            org.apache.iceberg.DataFile f = task.file();
                            out.append("{\"path\":");
                            string(out, f.location());
                            out.append(",\"spec\":").append(f.specId()).append(",\"partition\":[");
                            for (int i = 0; i < f.partition().size(); i++) {
                                if (i > 0) out.append(',');
                                value(out, f.partition().get(i, Object.class));
                            }
                            out.append("]}\n");
                        }
                    }
                    break;
                }
                case "lineage": {
                    int n = table.schema().columns().size();
                    Schema proj = TypeUtil.join(table.schema(), new Schema(
                        MetadataColumns.ROW_ID, MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER));
                    try (CloseableIterable<Record> rows =
                             IcebergGenerics.read(table).project(proj).build()) {
                        for (Record r : rows) {
                            out.append('[');
                            row(out, r, n);
                            out.append(',');
                            value(out, r.getField(MetadataColumns.ROW_ID.name()));
                            out.append(',');
                            value(out, r.getField(MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER.name()));
                            out.append("]\n");
                        }
                    }
                    break;
                }
                case "count": {
                    /* bench/: rows and the sum of the first (long) column, timed in the JVM;
                       with ROUNDS > 1 the table is read that many times in this JVM: "ms" is
                       the first (cold) read, "warm_ms" the best of the others */
                    int rounds = args.length > 5 ? Integer.parseInt(args[5]) : 1;
                    long n = 0, sum = 0, first = 0, warm = Long.MAX_VALUE;
                    for (int i = 0; i < rounds; i++) {
                        long t0 = System.nanoTime();
                        n = 0;
                        sum = 0;
                        try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
                            for (Record r : rows) {
                                n++;
                                Object v = r.get(0);
                                if (v instanceof Number) sum += ((Number) v).longValue();
                            }
                        }
                        long ns = System.nanoTime() - t0;
                        if (i == 0) first = ns;
                        else warm = Math.min(warm, ns);
                    }
                    Runtime rt = Runtime.getRuntime();
                    out.append("{\"rows\":").append(n).append(",\"sum\":").append(sum)
                       .append(",\"ms\":").append(first / 1e6);
                    if (rounds > 1) out.append(",\"warm_ms\":").append(warm / 1e6);
                    out.append(",\"heap_mb\":")
                       .append((rt.totalMemory() - rt.freeMemory()) >> 20).append("}\n");
                    break;
                }
                case "snapshots":
                    for (Snapshot s : table.snapshots()) {
                        out.append("{\"snapshot-id\":").append(s.snapshotId())
                           .append(",\"sequence-number\":").append(s.sequenceNumber())
                           .append(",\"operation\":");
                        string(out, String.valueOf(s.operation()));
                        out.append(",\"summary\":");
                        summary(out, s);
                        out.append("}\n");
                    }
                    break;
                case "read-snapshots":
                    /* each snapshot in the schema it names (time travel reads it so) */
                    for (Snapshot s : table.snapshots()) {
                        Schema schema = s.schemaId() != null && table.schemas().containsKey(s.schemaId())
                            ? table.schemas().get(s.schemaId()) : table.schema();
                        out.append("{\"snapshot-id\":").append(s.snapshotId()).append(",\"summary\":");
                        summary(out, s);
                        out.append(",\"columns\":[");
                        for (int i = 0; i < schema.columns().size(); i++) {
                            if (i > 0) out.append(',');
                            string(out, schema.columns().get(i).name());
                        }
                        out.append("],\"rows\":[");
                        boolean[] any = {false};
                        read(table, table.newScan().useSnapshot(s.snapshotId()), r -> {
                            if (any[0]) out.append(',');
                            any[0] = true;
                            row(out, r, schema.columns().size());
                        });
                        out.append("]}\n");
                    }
                    break;
                case "replace":
                    replaceOneFile(table);
                    break;
                case "schema":
                    out.append(org.apache.iceberg.SchemaParser.toJson(table.schema())).append('\n');
                    break;
                default:
                    throw new AssertionError(args[0]);
            }
        } finally {
            Catalogs.close(catalog);
        }
        return 0;
    }

    /** A scan's live rows, one data file after another (Engine.liveRows). */
    private static void read(Table table, TableScan scan, Consumer<Record> each)
            throws java.io.IOException {
        Map<String, Object> loaded = new HashMap<>();     /* the scan's delete files */
        try (CloseableIterable<FileScanTask> tasks = scan.planFiles()) {
            for (FileScanTask task : tasks) {
                try (CloseableIterable<Record> rows = Engine.liveRows(table, task, scan.schema(), loaded)) {
                    for (Record r : rows) each.accept(r);
                }
            }
        }
    }

    /** A top-level row: only the table's columns (readers may add _pos etc.). */
    private static void row(StringBuilder out, Record r, int columns) {
        out.append("{\"rec\":[");
        for (int i = 0; i < columns; i++) {
            if (i > 0) out.append(',');
            value(out, r.get(i));
        }
        out.append("]}");
    }

    private static void summary(StringBuilder out, Snapshot s) {
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, String> e : s.summary().entrySet()) {
            if (!first) out.append(',');
            first = false;
            string(out, e.getKey());
            out.append(':');
            string(out, e.getValue());
        }
        out.append('}');
    }

    /** A compaction that changes nothing: one data file replaced by a byte copy. */
    private static void replaceOneFile(Table table) throws Exception {
        org.apache.iceberg.DataFile old = null;
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = table.newScan().planFiles()) {
            for (org.apache.iceberg.FileScanTask t : tasks) {
                if (t.deletes().isEmpty()) {
                    old = t.file();
                    break;
                }
            }
        }
        if (old == null) throw new IllegalStateException("no data file without deletes to replace");
        String oldPath = old.location();
        String newPath = oldPath.replace(".parquet", "-compacted.parquet");
        try (java.io.InputStream in = table.io().newInputFile(oldPath).newStream();
             java.io.OutputStream o = table.io().newOutputFile(newPath).create()) {
            in.transferTo(o);
        }
        org.apache.iceberg.DataFile copy = org.apache.iceberg.DataFiles.builder(table.spec())
            .copy(old).withPath(newPath).build();
        table.newRewrite().rewriteFiles(java.util.Set.of(old), java.util.Set.of(copy)).commit();
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        out.append('"');
    }

    private static void tagged(StringBuilder out, String tag, String v) {
        out.append("{\"").append(tag).append("\":");
        string(out, v);
        out.append('}');
    }

    private static void value(StringBuilder out, Object v) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof Record) {
            Record r = (Record) v;
            out.append("{\"rec\":[");
            for (int i = 0; i < r.size(); i++) {
                if (i > 0) out.append(',');
                value(out, r.get(i));
            }
            out.append("]}");
        } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
            out.append(v);
        } else if (v instanceof Float) {
            tagged(out, "f32", String.format("%08x", Float.floatToRawIntBits((Float) v)));
        } else if (v instanceof Double) {
            tagged(out, "f64", String.format("%016x", Double.doubleToRawLongBits((Double) v)));
        } else if (v instanceof java.math.BigDecimal) {
            tagged(out, "dec", ((java.math.BigDecimal) v).unscaledValue().toString());
        } else if (v instanceof CharSequence || v instanceof UUID) {
            string(out, v.toString());
        } else if (v instanceof ByteBuffer) {
            ByteBuffer b = ((ByteBuffer) v).duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            tagged(out, "bin", Base64.getEncoder().encodeToString(bytes));
        } else if (v instanceof byte[]) {
            tagged(out, "bin", Base64.getEncoder().encodeToString((byte[]) v));
        } else if (v instanceof LocalDate) {
            out.append("{\"date\":").append(((LocalDate) v).toEpochDay()).append('}');
        } else if (v instanceof LocalTime) {
            out.append("{\"time\":").append(((LocalTime) v).toNanoOfDay() / 1000).append('}');
        } else if (v instanceof LocalDateTime) {
            LocalDateTime t = (LocalDateTime) v;
            out.append("{\"ts\":").append(ChronoUnit.MICROS.between(
                LocalDateTime.of(1970, 1, 1, 0, 0), t)).append('}');
        } else if (v instanceof OffsetDateTime) {
            OffsetDateTime t = (OffsetDateTime) v;
            out.append("{\"tstz\":").append(ChronoUnit.MICROS.between(
                OffsetDateTime.of(1970, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC), t)).append('}');
        } else if (v instanceof List) {
            out.append('[');
            boolean first = true;
            for (Object o : (List<?>) v) {
                if (!first) out.append(',');
                first = false;
                value(out, o);
            }
            out.append(']');
        } else if (v instanceof Map) {
            out.append("{\"map\":[");
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) out.append(',');
                first = false;
                out.append('[');
                value(out, e.getKey());
                out.append(',');
                value(out, e.getValue());
                out.append(']');
            }
            out.append("]}");
        } else {
            tagged(out, "unknown:" + v.getClass().getName(), v.toString());
        }
    }
}
