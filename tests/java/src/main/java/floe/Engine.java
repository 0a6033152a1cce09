package floe;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.OverwriteFiles;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionStatisticsFile;
import org.apache.iceberg.PendingUpdate;
import org.apache.iceberg.ReachableFileUtil;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.RewriteManifests;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.DeleteLoader;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.formats.FormatModelRegistry;
import org.apache.iceberg.formats.ReadBuilder;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DeleteSchemaUtil;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.RollingDataWriter;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.iceberg.util.PartitionUtil;
import org.apache.iceberg.util.PropertyUtil;
import org.apache.iceberg.util.SnapshotUtil;
import org.apache.iceberg.util.StructLikeMap;

/**
 * What other engines do to floe's tables, done with Iceberg's own Java API
 * (no Spark): compaction, snapshot expiry, rollback, foreign appends (also to
 * branches), merge-on-read and copy-on-write deletes, manifest and position
 * delete rewrites, orphan file removal, property changes.  Each subcommand
 * commits one real Iceberg operation on the table and prints one JSON line
 * saying what it did.
 *
 * <pre>
 * Engine OP DB WAREHOUSE CATALOG NS.TABLE [ARGS...] [--hold PATH]
 * Engine batch OPS.json          (a JSON array of argument arrays, run in order in one JVM)
 * Engine serve                   (requests on stdin, one JSON object a line: see Server)
 * </pre>
 *
 * DB is a SQLite catalog file or an http(s):// REST catalog URI (see
 * {@link Catalogs}); FLOE_JAVA_CATALOG_PROPS adds catalog properties.
 * Exit status: 0 done, 1 failed, 2 usage, 3 conflict (another writer's
 * commit made Iceberg's validation fail or the catalog's compare-and-swap was
 * lost every try; the table is unchanged and the operation may be retried).
 * {@code --hold PATH}: once the operation has planned and written its files,
 * create PATH.ready and wait until PATH exists before committing (lets a test
 * commit something else in between).
 */
public final class Engine {
    static final int OK = 0;
    static final int FAILED = 1;
    static final int USAGE = 2;
    static final int CONFLICT = 3;

    /** Summary property naming the operation that made a snapshot (engines put their own ids there). */
    static final String OP_ID = "engine.op-id";

    static final String USAGE_TEXT = String.join("\n",
        "Engine OP DB WAREHOUSE CATALOG NS.TABLE [ARGS] [--hold PATH], OP one of:",
        "  compact [--files N] [--order oldest|smallest] [--target-size BYTES]",
        "  expire [--retain-last N] [--older-than-ms T]",
        "  rollback SNAPSHOT_ID | rollback-to-frontier FRONTIER_JSON | set-current SNAPSHOT_ID",
        "  append ROWS.ndjson [--branch B]",
        "  delete-mor COLUMN VALUES_JSON [--equality] | delete-cow COLUMN VALUES_JSON [--spark-filter]",
        "  rewrite-manifests | rewrite-position-deletes",
        "  remove-orphans [--older-than-ms T] [--dry-run]",
        "  set-property KEY VALUE | remove-property KEY",
        "  create-branch NAME [SNAPSHOT_ID] | create-tag NAME SNAPSHOT_ID",
        "  snapshots-json | files-json [--snapshot ID | --branch B]",
        "Engine batch OPS.json | Engine serve", "");

    /** A commit another writer's change made impossible (Iceberg validation, lost CAS). */
    static final class Conflict extends RuntimeException {
        Conflict(String message, Throwable cause) {
            super(message, cause);
        }
    }

    static final class Usage extends RuntimeException {
        Usage(String message) {
            super(message);
        }
    }

    /** Reached by an operation after planning and writing, right before its commit. */
    interface Hold {
        void reached() throws InterruptedException;
    }

    static final Hold NO_HOLD = () -> { };

