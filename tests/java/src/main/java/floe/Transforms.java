package floe;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.iceberg.SingleValueParser;
import org.apache.iceberg.transforms.Transform;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Iceberg's own partition transforms (org.apache.iceberg.transforms.Transforms)
 * on values from stdin, for tests/test_partition_transforms.py, which compares
 * them with floe's (build/tests/test_partition_tool).
 *
 * Each input line is {"type": "decimal(9,2)", "transform": "bucket[16]",
 * "values": [v, ...]} with every value in Iceberg's single-value JSON form
 * (null allowed); each output line is a JSON array of the results in the form
 * test_partition_tool prints them: ints, longs, dates, times and timestamps as
 * plain integers (days, microseconds), decimals as plain strings, binary and
 * fixed as hex, uuids and strings as strings; an exception as "ERROR message".
 */
public final class Transforms {
    private Transforms() {}

    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode c = json.readTree(line);
            Type type = Types.fromPrimitiveString(c.get("type").asText());
            @SuppressWarnings("unchecked")
            Transform<Object, Object> t = (Transform<Object, Object>)
                org.apache.iceberg.transforms.Transforms.fromString(type, c.get("transform").asText());
            Function<Object, Object> f = t.bind(type);
            ArrayNode results = json.createArrayNode();
            for (JsonNode v : c.get("values")) {
                try {
                    Object value = v.isNull() ? null : SingleValueParser.fromJson(type, v);
                    if (value instanceof byte[]) {
                        value = ByteBuffer.wrap((byte[]) value);
                    }
                    results.add(text(json, f.apply(value)));
                } catch (RuntimeException e) {
                    results.add("ERROR " + e);
                }
            }
            out.println(json.writeValueAsString(results));
        }
        out.flush();
    }

    /** One result as JSON text, in test_partition_tool's form. */
    private static String text(ObjectMapper json, Object r) throws Exception {
        if (r == null) {
            return "null";
        }
        if (r instanceof Integer || r instanceof Long) {
            return r.toString();
        }
        if (r instanceof BigDecimal) {
            return json.writeValueAsString(((BigDecimal) r).toPlainString());
        }
        if (r instanceof ByteBuffer || r instanceof byte[]) {
            ByteBuffer b = r instanceof byte[] ? ByteBuffer.wrap((byte[]) r) : ((ByteBuffer) r).duplicate();
            StringBuilder hex = new StringBuilder();
            while (b.hasRemaining()) {
                hex.append(String.format("%02x", b.get() & 0xff));
            }
            return json.writeValueAsString(hex.toString());
        }
        return json.writeValueAsString(r.toString());      // strings, uuids
    }
}
