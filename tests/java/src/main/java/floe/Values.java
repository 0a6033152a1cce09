package floe;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * JSON values in the encodings floe reads (docs/types.md) turned into the Java
 * objects Iceberg's generic records hold: Integer, Long, Float, Double,
 * BigDecimal (at the column's scale), String, UUID, ByteBuffer (binary, from
 * base64), byte[] (fixed), LocalDate, LocalTime, LocalDateTime (timestamp),
 * OffsetDateTime in UTC (timestamptz), List, Map, Record.
 */
final class Values {
    private Values() {}

    static final ObjectMapper JSON = new ObjectMapper()
        .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

    private static final Pattern TS = Pattern.compile(
        "(\\d{4}-\\d{2}-\\d{2})[ T](\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?)"
            + "(Z|z|[+-]\\d{2}(?::?\\d{2})?)?");

    static JsonNode parse(String text) {
        try {
            return JSON.readTree(text);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("bad JSON: " + e.getMessage(), e);
        }
    }

    /** One NDJSON row (an object keyed by column name) as a record of `schema`. */
    static Record row(Schema schema, JsonNode obj) {
        return struct(schema.asStruct(), obj, "");
    }

    private static Record struct(Types.StructType type, JsonNode obj, String path) {
        if (!obj.isObject()) throw new IllegalArgumentException(where(path) + "expected an object");
        GenericRecord rec = GenericRecord.create(type);
        for (Iterator<String> it = obj.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (type.field(name) == null) {
                throw new BadValue("unknown column " + join(path, name), null);
            }
        }
        List<Types.NestedField> fields = type.fields();
        for (int i = 0; i < fields.size(); i++) {
            Types.NestedField f = fields.get(i);
            JsonNode v = obj.get(f.name());
            Object value = v == null ? null : value(f.type(), v, join(path, f.name()));
            if (value == null && f.isRequired()) {
                throw new BadValue(join(path, f.name()) + " is declared not null", null);
            }
            rec.set(i, value);
        }
        return rec;
    }

    private static String join(String path, String name) {
        return path.isEmpty() ? name : path + "." + name;
    }

    private static String where(String path) {
        return path.isEmpty() ? "" : path + ": ";
    }

    /** `v` as a value of `type` (null for JSON null). */
    static Object value(Type type, JsonNode v, String path) {
        if (v == null || v.isNull()) return null;
        try {
            return convert(type, v, path);
        } catch (BadValue e) {
            throw e;
        } catch (IllegalArgumentException | ArithmeticException | java.time.DateTimeException e) {
            throw new BadValue(where(path) + "bad " + type + " value " + v + ": " + e.getMessage(), e);
        }
    }

    /** A value that does not fit its type; the message names the column. */
    static final class BadValue extends IllegalArgumentException {
        BadValue(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static Object convert(Type type, JsonNode v, String path) {
        switch (type.typeId()) {
            case BOOLEAN:
                if (!v.isBoolean()) throw new IllegalArgumentException("expected true or false");
                return v.booleanValue();
            case INTEGER:
                return integral(v).intValueExact();
            case LONG:
                return integral(v).longValueExact();
            case FLOAT:
                return (float) floating(v);
            case DOUBLE:
                return floating(v);
            case DECIMAL: {
                Types.DecimalType d = (Types.DecimalType) type;
                BigDecimal x = decimal(v).setScale(d.scale(), RoundingMode.HALF_UP);
                if (x.precision() > d.precision() && x.signum() != 0) {
                    throw new IllegalArgumentException("more than " + d.precision() + " digits");
                }
                return x;
            }
            case STRING:
                return v.isTextual() ? v.textValue() : v.toString();   // jsonb: its JSON text
            case UUID:
                return UUID.fromString(text(v));
            case BINARY:
                return ByteBuffer.wrap(Base64.getDecoder().decode(text(v)));
            case FIXED: {
                byte[] b = Base64.getDecoder().decode(text(v));
                int len = ((Types.FixedType) type).length();
                if (b.length != len) throw new IllegalArgumentException("expected " + len + " bytes");
                return b;
            }
            case DATE:
                return LocalDate.parse(text(v));
            case TIME:
                return LocalTime.parse(text(v));
            case TIMESTAMP:
            case TIMESTAMP_NANO: {
                boolean utc = type.typeId() == Type.TypeID.TIMESTAMP
                    ? ((Types.TimestampType) type).shouldAdjustToUTC()
                    : ((Types.TimestampNanoType) type).shouldAdjustToUTC();
                return timestamp(text(v), utc);
            }
            case LIST: {
                if (!v.isArray()) throw new IllegalArgumentException("expected an array");
                Types.ListType l = (Types.ListType) type;
                List<Object> out = new ArrayList<>();
                int i = 0;
                for (JsonNode e : v) {
                    Object x = value(l.elementType(), e, path + "[" + i++ + "]");
                    if (x == null && l.isElementRequired()) {
                        throw new IllegalArgumentException(path + ": null element in a list of not-null items");
                    }
                    out.add(x);
                }
                return out;
            }
            case MAP: {
                if (!v.isObject()) throw new IllegalArgumentException("expected an object");
                Types.MapType m = (Types.MapType) type;
                // entries sorted by key bytes, as floe stores them (equal maps are equal rows)
                Map<Object, Object> out = new java.util.TreeMap<>((x, y) -> Arrays.compareUnsigned(
                    x.toString().getBytes(StandardCharsets.UTF_8), y.toString().getBytes(StandardCharsets.UTF_8)));
                for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    Object key = value(m.keyType(), JSON.getNodeFactory().textNode(e.getKey()), path);
                    out.put(key, value(m.valueType(), e.getValue(), path + "[\"" + e.getKey() + "\"]"));
                }
                return out;
            }
            case STRUCT:
                return struct((Types.StructType) type, v, path);
            default:
                throw new IllegalArgumentException("type " + type + " is not supported");
        }
    }

