package floe;

import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * Opens the catalog floe's tests name as {@code DB WAREHOUSE CATALOG}: DB is a
 * SQLite file (Iceberg's JdbcCatalog with {@code jdbc.schema-version=V1}, the
 * tables pyiceberg and floe share) or an http(s):// REST catalog URI
 * (RESTCatalog; WAREHOUSE, when not empty, is sent as its warehouse).
 * Shared by {@link Reader} and {@link Engine}.
 */
final class Catalogs {
    private Catalogs() {}

    /**
     * Extra catalog properties from FLOE_JAVA_CATALOG_PROPS ("k=v" pairs
     * separated by newlines), e.g. io-impl and s3.endpoint for tables on S3.
     */
    static Map<String, String> envProps() {
        return parseProps(System.getenv("FLOE_JAVA_CATALOG_PROPS"));
    }

    static Map<String, String> parseProps(String text) {
        Map<String, String> props = new HashMap<>();
        if (text == null) return props;
        for (String line : text.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) props.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return props;
    }

    static Catalog open(String db, String warehouse, String name) {
        return open(db, warehouse, name, envProps());
    }

    /** Opens the catalog with `extra` properties (copied, never modified). */
    static Catalog open(String db, String warehouse, String name, Map<String, String> extra) {
        Map<String, String> props = new HashMap<>(extra == null ? Map.of() : extra);
        if (db.startsWith("http://") || db.startsWith("https://")) {
            RESTCatalog rest = new RESTCatalog();
            rest.setConf(new Configuration());
            props.put("uri", db);
            if (!warehouse.isEmpty()) props.put("warehouse", warehouse);
            rest.initialize(name, props);
            return rest;
        }
        JdbcCatalog catalog = new JdbcCatalog();
        catalog.setConf(new Configuration());
        props.put("uri", "jdbc:sqlite:" + db);
        props.put("warehouse", warehouse);
        props.put("jdbc.schema-version", "V1");
        catalog.initialize(name, props);
        return catalog;
    }

    static void close(Catalog catalog) {
        if (catalog instanceof java.io.Closeable) {
            try {
                ((java.io.Closeable) catalog).close();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }
}
