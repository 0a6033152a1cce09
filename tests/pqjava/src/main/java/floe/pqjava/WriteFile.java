package floe.pqjava;

import static org.apache.iceberg.types.Types.NestedField.optional;
import static org.apache.iceberg.types.Types.NestedField.required;

import java.io.File;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import org.apache.iceberg.Files;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.FileAppender;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;

/**
 * Writes a Parquet data file as Java Iceberg writes them: Parquet.write with GenericParquetWriter
 * (parquet-java underneath), every Iceberg type, nulls at every level, small pages and row
 * groups.  Prints the Iceberg schema (JSON) it wrote with, the projection the test reads with.
 *
 * <pre>WriteFile OUT ROWS CODEC v1|v2 DICTIONARY(true|false)</pre>
 */
public final class WriteFile {
  private static final Types.StructType POINT = point(22);
  private static final Types.StructType LISTED_POINT = point(27);

  private static Types.StructType point(int id) {
    return Types.StructType.of(
        optional(id, "x", Types.LongType.get()),
        optional(id + 1, "y", Types.ListType.ofRequired(id + 2, Types.IntegerType.get())));
  }

  static final Schema SCHEMA =
      new Schema(
          required(1, "id", Types.LongType.get()),
          optional(2, "i", Types.IntegerType.get()),
          optional(3, "s", Types.StringType.get()),
          optional(4, "b", Types.BooleanType.get()),
          optional(5, "f", Types.FloatType.get()),
          optional(6, "d", Types.DoubleType.get()),
          optional(7, "dec9", Types.DecimalType.of(9, 2)),
          optional(8, "dec38", Types.DecimalType.of(38, 10)),
          optional(9, "dt", Types.DateType.get()),
          optional(10, "tm", Types.TimeType.get()),
          optional(11, "ts", Types.TimestampType.withoutZone()),
          optional(12, "tz", Types.TimestampType.withZone()),
          optional(13, "u", Types.UUIDType.get()),
          optional(14, "fx", Types.FixedType.ofLength(7)),
          optional(15, "bin", Types.BinaryType.get()),
          optional(16, "tags", Types.ListType.ofOptional(17, Types.StringType.get())),
          optional(18, "m", Types.MapType.ofOptional(19, 20, Types.StringType.get(),
                                                     Types.IntegerType.get())),
          optional(21, "st", POINT),
          optional(25, "pts", Types.ListType.ofOptional(26, LISTED_POINT)));

  private static final String[] PLAIN_COLUMNS = {
    "id", "i", "s", "b", "f", "d", "dec9", "dec38", "dt", "tm", "ts", "tz", "u", "fx", "bin",
    "tags.list.element", "m.key_value.key", "m.key_value.value", "st.x", "st.y.list.element"
  };

  private WriteFile() {}

  private static boolean isNull(Random r) {
    return r.nextInt(7) == 0;
  }

  private static byte[] bytes(Random r, int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return b;
  }

  private static Record point(Random r, Types.StructType type) {
    Record p = GenericRecord.create(type);
    p.setField("x", isNull(r) ? null : r.nextLong());
    if (!isNull(r)) {
      List<Integer> y = new ArrayList<>();
      for (int k = r.nextInt(3); k > 0; k--) {
        y.add(r.nextInt());
      }
      p.setField("y", y);
    }
    return p;
  }

  private static Object value(Random r, String name, int i) {
    switch (name) {
      case "i": return r.nextInt();
      case "s": return i % 3 == 0 ? "v" + r.nextInt(10) : "text-" + r.nextInt() + "-é☃";
      case "b": return r.nextBoolean();
      case "f": return i % 11 == 0 ? Float.NaN : (float) r.nextGaussian() * 1000;
      case "d": return i % 13 == 0 ? Double.NEGATIVE_INFINITY : r.nextGaussian() * 1e100;
      case "dec9": return BigDecimal.valueOf(r.nextInt(999999999) - 499999999, 2);
      case "dec38": return new BigDecimal(new BigInteger(120, r).subtract(BigInteger.ONE.shiftLeft(119)), 10);
      case "dt": return LocalDate.ofEpochDay(r.nextInt(200000) - 100000);
      case "tm": return LocalTime.ofNanoOfDay((long) r.nextInt(86400) * 1000000000L + r.nextInt(1000000) * 1000L);
      case "ts": return LocalDateTime.of(2020, 1, 1, 0, 0).plusNanos((r.nextLong() >>> 20) * 1000L);
      case "tz": return OffsetDateTime.of(1999, 12, 31, 23, 59, 59, 0, ZoneOffset.UTC).plusNanos((long) i * 1000L);
      case "u": return new UUID(r.nextLong(), r.nextLong());
      case "fx": return bytes(r, 7);
      case "bin": return ByteBuffer.wrap(bytes(r, r.nextInt(20)));
      default: return null;
    }
  }

  private static Record row(Random r, int i) {
    Record rec = GenericRecord.create(SCHEMA);
    rec.setField("id", (long) i);
    for (Types.NestedField f : SCHEMA.columns()) {
      String n = f.name();
      if (n.equals("id") || isNull(r)) {
        continue;
      }
      if (n.equals("tags")) {
        List<String> tags = new ArrayList<>();
        for (int k = r.nextInt(4); k > 0; k--) {
          tags.add(isNull(r) ? null : "t" + r.nextInt(5));
        }
        rec.setField(n, tags);
      } else if (n.equals("m")) {
        Map<String, Integer> m = new LinkedHashMap<>();
        for (int k = r.nextInt(3); k > 0; k--) {
          m.put("k" + k, isNull(r) ? null : r.nextInt(100));
        }
        rec.setField(n, m);
      } else if (n.equals("st")) {
        rec.setField(n, point(r, POINT));
      } else if (n.equals("pts")) {
        List<Record> pts = new ArrayList<>();
        for (int k = r.nextInt(3); k > 0; k--) {
          pts.add(isNull(r) ? null : point(r, LISTED_POINT));
        }
        rec.setField(n, pts);
      } else {
        rec.setField(n, value(r, n, i));
      }
    }
    return rec;
  }

  public static void main(String[] args) throws Exception {
    File out = new File(args[0]);
    int rows = Integer.parseInt(args[1]);
    out.delete();
    Parquet.WriteBuilder b =
        Parquet.write(Files.localOutput(out))
            .schema(SCHEMA)
            .createWriterFunc(GenericParquetWriter::create)
            .set(TableProperties.PARQUET_COMPRESSION, args[2])
            .set(TableProperties.PARQUET_PAGE_VERSION, args[3])
            .set(TableProperties.PARQUET_PAGE_SIZE_BYTES, "2048")
            .set(TableProperties.PARQUET_PAGE_ROW_LIMIT, "300")
            .set(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "32768")
            .set(TableProperties.PARQUET_ROW_GROUP_CHECK_MIN_RECORD_COUNT, "10")
            .set(TableProperties.PARQUET_ROW_GROUP_CHECK_MAX_RECORD_COUNT, "100");
    if (!Boolean.parseBoolean(args[4])) {
      for (String c : PLAIN_COLUMNS) {
        b.withDictionaryEncoding(c, false);
      }
    }
    Random r = new Random(20261201L);
    try (FileAppender<Record> w = b.build()) {
      for (int i = 0; i < rows; i++) {
        w.add(row(r, i));
      }
    }
    System.out.println(SchemaParser.toJson(SCHEMA));
  }
}
