"""Apache Spark (pyspark, Iceberg's Spark runtime) on floe's tables, for the
tests where Spark itself is the peer: it reads what floe wrote, and writes
rows into floe's tables between floe runs.

One local Spark session per test process (started on first use, a few tens
of seconds), local[2] with a 2g driver; each table is reached through a
JdbcCatalog on the test's SQLite catalog file (catalog name `floe`, as floe
and pyiceberg use it) in a Spark session of its own, so no catalog state
leaks between tests.  The jars come from
tests/spark/jars (scripts/install-deps.sh fetches them).
"""
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))
JARS = os.path.join(HERE, "spark", "jars")
_session = None


def session():
    global _session
    if _session is None:
        from pyspark.sql import SparkSession
        jars = sorted(glob.glob(os.path.join(JARS, "*.jar")))
        assert jars, f"no Spark jars in {JARS}: run scripts/install-deps.sh"
        _session = (
            SparkSession.builder.master("local[2]").appName("floe-tests")
            .config("spark.jars", ",".join(jars))
            .config("spark.driver.memory", "2g")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.extensions",
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .getOrCreate())
        _session.sparkContext.setLogLevel("ERROR")
    return _session


def on(db, warehouse):
    """A Spark session of the shared JVM whose catalog `floe` is a
    JdbcCatalog on floe's SQLite catalog file `db` (a new session: catalogs
    load once per session)."""
    s = session().newSession()
    c = "spark.sql.catalog.floe"
    for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "jdbc",
                 ".uri": f"jdbc:sqlite:{db}", ".jdbc.schema-version": "V1",
                 ".warehouse": warehouse, ".cache-enabled": "false"}.items():
        s.conf.set(c + k, v)
    return s