    private static String text(JsonNode v) {
        if (!v.isTextual()) throw new IllegalArgumentException("expected a string");
        return v.textValue();
    }

    private static java.math.BigInteger integral(JsonNode v) {
        if (v.isIntegralNumber()) return v.bigIntegerValue();
        if (v.isNumber()) return v.decimalValue().toBigIntegerExact();
        throw new IllegalArgumentException("expected an integer");
    }

    private static double floating(JsonNode v) {
        if (v.isNumber()) return v.decimalValue().doubleValue();
        switch (text(v)) {
            case "NaN": return Double.NaN;
            case "Infinity": return Double.POSITIVE_INFINITY;
            case "-Infinity": return Double.NEGATIVE_INFINITY;
            default: throw new IllegalArgumentException("expected a number");
        }
    }

    private static BigDecimal decimal(JsonNode v) {
        if (v.isNumber()) return v.decimalValue();
        return new BigDecimal(text(v).trim());
    }

    /** "YYYY-MM-DD HH:MM:SS[.ffffff][Z|+HH[:MM]]" ('T' accepted). */
    static Object timestamp(String s, boolean utc) {
        Matcher m = TS.matcher(s.trim());
        if (!m.matches()) throw new IllegalArgumentException("expected YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM]");
        LocalDateTime local = LocalDateTime.of(LocalDate.parse(m.group(1)), LocalTime.parse(m.group(2)));
        String off = m.group(3);
        if (!utc) {
            if (off != null) throw new IllegalArgumentException("a timestamp without time zone has no offset");
            return local;
        }
        ZoneOffset zone = ZoneOffset.UTC;
        if (off != null && !off.equalsIgnoreCase("Z")) {
            String digits = off.substring(1).replace(":", "");
            int h = Integer.parseInt(digits.substring(0, 2));
            int min = digits.length() > 2 ? Integer.parseInt(digits.substring(2)) : 0;
            int sign = off.charAt(0) == '-' ? -1 : 1;
            zone = ZoneOffset.ofTotalSeconds(sign * (h * 3600 + min * 60));
        }
        return OffsetDateTime.of(local, zone).withOffsetSameInstant(ZoneOffset.UTC);
    }

    /**
     * A value as a generic reader returns it, made comparable with equals
     * (decimals at one scale, timestamptz in UTC, strings as String).
     */
    static Object normalize(Object v) {
        if (v instanceof CharSequence) return v.toString();
        if (v instanceof BigDecimal) return ((BigDecimal) v).stripTrailingZeros();
        if (v instanceof OffsetDateTime) return ((OffsetDateTime) v).withOffsetSameInstant(ZoneOffset.UTC);
        if (v instanceof byte[]) return ByteBuffer.wrap((byte[]) v);
        if (v instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object o : (List<?>) v) out.add(normalize(o));
            return out;
        }
        return v;
    }

    /** `column IN (values)` (null matching null) for conflict detection; true when not expressible. */
    static Expression inFilter(String column, Type type, List<Object> values) {
        if (!type.isPrimitiveType()) return Expressions.alwaysTrue();
        Expression out = Expressions.alwaysFalse();
        List<Object> literals = new ArrayList<>();
        for (Object v : values) {
            if (v == null) {
                out = Expressions.or(out, Expressions.isNull(column));
                continue;
            }
            Object lit = literal(v);
            if (lit == null) return Expressions.alwaysTrue();
            literals.add(lit);
        }
        if (!literals.isEmpty()) out = Expressions.or(out, Expressions.in(column, literals));
        return out;
    }

    private static Object literal(Object v) {
        if (v instanceof LocalDate) return (int) ((LocalDate) v).toEpochDay();
        if (v instanceof LocalTime) return ((LocalTime) v).toNanoOfDay() / 1000;
        if (v instanceof LocalDateTime) {
            return ChronoUnit.MICROS.between(LocalDateTime.of(1970, 1, 1, 0, 0), (LocalDateTime) v);
        }
        if (v instanceof OffsetDateTime) {
            return ChronoUnit.MICROS.between(
                OffsetDateTime.of(1970, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC), (OffsetDateTime) v);
        }
        if (v instanceof byte[]) return ByteBuffer.wrap((byte[]) v);
        if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Float
            || v instanceof Double || v instanceof BigDecimal || v instanceof String
            || v instanceof UUID || v instanceof ByteBuffer) {
            return v;
        }
        return null;
    }
}
