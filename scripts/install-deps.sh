#!/usr/bin/env bash
# Installs what building and testing floe needs: Debian packages (compiler,
# libraries, valgrind, a JDK and Maven), the Python readers the tests check
# floe against (and pyspark), the Java reader, Spark's Iceberg runtime and
# Apache's REST catalog server and Apache Kafka's broker (Maven),
# and versitygw, the S3 server of the S3 tests (built with Go into $GOBIN
# or $(go env GOPATH)/bin).
# Safe to run again: it skips what is already there.
#
#   scripts/install-deps.sh          everything the test suite needs
#   scripts/install-deps.sh --demo   only what the demos need (no Java, no Go)
# The postgresql package is the server of the Postgres tests and of
# scripts/demo-pg.sh; its own cluster (Debian starts one) is not used: the
# tests and the demo start throwaway clusters of their own.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=false
[ "${1:-}" = "--demo" ] && demo=true

APT_PACKAGES="build-essential pkg-config libzstd-dev libsnappy-dev zlib1g-dev \
libsqlite3-dev libjansson-dev libcurl4-openssl-dev libpq-dev librdkafka-dev postgresql valgrind \
python3 python3-pip"
if ! $demo; then
    command -v mvn >/dev/null 2>&1 || APT_PACKAGES="$APT_PACKAGES maven"
    command -v javac >/dev/null 2>&1 || APT_PACKAGES="$APT_PACKAGES default-jdk-headless"
fi

missing=""
for p in $APT_PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "install-deps: apt packages:$missing"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

log=$(mktemp)
pip_install() { python3 -m pip install -q --disable-pip-version-check "$@" -r tests/requirements.txt >"$log" 2>&1; }
# Debian's own python refuses system-wide installs unless told otherwise.
if ! pip_install && ! { grep -q externally-managed "$log" && pip_install --break-system-packages; }; then
    cat "$log" >&2
    exit 1
fi
rm -f "$log"
# DuckDB's extensions from their PyPI wheels into DuckDB's extension
# directory (under $HOME), so no test (and not the demo) makes DuckDB try to
# download one: the list is tests/iceberg_readers.py's EXTENSIONS.
python3 -c 'from duckdb_extensions import import_extension
for e in ("avro", "iceberg", "httpfs"):
    import_extension(e)'
if $demo; then
    echo "install-deps: done (demo)"
    exit 0
fi
# The Java reader (Iceberg's JdbcCatalog + IcebergGenerics) used by the tests.
if [ ! -f tests/java/target/classes/floe/Reader.class ] ||
   [ -n "$(find tests/java/src tests/java/pom.xml -newer tests/java/target/classes/floe/Reader.class)" ]; then
    (cd tests/java && mvn -q -B package -DskipTests)
fi
# Apache Iceberg's REST catalog server (test fixture) and its classpath.
if [ ! -d tests/rest/target/lib ] ||
   [ -n "$(find tests/rest/src tests/rest/pom.xml -newer tests/rest/target/lib)" ]; then
    (cd tests/rest && mvn -q -B package -DskipTests && touch target/lib)
fi
# Iceberg's Spark runtime and the SQLite JDBC driver, for the tests where
# Spark reads and writes floe's tables (tests/spark_engine.py; pyspark is
# in tests/requirements.txt).
if [ ! -d tests/spark/jars ] || [ tests/spark/pom.xml -nt tests/spark/jars ]; then
    mvn -q -B -f tests/spark/pom.xml dependency:copy-dependencies && touch tests/spark/jars
fi
# Apache Kafka (a single KRaft node) for the Kafka tests (tests/kafkaserver.py).
if [ ! -d tests/kafka/jars ] || [ tests/kafka/pom.xml -nt tests/kafka/jars ]; then
    mvn -q -B -f tests/kafka/pom.xml dependency:copy-dependencies && touch tests/kafka/jars
fi
# Debezium's Postgres connector in a Kafka Connect worker (tests/debezium_connect.py).
if [ ! -d tests/debezium/jars ] || [ tests/debezium/pom.xml -nt tests/debezium/jars ]; then
    mvn -q -B -f tests/debezium/pom.xml dependency:copy-dependencies && touch tests/debezium/jars
fi
# versitygw: an S3 server that verifies SigV4, for tests/test_s3*.py.
VERSITYGW_VERSION=v1.7.0
gobin=$(go env GOBIN 2>/dev/null || true)
[ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null | cut -d: -f1)/bin"
if ! command -v go >/dev/null 2>&1; then
    echo "install-deps: go is missing: the S3 tests need versitygw (go install)" >&2
    exit 1
elif [ ! -x "$gobin/versitygw" ] ||
     ! go version -m "$gobin/versitygw" 2>/dev/null | grep -q "versitygw[[:space:]]*$VERSITYGW_VERSION"; then
    echo "install-deps: versitygw $VERSITYGW_VERSION into $gobin"
    CGO_ENABLED=0 go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
fi
# ---- tests/pqjava (the Parquet reader's tests) --------------------------------
# Java Iceberg's Parquet writer, run by tests/test_parquet_reader.py.
if [ ! -f tests/pqjava/target/classes/floe/pqjava/WriteFile.class ] ||
   [ -n "$(find tests/pqjava/src tests/pqjava/pom.xml -newer tests/pqjava/target/classes/floe/pqjava/WriteFile.class)" ]; then
    (cd tests/pqjava && mvn -q -B package -DskipTests)
fi
# ---- end of tests/pqjava --------------------------------------------------------
echo "install-deps: done"