    private Engine() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("serve")) {
            Server.serve();
            return;
        }
        List<String> list = new ArrayList<>(Arrays.asList(args));
        Hold hold = NO_HOLD;
        int h = list.indexOf("--hold");
        if (h >= 0 && h + 1 < list.size()) {
            hold = fileHold(Paths.get(list.get(h + 1)));
            list.remove(h + 1);
            list.remove(h);
        }
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        int status = run(list.toArray(new String[0]), Catalogs.envProps(), hold, out, err);
        System.out.print(out);
        System.out.flush();
        System.err.print(err);
        System.err.flush();
        System.exit(status);
    }

    private static Hold fileHold(Path go) {
        return () -> {
            Path ready = Paths.get(go + ".ready");
            try {
                Files.write(ready, new byte[0]);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            long deadline = System.currentTimeMillis() + 600_000;
            while (!Files.exists(go)) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("never released: " + go);
                Thread.sleep(10);
            }
        };
    }

    /** One command line: the exit status; JSON lines go to `out`, messages to `err`. */
    static int run(String[] args, Map<String, String> props, Hold hold, StringBuilder out, StringBuilder err) {
        String op = args.length > 0 ? args[0] : "";
        try {
            if (op.equals("batch")) return batch(args, props, out, err);
            if (args.length < 5) throw new Usage("missing arguments");
            Args a = new Args(args, 5);
            Catalog catalog = Catalogs.open(args[1], args[2], args[3], props);
            try {
                Table table = catalog.loadTable(TableIdentifier.parse(args[4]));
                Map<String, Object> result = dispatch(op, table, a, hold);
                out.append(Values.JSON.writeValueAsString(result)).append('\n');
            } finally {
                Catalogs.close(catalog);
            }
            return OK;
        } catch (Usage e) {
            err.append("usage: ").append(e.getMessage()).append('\n').append(USAGE_TEXT);
            return USAGE;
        } catch (Conflict e) {
            err.append("conflict: ").append(op).append(": ").append(e.getMessage()).append('\n');
            return CONFLICT;
        } catch (Exception | AssertionError e) {
            err.append("error: ").append(op).append(": ").append(chain(e)).append('\n');
            if (System.getenv("FLOE_ENGINE_TRACE") != null) {
                java.io.StringWriter w = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(w));
                err.append(w);
            }
            return FAILED;
        }
    }

    private static String chain(Throwable e) {
        StringBuilder s = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (s.length() > 0) s.append(": caused by: ");
            s.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
            if (t.getCause() == t) break;
        }
        return s.toString();
    }

    private static int batch(String[] args, Map<String, String> props, StringBuilder out, StringBuilder err)
            throws IOException {
        if (args.length != 2) throw new Usage("batch OPS.json");
        JsonNode ops = Values.parse(new String(Files.readAllBytes(Paths.get(args[1])), StandardCharsets.UTF_8));
        if (!ops.isArray()) throw new Usage("batch: OPS.json must hold an array of argument arrays");
        for (JsonNode op : ops) {
            List<String> argv = new ArrayList<>();
            for (JsonNode x : op) argv.add(x.isTextual() ? x.textValue() : x.toString());
            if (!argv.isEmpty() && argv.get(0).equals("batch")) throw new Usage("batch inside batch");
            int status = run(argv.toArray(new String[0]), props, NO_HOLD, out, err);
            if (status != OK) return status;
        }
        return OK;
    }

    private static Map<String, Object> dispatch(String op, Table table, Args a, Hold hold) throws Exception {
        switch (op) {
            case "compact": return compact(table, a, hold);
            case "expire": return expire(table, a, hold);
            case "rollback": return rollback(table, a, hold, false);
            case "set-current": return rollback(table, a, hold, true);
            case "rollback-to-frontier": return rollbackToFrontier(table, a, hold);
            case "append": return append(table, a, hold);
            case "delete-mor": return deleteMor(table, a, hold);
            case "delete-cow": return deleteCow(table, a, hold);
            case "rewrite-manifests": return rewriteManifests(table, a, hold);
            case "rewrite-position-deletes": return rewritePositionDeletes(table, a, hold);
            case "remove-orphans": return removeOrphans(table, a, hold);
            case "set-property": return setProperty(table, a, hold, true);
            case "remove-property": return setProperty(table, a, hold, false);
            case "create-branch": return createRef(table, a, hold, true);
            case "create-tag": return createRef(table, a, hold, false);
            case "snapshots-json": a.check(0, 0); return snapshotsJson(table);
            case "files-json": return filesJson(table, a);
            default: throw new Usage("unknown operation " + op);
        }
    }

    // ---- command-line arguments -----------------------------------------------------------

    /** Positional arguments and --flags (a flag takes the next argument unless it is a switch). */
    static final class Args {
        private static final Set<String> SWITCHES = Set.of("--equality", "--dry-run", "--spark-filter");
        final List<String> positional = new ArrayList<>();
        final Map<String, String> flags = new HashMap<>();
        private final Set<String> used = new HashSet<>();

        Args(String[] argv, int from) {
            for (int i = from; i < argv.length; i++) {
                String s = argv[i];
                if (s.startsWith("--")) {
                    if (SWITCHES.contains(s)) {
                        flags.put(s, "true");
                    } else {
                        if (i + 1 >= argv.length) throw new Usage(s + " needs a value");
                        flags.put(s, argv[++i]);
                    }
                } else {
                    positional.add(s);
                }
            }
        }

        String flag(String name) {
            used.add(name);
            return flags.get(name);
        }

        boolean on(String name) {
            return flag(name) != null;
        }

        Long longFlag(String name) {
            String v = flag(name);
            if (v == null) return null;
            try {
                return Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new Usage(name + " takes an integer, not " + v);
            }
        }

        String pos(int i) {
            return positional.get(i);
        }

        long longPos(int i) {
            try {
                return Long.parseLong(pos(i));
            } catch (NumberFormatException e) {
                throw new Usage("not an integer: " + pos(i));
            }
        }

        /** Between min and max positional arguments, and no flag the operation did not read. */
        void check(int min, int max) {
            if (positional.size() < min || positional.size() > max) {
                throw new Usage("expected " + (min == max ? "" + min : min + " to " + max)
                    + " arguments after the table, got " + positional);
            }
            for (String f : flags.keySet()) {
                if (!used.contains(f)) throw new Usage("unknown option " + f);
            }
        }
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static Map<String, Object> result(String op, Table table) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("op", op);
        r.put("table", table.name());
        return r;
    }

    private static String newOpId() {
        return UUID.randomUUID().toString();
    }

    /** Commits, turning a lost race into a Conflict (validation failed, or CAS lost on every retry). */
    private static void commit(PendingUpdate<?> update, Hold hold) throws InterruptedException {
        commit(update::commit, hold, null, List.of());
    }

    private static void commit(PendingUpdate<?> update, Hold hold, FileIO io,
            List<? extends ContentFile<?>> written) throws InterruptedException {
        commit(update::commit, hold, io, written);
    }

    /**
     * Runs a commit; when it fails for certain, the files this operation
     * wrote for it (`written`) are deleted again, as an engine aborting a
     * write does (not when the outcome is unknown: the commit may have landed).
     */
    private static void commit(Runnable action, Hold hold, FileIO io, List<? extends ContentFile<?>> written)
            throws InterruptedException {
        boolean clean = false;
        try {
            hold.reached();
            action.run();
        } catch (CommitFailedException | ValidationException e) {
            clean = true;
            throw new Conflict(e.getMessage(), e);
        } catch (CommitStateUnknownException e) {
            throw e;
        } catch (RuntimeException | InterruptedException e) {
            clean = true;
            throw e;
        } finally {
            if (clean && io != null) {
                for (ContentFile<?> f : written) {
                    try {
                        io.deleteFile(f.location());
                    } catch (RuntimeException ignored) {
                        // best effort: an orphan at worst
                    }
                }
            }
        }
    }

    /** The snapshot this operation committed (found by its op id, newest first). */
    private static Snapshot committed(Table table, String opId) {
        table.refresh();
        Snapshot found = null;
        for (Snapshot s : table.snapshots()) {
            if (opId.equals(s.summary().get(OP_ID))) found = s;
        }
        if (found == null) throw new IllegalStateException("committed snapshot " + opId + " not found");
        return found;
    }

    private static void putSnapshot(Map<String, Object> r, Snapshot s) {
        r.put("snapshot-id", s == null ? null : s.snapshotId());
        r.put("sequence-number", s == null ? null : s.sequenceNumber());
        r.put("operation", s == null ? null : s.operation());
    }

    /** One task per data file of the snapshot, with the delete files that apply to it. */
    static List<FileScanTask> planFiles(Table table, Snapshot snap) throws IOException {
        List<FileScanTask> tasks = new ArrayList<>();
        try (CloseableIterable<FileScanTask> it = table.newScan().useSnapshot(snap.snapshotId()).planFiles()) {
            for (FileScanTask t : it) tasks.add(t);
        }
        return tasks;
    }

    /**
     * The live rows of one data file: the file read with Iceberg's reader and
     * every delete that applies to it (position deletes, equality deletes,
     * deletion vectors) applied by Iceberg's delete filter.  Records hold
     * `projection`'s columns first (and any column the deletes need after).
     */
    static CloseableIterable<Record> liveRows(Table table, FileScanTask task, Schema projection) {
        return liveRows(table, task, projection, new HashMap<>());
    }

    /**
     * The same, with the delete files already loaded by earlier calls of one
     * scan (`loaded`, keyed by location; Iceberg's own cache hook,
     * BaseDeleteLoader.getOrLoad): a delete file that applies to many data
     * files is read once.  Deletes load in the calling thread: through its
     * worker pool, Iceberg waits for each data file's delete loads by polling
     * every 10 ms, which made reading every snapshot of a table of 200 small
     * files (tests/java Reader) a minute's work.
     */
    static CloseableIterable<Record> liveRows(Table table, FileScanTask task, Schema projection,
                                              Map<String, Object> loaded) {
        GenericDeleteFilter deletes = new GenericDeleteFilter(table.io(), task, table.schema(), projection) {
            @Override
            protected DeleteLoader newDeleteLoader() {
                return new BaseDeleteLoader(this::loadInputFile, null) {
                    @Override
                    protected boolean canCache(long size) { return true; }

                    @Override
                    @SuppressWarnings("unchecked")
                    protected <V> V getOrLoad(String key, Supplier<V> load, long size) {
                        Object v = loaded.get(key);
                        if (v == null) loaded.put(key, v = load.get());
                        return (V) v;
                    }
                };
            }
        };
        Schema readSchema = deletes.requiredSchema();
        ReadBuilder<Record, Object> read = FormatModelRegistry.readBuilder(
            task.file().format(), Record.class, table.io().newInputFile(task.file()));
        CloseableIterable<Record> rows = read
            .project(readSchema)
            .idToConstant(PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant))
            .split(task.start(), task.length())
            .build();
        return deletes.filter(rows);
    }

    static Schema withPos(Schema schema) {
        List<Types.NestedField> cols = new ArrayList<>(schema.columns());
        cols.add(MetadataColumns.ROW_POSITION);
        return new Schema(cols);
    }

    /** A record of the table's schema holding r's table columns. */
    static Record tableRow(Schema schema, Record r) {
        GenericRecord out = GenericRecord.create(schema);
        List<Types.NestedField> cols = schema.columns();
        for (int i = 0; i < cols.size(); i++) out.set(i, r.getField(cols.get(i).name()));
        return out;
    }

    static long targetFileSize(Table table) {
        return PropertyUtil.propertyAsLong(table.properties(), TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
            TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT);
    }

    static OutputFileFactory outputFiles(Table table, FileFormat format, String suffix) {
        OutputFileFactory.Builder b = OutputFileFactory.builderFor(table, 1, System.nanoTime() & 0xffffffL)
            .format(format).operationId(UUID.randomUUID().toString());
        if (suffix != null) b = b.suffix(suffix);
        return b.build();
    }

    /** A new file under the data location (no empty partition directory: `data//f` breaks on S3). */
    static org.apache.iceberg.encryption.EncryptedOutputFile newFile(OutputFileFactory files, PartitionSpec spec,
            StructLike partition) {
        return spec.isUnpartitioned() || partition == null ? files.newOutputFile()
            : files.newOutputFile(spec, partition);
    }

    private static StructLike partitionOf(PartitionSpec spec, ContentFile<?> f) {
        return spec.isUnpartitioned() ? null : f.partition();
    }

    /** Data files written with Iceberg's Parquet writer (GenericParquetWriter), rolling at a target size. */
    static final class DataOut implements AutoCloseable {
        private final RollingDataWriter<Record> writer;
        private boolean closed;

        DataOut(Table table, OutputFileFactory files, PartitionSpec spec, StructLike partition, long target) {
            GenericFileWriterFactory factory = new GenericFileWriterFactory.Builder(table)
                .dataFileFormat(FileFormat.PARQUET).dataSchema(table.schema()).build();
            this.writer = new RollingDataWriter<>(factory, files, table.io(), target, spec, partition);
        }

        void write(Record r) {
            writer.write(r);
        }

        List<DataFile> finish() throws IOException {
            close();
            return writer.result().dataFiles();
        }

        @Override
        public void close() throws IOException {
            if (!closed) {
                closed = true;
                writer.close();
            }
        }
    }

    private static String deleteKey(DeleteFile f) {
        return f.location() + "#" + f.contentOffset();
    }

    private static List<String> paths(List<? extends ContentFile<?>> files) {
        List<String> out = new ArrayList<>();
        for (ContentFile<?> f : files) out.add(f.location());
        return out;
    }

    private static String contentName(DeleteFile f) {
        if (ContentFileUtil.isDV(f)) return "dv";
        return f.content() == FileContent.EQUALITY_DELETES ? "equality" : "position";
    }

    /** Groups of tasks by (spec, partition). */
    private static Map<Integer, StructLikeMap<List<FileScanTask>>> byPartition(Table table, List<FileScanTask> tasks) {
        Map<Integer, StructLikeMap<List<FileScanTask>>> out = new TreeMap<>();
        for (FileScanTask t : tasks) {
            PartitionSpec spec = table.specs().get(t.file().specId());
            out.computeIfAbsent(spec.specId(), id -> StructLikeMap.create(spec.partitionType()))
                .computeIfAbsent(t.file().partition(), p -> new ArrayList<>()).add(t);
        }
        return out;
    }

    // ---- compact --------------------------------------------------------------------------------

    /**
     * Bin-pack compaction as Spark's rewrite_data_files does it: the chosen
     * data files' live rows (every delete applied) are written into new
     * Parquet files that replace them in one `replace` snapshot, with the
     * starting snapshot's sequence number as their data sequence number (so
     * equality deletes committed meanwhile still apply to them) and
     * validation from the starting snapshot (a concurrent position delete or
     * DV on a replaced file is a conflict).  Delete files that only the
     * replaced files needed are removed; the ones any other data file needs stay.
     */
    private static Map<String, Object> compact(Table table, Args a, Hold hold) throws Exception {
        Long n = a.longFlag("--files");
        String order = a.flag("--order");
        Long target = a.longFlag("--target-size");
        a.check(0, 0);
        if (order == null) order = "oldest";
        if (!order.equals("oldest") && !order.equals("smallest")) throw new Usage("--order oldest|smallest");
        Map<String, Object> r = result("compact", table);
        Snapshot start = table.currentSnapshot();
        r.put("start-snapshot-id", start == null ? null : start.snapshotId());
        List<FileScanTask> tasks = start == null ? List.of() : planFiles(table, start);
        Comparator<FileScanTask> oldest = Comparator
            .comparing((FileScanTask t) -> t.file().dataSequenceNumber())
            .thenComparing(t -> t.file().fileSequenceNumber())
            .thenComparing(t -> t.file().location());
        Comparator<FileScanTask> smallest = Comparator
            .comparing((FileScanTask t) -> t.file().fileSizeInBytes()).thenComparing(oldest);
        tasks.sort(order.equals("oldest") ? oldest : smallest);
        int take = n == null ? tasks.size() : (int) Math.min(Math.max(n, 0), tasks.size());
        List<FileScanTask> chosen = tasks.subList(0, take);
        List<FileScanTask> remaining = tasks.subList(take, tasks.size());
        if (chosen.isEmpty()) {
            putSnapshot(r, null);
            r.put("rewritten-data-files", List.of());
            r.put("added-data-files", List.of());
            r.put("removed-delete-files", List.of());
            r.put("kept-delete-files", List.of());
            r.put("rows", 0);
            return r;
        }

        Set<String> needed = new HashSet<>();
        for (FileScanTask t : remaining) for (DeleteFile d : t.deletes()) needed.add(deleteKey(d));
        Map<String, DeleteFile> removable = new LinkedHashMap<>();
        Map<String, DeleteFile> kept = new LinkedHashMap<>();
        for (FileScanTask t : chosen) {
            for (DeleteFile d : t.deletes()) {
                (needed.contains(deleteKey(d)) ? kept : removable).put(deleteKey(d), d);
            }
        }

        long size = target != null ? target : targetFileSize(table);
        OutputFileFactory files = outputFiles(table, FileFormat.PARQUET, null);
        List<DataFile> added = new ArrayList<>();
        long rows = 0;
        for (Map.Entry<Integer, StructLikeMap<List<FileScanTask>>> bySpec : byPartition(table, chosen).entrySet()) {
            PartitionSpec spec = table.specs().get(bySpec.getKey());
            for (Map.Entry<StructLike, List<FileScanTask>> group : bySpec.getValue().entrySet()) {
                StructLike partition = spec.isUnpartitioned() ? null : group.getKey();
                try (DataOut out = new DataOut(table, files, spec, partition, size)) {
                    for (FileScanTask t : group.getValue()) {
                        try (CloseableIterable<Record> live = liveRows(table, t, table.schema())) {
                            for (Record row : live) {
                                out.write(tableRow(table.schema(), row));
                                rows++;
                            }
                        }
                    }
                    added.addAll(out.finish());
                }
            }
        }

        String opId = newOpId();
        RewriteFiles rewrite = table.newRewrite()
            .validateFromSnapshot(start.snapshotId())
            .dataSequenceNumber(start.sequenceNumber())
            .set(OP_ID, opId);
        List<DataFile> replaced = new ArrayList<>();
        for (FileScanTask t : chosen) {
            rewrite.deleteFile(t.file());
            replaced.add(t.file());
        }
        for (DeleteFile d : removable.values()) rewrite.deleteFile(d);
        for (DataFile f : added) rewrite.addFile(f);
        commit(rewrite, hold, table.io(), added);

        putSnapshot(r, committed(table, opId));
        r.put("data-sequence-number", start.sequenceNumber());
        r.put("rewritten-data-files", paths(replaced));
        r.put("added-data-files", paths(added));
        r.put("removed-delete-files", paths(new ArrayList<>(removable.values())));
        r.put("kept-delete-files", paths(new ArrayList<>(kept.values())));
        r.put("rows", rows);
        return r;
    }

    // ---- expire ----------------------------------------------------------------------------------

    private static Map<String, Object> expire(Table table, Args a, Hold hold) throws Exception {
        Long retain = a.longFlag("--retain-last");
        Long olderThan = a.longFlag("--older-than-ms");
        a.check(0, 0);
        Set<Long> before = new TreeSet<>();
        for (Snapshot s : table.snapshots()) before.add(s.snapshotId());
        List<String> deleted = new ArrayList<>();
        FileIO io = table.io();
        org.apache.iceberg.ExpireSnapshots expire = table.expireSnapshots()
            .retainLast(retain == null ? 1 : (int) (long) retain)
            .expireOlderThan(olderThan == null ? System.currentTimeMillis() : olderThan)
            .cleanExpiredFiles(true)
            .deleteWith(path -> {
                synchronized (deleted) {
                    deleted.add(path);
                }
                io.deleteFile(path);
            });
        commit(expire, hold);
        table.refresh();
        List<Long> after = new ArrayList<>();
        for (Snapshot s : table.snapshots()) after.add(s.snapshotId());
        List<Long> expired = new ArrayList<>();
        for (Long id : before) if (!after.contains(id)) expired.add(id);
        Map<String, Object> r = result("expire", table);
        r.put("expired-snapshot-ids", expired);
        r.put("retained-snapshot-ids", after);
        r.put("deleted-files", deleted);
        return r;
    }

    // ---- rollback -------------------------------------------------------------------------------

    private static Map<String, Object> rollback(Table table, Args a, Hold hold, boolean setCurrent)
            throws Exception {
        a.check(1, 1);
        long id = a.longPos(0);
        return rollbackTo(table, id, hold, setCurrent, setCurrent ? "set-current" : "rollback");
    }

    private static Map<String, Object> rollbackTo(Table table, long id, Hold hold, boolean setCurrent, String op)
            throws Exception {
        Snapshot before = table.currentSnapshot();
        if (table.snapshot(id) == null) throw new IllegalArgumentException("no snapshot " + id);
        org.apache.iceberg.ManageSnapshots m = table.manageSnapshots();
        m = setCurrent ? m.setCurrentSnapshot(id) : m.rollbackTo(id);
        hold.reached();
        try {
            m.commit();
        } catch (CommitFailedException e) {
            throw new Conflict(e.getMessage(), e);
        }
        table.refresh();
        Map<String, Object> r = result(op, table);
        r.put("previous-snapshot-id", before == null ? null : before.snapshotId());
        r.put("snapshot-id", table.currentSnapshot().snapshotId());
        r.put("frontier", table.currentSnapshot().summary().get("floe.frontier"));
        return r;
    }

    /** The newest snapshot on main's history whose floe.frontier is the given JSON (e.g. "[11]", "[]"). */
    private static Map<String, Object> rollbackToFrontier(Table table, Args a, Hold hold) throws Exception {
        a.check(1, 1);
        String frontier = a.pos(0);
        Snapshot current = table.currentSnapshot();
        if (current == null) throw new IllegalArgumentException("the table has no snapshot");
        JsonNode want = Values.parse(frontier);
        for (Snapshot s : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
            String text = s.summary().get("floe.frontier");
            if (text != null && (text.equals(frontier) || sameJson(want, text))) {
                return rollbackTo(table, s.snapshotId(), hold, false, "rollback-to-frontier");
            }
        }
        throw new IllegalArgumentException("no snapshot on main's history has floe.frontier " + frontier);
    }

    private static boolean sameJson(JsonNode want, String text) {
        try {
            return want.equals(Values.parse(text));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    // ---- append ---------------------------------------------------------------------------------

    /** A foreign INSERT: NDJSON rows written with Iceberg's Parquet writer, committed with AppendFiles. */
    private static Map<String, Object> append(Table table, Args a, Hold hold) throws Exception {
        String branch = a.flag("--branch");
        a.check(1, 1);
        Schema schema = table.schema();
        List<Record> rows = new ArrayList<>();
        int lineNo = 0;
        for (String line : Files.readAllLines(Paths.get(a.pos(0)), StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.trim().isEmpty()) continue;
            try {
                rows.add(Values.row(schema, Values.parse(line)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(a.pos(0) + ":" + lineNo + ": " + e.getMessage(), e);
            }
        }
        PartitionSpec spec = table.spec();
        if (spec.isPartitioned()) throw new IllegalArgumentException("append supports unpartitioned tables");
        List<DataFile> added;
        try (DataOut out = new DataOut(table, outputFiles(table, FileFormat.PARQUET, null), spec, null,
                targetFileSize(table))) {
            for (Record rec : rows) out.write(rec);
            added = out.finish();
        }
        String opId = newOpId();
        Transaction tx = table.newTransaction();
        boolean created = false;
        if (branch != null && !branch.equals(SnapshotRef.MAIN_BRANCH) && table.refs().get(branch) == null
                && table.currentSnapshot() != null) {
            tx.manageSnapshots().createBranch(branch, table.currentSnapshot().snapshotId()).commit();
            created = true;
        }
        AppendFiles append = tx.newAppend().set(OP_ID, opId);
        if (branch != null) append = append.toBranch(branch);
        for (DataFile f : added) append.appendFile(f);
        append.commit();
        commit(tx::commitTransaction, hold, table.io(), added);
        Map<String, Object> r = result("append", table);
        putSnapshot(r, committed(table, opId));
        r.put("branch", branch == null ? SnapshotRef.MAIN_BRANCH : branch);
        r.put("branch-created", created);
        r.put("added-data-files", paths(added));
        r.put("rows", rows.size());
        return r;
    }

    // ---- deletes ----------------------------------------------------------------------------------

    /** The column and values of a DELETE ... WHERE column IN (values) (null matches null). */
    private static final class Match {
        final Types.NestedField field;
        final List<Object> values = new ArrayList<>();
        final Set<Object> normalized = new HashSet<>();

        Match(Table table, String column, String valuesJson) {
            field = table.schema().findField(column);
            if (field == null || !table.schema().columns().contains(field)) {
                throw new IllegalArgumentException("no top-level column " + column + " in " + table.name());
            }
            JsonNode node = Values.parse(valuesJson);
            List<JsonNode> items = new ArrayList<>();
            if (node.isArray()) node.forEach(items::add);
            else items.add(node);
            for (JsonNode item : items) {
                Object v = Values.value(field.type(), item, column);
                values.add(v);
                normalized.add(Values.normalize(v));
            }
        }

        boolean matches(Record r) {
            return normalized.contains(Values.normalize(r.getField(field.name())));
        }

        Expression filter() {
            return Values.inFilter(field.name(), field.type(), values);
        }
    }

    /** Per data file (in scan order) the positions of its live rows that match. */
    private static Map<FileScanTask, long[]> findMatches(Table table, List<FileScanTask> tasks, Match m)
            throws IOException {
        Map<FileScanTask, long[]> out = new LinkedHashMap<>();
        Schema projection = withPos(table.schema().select(m.field.name()));
        for (FileScanTask t : tasks) {
            List<Long> pos = new ArrayList<>();
            try (CloseableIterable<Record> live = liveRows(table, t, projection)) {
                for (Record r : live) {
                    if (m.matches(r)) pos.add((Long) r.getField(MetadataColumns.ROW_POSITION.name()));
                }
            }
            if (!pos.isEmpty()) out.put(t, pos.stream().mapToLong(Long::longValue).sorted().toArray());
        }
        return out;
    }

    /**
     * A merge-on-read DELETE: position deletes (file-scoped, one file per data
     * file; deletion vectors on v3 tables, merged with the file's earlier
     * deletes) for the matching live rows, or with --equality one equality
     * delete file on COLUMN; committed as a RowDelta validated as Spark does.
     */
    private static Map<String, Object> deleteMor(Table table, Args a, Hold hold) throws Exception {
        boolean equality = a.on("--equality");
        // equality deletes placed in the partitions of the rows matching these values of
        // the same column instead of the matched rows' own (a delete scoped elsewhere)
        String scope = a.flag("--in-partition-of");
        a.check(2, 2);
        if (scope != null && !equality) throw new Usage("--in-partition-of needs --equality");
        Match m = new Match(table, a.pos(0), a.pos(1));
        Map<String, Object> r = result("delete-mor", table);
        Snapshot start = table.currentSnapshot();
        List<FileScanTask> tasks = start == null ? List.of() : planFiles(table, start);
        Map<FileScanTask, long[]> matches = findMatches(table, tasks, m);
        long rows = 0;
        for (long[] p : matches.values()) rows += p.length;
        r.put("start-snapshot-id", start == null ? null : start.snapshotId());
        r.put("rows", rows);
        int format = ((HasTableOperations) table).operations().current().formatVersion();
        List<DeleteFile> added = new ArrayList<>();
        List<DeleteFile> removed = new ArrayList<>();
        Set<String> referenced = new TreeSet<>();
        if (equality) {
            if (start == null && table.spec().isPartitioned()) {
                putSnapshot(r, null);
                r.put("added-delete-files", List.of());
                return r;
            }
            Map<FileScanTask, long[]> placed =
                scope == null ? matches : findMatches(table, tasks, new Match(table, a.pos(0), scope));
            added.addAll(writeEqualityDeletes(table, m, tasks, placed));
        } else {
            if (matches.isEmpty()) {
                putSnapshot(r, null);
                r.put("added-delete-files", List.of());
                r.put("removed-delete-files", List.of());
                return r;
            }
            for (FileScanTask t : matches.keySet()) referenced.add(t.file().location());
            if (format >= 3) {
                writeDVs(table, matches, added, removed);
            } else {
                added.addAll(writePositionDeletes(table, matches));
            }
        }
        String opId = newOpId();
        RowDelta delta = table.newRowDelta().set(OP_ID, opId);
        if (start != null) delta = delta.validateFromSnapshot(start.snapshotId());
        for (DeleteFile d : added) delta.addDeletes(d);
        for (DeleteFile d : removed) delta.removeDeletes(d);
        if (!equality) {
            delta = delta.validateDataFilesExist(referenced)
                .validateDeletedFiles()
                .conflictDetectionFilter(m.filter())
                .validateNoConflictingDataFiles()
                .validateNoConflictingDeleteFiles();
        }
        commit(delta, hold, table.io(), added);
        putSnapshot(r, committed(table, opId));
        r.put("mode", equality ? "equality" : format >= 3 ? "dv" : "position");
        r.put("added-delete-files", paths(added));
        r.put("removed-delete-files", paths(removed));
        return r;
    }

    private static List<DeleteFile> writePositionDeletes(Table table, Map<FileScanTask, long[]> matches)
            throws IOException {
        GenericFileWriterFactory factory = new GenericFileWriterFactory.Builder(table)
            .deleteFileFormat(FileFormat.PARQUET).build();
        OutputFileFactory files = outputFiles(table, FileFormat.PARQUET, "deletes");
        List<DeleteFile> out = new ArrayList<>();
        for (Map.Entry<FileScanTask, long[]> e : matches.entrySet()) {
            DataFile data = e.getKey().file();
            PartitionSpec spec = table.specs().get(data.specId());
            StructLike partition = partitionOf(spec, data);
            PositionDeleteWriter<Record> w = factory.newPositionDeleteWriter(
                newFile(files, spec, partition), spec, partition);
            try {
                PositionDelete<Record> pd = PositionDelete.create();
                for (long p : e.getValue()) w.write(pd.set(data.location(), p));
            } finally {
                w.close();
            }
            out.add(w.toDeleteFile());
        }
        return out;
    }

    /** v3: one deletion vector per data file, holding its earlier deletes too; file-scoped ones it replaces go. */
    private static void writeDVs(Table table, Map<FileScanTask, long[]> matches, List<DeleteFile> added,
            List<DeleteFile> removed) throws IOException {
        Map<String, List<DeleteFile>> previous = new HashMap<>();
        for (FileScanTask t : matches.keySet()) {
            List<DeleteFile> pos = new ArrayList<>();
            for (DeleteFile d : t.deletes()) if (d.content() == FileContent.POSITION_DELETES) pos.add(d);
            previous.put(t.file().location(), pos);
        }
        BaseDeleteLoader loader = new BaseDeleteLoader(d -> table.io().newInputFile(d));
        BaseDVFileWriter writer = new BaseDVFileWriter(outputFiles(table, FileFormat.PUFFIN, "dv"), path -> {
            List<DeleteFile> prev = previous.get(path);
            return prev == null || prev.isEmpty() ? null : loader.loadPositionDeletes(prev, path);
        });
        try {
            for (Map.Entry<FileScanTask, long[]> e : matches.entrySet()) {
                DataFile data = e.getKey().file();
                PartitionSpec spec = table.specs().get(data.specId());
                for (long p : e.getValue()) writer.delete(data.location(), p, spec, partitionOf(spec, data));
            }
        } finally {
            writer.close();
        }
        DeleteWriteResult res = writer.result();
        added.addAll(res.deleteFiles());
        Set<String> seen = new HashSet<>();
        for (DeleteFile d : res.rewrittenDeleteFiles()) {
            // a position delete file that covers other data files too must stay
            if (ContentFileUtil.isFileScoped(d) && seen.add(deleteKey(d))) removed.add(d);
        }
    }

    private static List<DeleteFile> writeEqualityDeletes(Table table, Match m, List<FileScanTask> tasks,
            Map<FileScanTask, long[]> matches) throws IOException {
        Schema deleteSchema = table.schema().select(m.field.name());
        GenericFileWriterFactory factory = new GenericFileWriterFactory.Builder(table)
            .deleteFileFormat(FileFormat.PARQUET)
            .equalityFieldIds(new int[] {m.field.fieldId()})
            .equalityDeleteRowSchema(deleteSchema)
            .build();
        OutputFileFactory files = outputFiles(table, FileFormat.PARQUET, "eq-deletes");
        // unpartitioned: one global file; partitioned: one per partition holding a matching row
        List<Map.Entry<PartitionSpec, StructLike>> targets = new ArrayList<>();
        if (table.spec().isUnpartitioned()) {
            targets.add(new java.util.AbstractMap.SimpleEntry<>(table.spec(), null));
        } else {
            Map<Integer, StructLikeMap<List<FileScanTask>>> groups =
                byPartition(table, new ArrayList<>(matches.keySet()));
            for (Map.Entry<Integer, StructLikeMap<List<FileScanTask>>> g : groups.entrySet()) {
                PartitionSpec spec = table.specs().get(g.getKey());
                for (StructLike p : g.getValue().keySet()) {
                    targets.add(new java.util.AbstractMap.SimpleEntry<>(spec, spec.isUnpartitioned() ? null : p));
                }
            }
        }
        List<DeleteFile> out = new ArrayList<>();
        for (Map.Entry<PartitionSpec, StructLike> t : targets) {
            EqualityDeleteWriter<Record> w = factory.newEqualityDeleteWriter(
                newFile(files, t.getKey(), t.getValue()), t.getKey(), t.getValue());
            try {
                Set<Object> written = new HashSet<>();
                for (Object v : m.values) {
                    if (!written.add(Values.normalize(v))) continue;
                    GenericRecord rec = GenericRecord.create(deleteSchema);
                    rec.set(0, v);
                    w.write(rec);
                }
            } finally {
                w.close();
            }
            out.add(w.toDeleteFile());
        }
        return out;
    }

    /**
     * A copy-on-write DELETE: each data file holding a matching live row is
     * rewritten without the matching rows (its other deletes applied) and
     * replaced with OverwriteFiles, validated from the starting snapshot
     * against concurrent data and delete files.  Without a conflict filter any
     * concurrent delete that applies to a replaced file is a conflict; with
     * --spark-filter the DELETE condition is the conflict detection filter, as
     * Spark sets it, and then a concurrent equality delete whose bounds miss
     * the condition is not a conflict, although the rewritten file (a newer
     * sequence number) escapes it: the row it deleted comes back.
     */
    private static Map<String, Object> deleteCow(Table table, Args a, Hold hold) throws Exception {
        boolean sparkFilter = a.on("--spark-filter");
        a.check(2, 2);
        Match m = new Match(table, a.pos(0), a.pos(1));
        Map<String, Object> r = result("delete-cow", table);
        Snapshot start = table.currentSnapshot();
        List<FileScanTask> tasks = start == null ? List.of() : planFiles(table, start);
        Map<FileScanTask, long[]> matches = findMatches(table, tasks, m);
        r.put("start-snapshot-id", start == null ? null : start.snapshotId());
        if (matches.isEmpty()) {
            putSnapshot(r, null);
            r.put("rows", 0);
            r.put("removed-data-files", List.of());
            r.put("added-data-files", List.of());
            return r;
        }
        OutputFileFactory files = outputFiles(table, FileFormat.PARQUET, null);
        String opId = newOpId();
        OverwriteFiles overwrite = table.newOverwrite()
            .validateFromSnapshot(start.snapshotId())
            .validateNoConflictingData()
            .validateNoConflictingDeletes()
            .set(OP_ID, opId);
        if (sparkFilter) overwrite = overwrite.conflictDetectionFilter(m.filter());
        List<DataFile> removedFiles = new ArrayList<>();
        List<DataFile> added = new ArrayList<>();
        long deleted = 0;
        long keptRows = 0;
        for (FileScanTask t : matches.keySet()) {
            PartitionSpec spec = table.specs().get(t.file().specId());
            try (DataOut out = new DataOut(table, files, spec, partitionOf(spec, t.file()), targetFileSize(table))) {
                try (CloseableIterable<Record> live = liveRows(table, t, table.schema())) {
                    for (Record row : live) {
                        if (m.matches(row)) {
                            deleted++;
                        } else {
                            out.write(tableRow(table.schema(), row));
                            keptRows++;
                        }
                    }
                }
                added.addAll(out.finish());
            }
            overwrite.deleteFile(t.file());
            removedFiles.add(t.file());
        }
        for (DataFile f : added) overwrite.addFile(f);
        commit(overwrite, hold, table.io(), added);
        putSnapshot(r, committed(table, opId));
        r.put("rows", deleted);
        r.put("rows-rewritten", keptRows);
        r.put("removed-data-files", paths(removedFiles));
        r.put("added-data-files", paths(added));
        return r;
    }

    // ---- rewrite manifests -------------------------------------------------------------------------

    /**
     * RewriteManifests as Spark's rewrite_manifests: all data manifests are
     * clustered into one (per spec) by Iceberg; the delete manifests of each
     * spec are merged into one here (every live entry kept as EXISTING with
     * its snapshot id and sequence numbers).
     */
    private static Map<String, Object> rewriteManifests(Table table, Args a, Hold hold) throws Exception {
        a.check(0, 0);
        Map<String, Object> r = result("rewrite-manifests", table);
        Snapshot start = table.currentSnapshot();
        if (start == null) {
            putSnapshot(r, null);
            return r;
        }
        FileIO io = table.io();
        TableMetadata meta = ((HasTableOperations) table).operations().current();
        List<ManifestFile> before = start.allManifests(io);
        String opId = newOpId();
        RewriteManifests rewrite = table.rewriteManifests().clusterBy(f -> "all").set(OP_ID, opId);
        Map<Integer, List<ManifestFile>> deletesBySpec = new TreeMap<>();
        for (ManifestFile mf : start.deleteManifests(io)) {
            deletesBySpec.computeIfAbsent(mf.partitionSpecId(), k -> new ArrayList<>()).add(mf);
        }
        for (Map.Entry<Integer, List<ManifestFile>> e : deletesBySpec.entrySet()) {
            List<ManifestFile> group = e.getValue();
            if (group.size() == 1 && !group.get(0).hasDeletedFiles() && !group.get(0).hasAddedFiles()) continue;
            PartitionSpec spec = table.specs().get(e.getKey());
            String name = FileFormat.AVRO.addExtension(UUID.randomUUID() + "-m0");
            org.apache.iceberg.io.OutputFile outFile = io.newOutputFile(
                ((HasTableOperations) table).operations().metadataFileLocation(name));
            ManifestWriter<DeleteFile> w = ManifestFiles.writeDeleteManifest(meta.formatVersion(), spec, outFile, null);
            try {
                for (ManifestFile mf : group) {
                    List<Long> snapshotIds = entrySnapshotIds(io, mf);
                    try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(mf, io, table.specs())) {
                        for (DeleteFile d : reader) {
                            Long snap = snapshotIds.get(d.pos().intValue());
                            w.existing(d.copy(), snap, d.dataSequenceNumber(), d.fileSequenceNumber());
                        }
                    }
                    rewrite.deleteManifest(mf);
                }
            } finally {
                w.close();
            }
            rewrite.addManifest(w.toManifestFile());
        }
        commit(rewrite, hold);
        Snapshot s = committed(table, opId);
        putSnapshot(r, s);
        r.put("manifests-before", manifestsJson(before));
        r.put("manifests-after", manifestsJson(s.allManifests(io)));
        return r;
    }

    /** The snapshot id of every entry of a manifest, in file order (inherited ones resolved). */
    private static List<Long> entrySnapshotIds(FileIO io, ManifestFile mf) throws IOException {
        List<Long> out = new ArrayList<>();
        try (java.io.InputStream in = io.newInputFile(mf.path()).newStream();
             org.apache.avro.file.DataFileStream<org.apache.avro.generic.GenericRecord> entries =
                 new org.apache.avro.file.DataFileStream<>(in, new org.apache.avro.generic.GenericDatumReader<>())) {
            for (org.apache.avro.generic.GenericRecord e : entries) {
                Object id = e.get("snapshot_id");
                out.add(id != null ? (Long) id : mf.snapshotId());
            }
        }
        return out;
    }

    private static List<Map<String, Object>> manifestsJson(List<ManifestFile> manifests) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (ManifestFile mf : manifests) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", mf.path());
            m.put("content", mf.content() == ManifestContent.DATA ? "data" : "deletes");
            m.put("spec-id", mf.partitionSpecId());
            m.put("added", mf.addedFilesCount());
            m.put("existing", mf.existingFilesCount());
            m.put("deleted", mf.deletedFilesCount());
            m.put("snapshot-id", mf.snapshotId());
            m.put("sequence-number", mf.sequenceNumber());
            out.add(m);
        }
        return out;
    }

    // ---- rewrite position deletes --------------------------------------------------------------------

    /**
     * Rewrites the table's position delete files into one file per referenced
     * data file (read with Iceberg's reader; entries whose data file is gone
     * are dropped), committed with RewriteFiles on delete files.  Each new
     * file keeps the highest data sequence number of the files it came from.
     */
    private static Map<String, Object> rewritePositionDeletes(Table table, Args a, Hold hold) throws Exception {
        a.check(0, 0);
        Map<String, Object> r = result("rewrite-position-deletes", table);
        Snapshot start = table.currentSnapshot();
        int format = ((HasTableOperations) table).operations().current().formatVersion();
        if (format >= 3) {
            throw new IllegalArgumentException("v" + format + " tables keep position deletes as deletion vectors");
        }
        FileIO io = table.io();
        Map<String, DataFile> live = new HashMap<>();
        List<DeleteFile> old = new ArrayList<>();
        if (start != null) {
            for (ManifestFile mf : start.dataManifests(io)) {
                try (ManifestReader<DataFile> reader = ManifestFiles.read(mf, io, table.specs())) {
                    for (DataFile f : reader) live.put(f.location(), f.copyWithoutStats());
                }
            }
            for (ManifestFile mf : start.deleteManifests(io)) {
                try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(mf, io, table.specs())) {
                    for (DeleteFile d : reader) {
                        if (d.content() == FileContent.POSITION_DELETES && !ContentFileUtil.isDV(d)) old.add(d.copy());
                    }
                }
            }
        }
        r.put("start-snapshot-id", start == null ? null : start.snapshotId());
        if (old.isEmpty()) {
            putSnapshot(r, null);
            r.put("rewritten-delete-files", List.of());
            r.put("added-delete-files", List.of());
            r.put("dropped-deletes", 0);
            r.put("deletes", 0);
            return r;
        }
        Map<String, TreeSet<Long>> positions = new TreeMap<>();
        Map<String, Long> sequence = new HashMap<>();
        long dropped = 0;
        Schema pathPos = DeleteSchemaUtil.pathPosSchema();
        for (DeleteFile d : old) {
            ReadBuilder<Record, Object> read = FormatModelRegistry.readBuilder(d.format(), Record.class,
                io.newInputFile(d));
            try (CloseableIterable<Record> rows = read.project(pathPos).build()) {
                for (Record row : rows) {
                    String path = row.getField(MetadataColumns.DELETE_FILE_PATH.name()).toString();
                    long pos = (Long) row.getField(MetadataColumns.DELETE_FILE_POS.name());
                    DataFile target = live.get(path);
                    if (target == null || target.dataSequenceNumber() > d.dataSequenceNumber()) {
                        dropped++;          // its data file is gone (or this delete never applied to it)
                        continue;
                    }
                    positions.computeIfAbsent(path, p -> new TreeSet<>()).add(pos);
                    sequence.merge(path, d.dataSequenceNumber(), Math::max);
                }
            }
        }
        GenericFileWriterFactory factory = new GenericFileWriterFactory.Builder(table)
            .deleteFileFormat(FileFormat.PARQUET).build();
        OutputFileFactory files = outputFiles(table, FileFormat.PARQUET, "deletes");
        String opId = newOpId();
        RewriteFiles rewrite = table.newRewrite().validateFromSnapshot(start.snapshotId()).set(OP_ID, opId);
        for (DeleteFile d : old) rewrite.deleteFile(d);
        List<DeleteFile> added = new ArrayList<>();
        long count = 0;
        for (Map.Entry<String, TreeSet<Long>> e : positions.entrySet()) {
            DataFile data = live.get(e.getKey());
            PartitionSpec spec = table.specs().get(data.specId());
            StructLike partition = partitionOf(spec, data);
            PositionDeleteWriter<Record> w = factory.newPositionDeleteWriter(
                newFile(files, spec, partition), spec, partition);
            try {
                PositionDelete<Record> pd = PositionDelete.create();
                for (long p : e.getValue()) {
                    w.write(pd.set(data.location(), p));
                    count++;
                }
            } finally {
                w.close();
            }
            DeleteFile f = w.toDeleteFile();
            added.add(f);
            rewrite.addFile(f, sequence.get(e.getKey()));
        }
        commit(rewrite, hold, table.io(), added);
        putSnapshot(r, committed(table, opId));
        r.put("rewritten-delete-files", paths(old));
        r.put("added-delete-files", paths(added));
        r.put("dropped-deletes", dropped);
        r.put("deletes", count);
        return r;
    }

    // ---- remove orphans -------------------------------------------------------------------------------

    /**
     * What Spark's remove_orphan_files does: every file under the table
     * location that no metadata reaches (current metadata file and its
     * metadata log, version hint, statistics, every snapshot's manifest list,
     * manifests and their live data and delete files) is deleted, if it is
     * older than --older-than-ms (0: any age).
     */
    private static Map<String, Object> removeOrphans(Table table, Args a, Hold hold) throws Exception {
        Long olderThanFlag = a.longFlag("--older-than-ms");
        boolean dryRun = a.on("--dry-run");
        a.check(0, 0);
        long olderThan = olderThanFlag == null ? 0 : olderThanFlag;
        FileIO io = table.io();
        Set<String> reachable = new HashSet<>();
        for (String p : ReachableFileUtil.metadataFileLocations(table, false)) reachable.add(norm(p));
        reachable.add(norm(ReachableFileUtil.versionHintLocation(table)));
        for (String p : ReachableFileUtil.statisticsFilesLocations(table)) reachable.add(norm(p));
        for (PartitionStatisticsFile p : table.partitionStatisticsFiles()) reachable.add(norm(p.path()));
        Set<String> manifestsSeen = new HashSet<>();
        for (Snapshot s : table.snapshots()) {
            if (s.manifestListLocation() != null) reachable.add(norm(s.manifestListLocation()));
            for (ManifestFile mf : s.allManifests(io)) {
                reachable.add(norm(mf.path()));
                if (!manifestsSeen.add(mf.path())) continue;
                if (mf.content() == ManifestContent.DATA) {
                    try (ManifestReader<DataFile> reader = ManifestFiles.read(mf, io, table.specs())) {
                        for (DataFile f : reader) reachable.add(norm(f.location()));
                    }
                } else {
                    try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(mf, io, table.specs())) {
                        for (DeleteFile f : reader) reachable.add(norm(f.location()));
                    }
                }
            }
        }
        List<FileInfo> listing = list(io, table.location());
        List<String> orphans = new ArrayList<>();
        for (FileInfo f : listing) {
            if (reachable.contains(norm(f.location()))) continue;
            if (olderThan > 0 && f.createdAtMillis() >= olderThan) continue;
            orphans.add(f.location());
        }
        hold.reached();
        if (!dryRun) for (String p : orphans) io.deleteFile(p);
        Map<String, Object> r = result("remove-orphans", table);
        r.put("location", table.location());
        r.put("listed", listing.size());
        r.put("reachable", reachable.size());
        r.put("dry-run", dryRun);
        r.put("removed", orphans);
        return r;
    }

    /** Every file under a location: through the FileIO's prefix listing, else the local file system. */
    private static List<FileInfo> list(FileIO io, String location) throws IOException {
        List<FileInfo> out = new ArrayList<>();
        if (io instanceof SupportsPrefixOperations) {
            String prefix = location.endsWith("/") ? location : location + "/";
            for (FileInfo f : ((SupportsPrefixOperations) io).listPrefix(prefix)) out.add(f);
            return out;
        }
        Path root = localPath(location);
        if (root == null) throw new IllegalArgumentException(io.getClass().getName() + " cannot list " + location);
        if (!Files.exists(root)) return out;
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                if (Files.isRegularFile(p)) {
                    out.add(new FileInfo(p.toUri().toString(), Files.size(p),
                        Files.getLastModifiedTime(p).toMillis()));
                }
            }
        }
        return out;
    }

    private static Path localPath(String location) {
        if (location.startsWith("/")) return Paths.get(location);
        if (location.startsWith("file:")) return Paths.get(URI.create(location.replaceFirst("^file:/+", "file:///")));
        return null;
    }

    /** One spelling per file: file:/x, file:///x and /x are /x; s3a:// and s3n:// are s3://. */
    static String norm(String location) {
        Path local = localPath(location);
        if (local != null) return local.normalize().toString();
        return location.replaceFirst("^s3[an]://", "s3://");
    }

    // ---- properties, refs, metadata ----------------------------------------------------------------------

    private static Map<String, Object> setProperty(Table table, Args a, Hold hold, boolean set) throws Exception {
        a.check(set ? 2 : 1, set ? 2 : 1);
        org.apache.iceberg.UpdateProperties u = table.updateProperties();
        u = set ? u.set(a.pos(0), a.pos(1)) : u.remove(a.pos(0));
        commit(u, hold);
        table.refresh();
        Map<String, Object> r = result(set ? "set-property" : "remove-property", table);
        r.put("key", a.pos(0));
        r.put("value", set ? a.pos(1) : null);
        r.put("format-version", ((HasTableOperations) table).operations().current().formatVersion());
        r.put("properties", table.properties());
        return r;
    }

    private static Map<String, Object> createRef(Table table, Args a, Hold hold, boolean branch) throws Exception {
        a.check(branch ? 1 : 2, 2);
        long id;
        if (a.positional.size() > 1) {
            id = a.longPos(1);
        } else {
            if (table.currentSnapshot() == null) throw new IllegalArgumentException("the table has no snapshot");
            id = table.currentSnapshot().snapshotId();
        }
        org.apache.iceberg.ManageSnapshots m = table.manageSnapshots();
        m = branch ? m.createBranch(a.pos(0), id) : m.createTag(a.pos(0), id);
        commit(m, hold);
        Map<String, Object> r = result(branch ? "create-branch" : "create-tag", table);
        r.put("name", a.pos(0));
        r.put("snapshot-id", id);
        return r;
    }

    private static Map<String, Object> snapshotsJson(Table table) {
        TableMetadata meta = ((HasTableOperations) table).operations().current();
        Map<String, Object> r = result("snapshots-json", table);
        r.put("metadata-location", meta.metadataFileLocation());
        r.put("format-version", meta.formatVersion());
        r.put("location", meta.location());
        r.put("last-sequence-number", meta.lastSequenceNumber());
        r.put("current-snapshot-id", meta.currentSnapshot() == null ? null : meta.currentSnapshot().snapshotId());
        Map<String, Object> refs = new TreeMap<>();
        for (Map.Entry<String, SnapshotRef> e : meta.refs().entrySet()) {
            Map<String, Object> ref = new LinkedHashMap<>();
            ref.put("snapshot-id", e.getValue().snapshotId());
            ref.put("type", e.getValue().isBranch() ? "branch" : "tag");
            refs.put(e.getKey(), ref);
        }
        r.put("refs", refs);
        List<Long> history = new ArrayList<>();
        if (meta.currentSnapshot() != null) {
            for (Snapshot s : SnapshotUtil.ancestorsOf(meta.currentSnapshot().snapshotId(), meta::snapshot)) {
                history.add(s.snapshotId());
            }
        }
        r.put("main-history", history);
        List<Map<String, Object>> snaps = new ArrayList<>();
        for (Snapshot s : meta.snapshots()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("snapshot-id", s.snapshotId());
            m.put("parent-snapshot-id", s.parentId());
            m.put("sequence-number", s.sequenceNumber());
            m.put("timestamp-ms", s.timestampMillis());
            m.put("operation", s.operation());
            m.put("manifest-list", s.manifestListLocation());
            m.put("summary", s.summary());
            snaps.add(m);
        }
        r.put("snapshots", snaps);
        List<Map<String, Object>> log = new ArrayList<>();
        for (TableMetadata.MetadataLogEntry e : meta.previousFiles()) {
            log.add(Map.of("metadata-file", e.file(), "timestamp-ms", e.timestampMillis()));
        }
        r.put("metadata-log", log);
        r.put("properties", meta.properties());
        return r;
    }

    /** The live data and delete files and the manifests of a snapshot (default: main's current one). */
    private static Map<String, Object> filesJson(Table table, Args a) throws IOException {
        Long id = a.longFlag("--snapshot");
        String branch = a.flag("--branch");
        a.check(0, 0);
        Snapshot s;
        if (id != null) {
            s = table.snapshot(id);
            if (s == null) throw new IllegalArgumentException("no snapshot " + id);
        } else if (branch != null) {
            s = table.snapshot(branch);
            if (s == null) throw new IllegalArgumentException("no branch " + branch);
        } else {
            s = table.currentSnapshot();
        }
        Map<String, Object> r = result("files-json", table);
        r.put("snapshot-id", s == null ? null : s.snapshotId());
        List<Map<String, Object>> data = new ArrayList<>();
        List<Map<String, Object>> deletes = new ArrayList<>();
        List<ManifestFile> manifests = s == null ? List.of() : s.allManifests(table.io());
        for (ManifestFile mf : manifests) {
            if (mf.content() == ManifestContent.DATA) {
                try (ManifestReader<DataFile> reader = ManifestFiles.read(mf, table.io(), table.specs())) {
                    for (DataFile f : reader) data.add(fileJson(f, mf));
                }
            } else {
                try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(mf, table.io(), table.specs())) {
                    for (DeleteFile f : reader) {
                        Map<String, Object> m = fileJson(f, mf);
                        m.put("content", contentName(f));
                        m.put("referenced-data-file", ContentFileUtil.referencedDataFileLocation(f));
                        m.put("equality-ids", f.equalityFieldIds());
                        m.put("content-offset", f.contentOffset());
                        deletes.add(m);
                    }
                }
            }
        }
        r.put("data-files", data);
        r.put("delete-files", deletes);
        r.put("manifests", manifestsJson(manifests));
        return r;
    }

    private static Map<String, Object> fileJson(ContentFile<?> f, ManifestFile mf) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", f.location());
        m.put("content", "data");
        m.put("format", f.format().name().toLowerCase(java.util.Locale.ROOT));
        m.put("records", f.recordCount());
        m.put("size", f.fileSizeInBytes());
        m.put("spec-id", f.specId());
        m.put("data-sequence-number", f.dataSequenceNumber());
        m.put("file-sequence-number", f.fileSequenceNumber());
        m.put("manifest", mf.path());
        return m;
    }
}
