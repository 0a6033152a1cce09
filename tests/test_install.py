"""`make install` as an embedder uses it: the program, the header, libfloe.a
and libfloe.so with its soname and links, and floe.pc; the shared library
exports exactly the functions include/floe.h declares; examples/embed.c is
built against the *installed* library with pkg-config, shared and static,
its table read back by DuckDB and pyiceberg; `make uninstall` removes it all.
The same for a library built without the optional sources (WITH_PG=0,
WITH_KAFKA=0)."""
import os
import re
import subprocess

from conftest import BUILD, ROOT, SCALE
from iceberg_readers import duck, pyiceberg_catalog

SECONDS, SKUS = 20, 50


def model():
    """examples/embed.c's table after its stream: sku -> (stock, note)."""
    rows = {}
    for t in range(SECONDS):
        for sku in range(SKUS):
            if (sku + t) % 7 == 0 and t > 0:
                rows.pop(sku, None)
            elif (sku * 3 + t) % 4 == 0 or t == 0:
                rows[sku] = (sku * 10 + t, f"at {t}")
    return sorted((k, *v) for k, v in rows.items())


def declared():
    h = open(os.path.join(ROOT, "include", "floe.h")).read()
    return set(re.findall(r"\b(floe_[a-z0-9_]+)\s*\(", re.sub(r"/\*.*?\*/", "", h, flags=re.S)))


def install_embed_and_uninstall(tmp_path, build, *config):
    """make install with `config` from `build`, its checks, examples/embed.c
    built against it shared and static and read back, make uninstall."""
    prefix = tmp_path / "prefix"
    asan = "asan" in os.path.basename(BUILD)
    make = ["make", "-s", f"BUILD={build}", f"MODE={'asan' if asan else 'release'}",
            f"PREFIX={prefix}", *config]
    subprocess.run(make + ["install"], cwd=ROOT, check=True, timeout=900 * SCALE)
    lib = prefix / "lib"
    version = re.search(r'FLOE_VERSION_STRING "([^"]+)"',
                        open(os.path.join(ROOT, "include", "floe.h")).read()).group(1)
    major = version.split(".")[0]
    for f in ("bin/floe", "include/floe.h", "lib/libfloe.a", f"lib/libfloe.so.{version}",
              "lib/pkgconfig/floe.pc"):
        assert (prefix / f).is_file(), f
    assert os.readlink(lib / "libfloe.so") == f"libfloe.so.{major}"
    assert os.readlink(lib / f"libfloe.so.{major}") == f"libfloe.so.{version}"
    dyn = subprocess.run(["readelf", "-d", str(lib / f"libfloe.so.{version}")],
                         capture_output=True, text=True, check=True).stdout
    assert f"Library soname: [libfloe.so.{major}]" in dyn, dyn
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn))
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib / "libfloe.so")],
                        capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in nm.splitlines() if line.strip()}
    assert exported == declared(), (sorted(exported - declared()), sorted(declared() - exported))

    env = dict(os.environ, PKG_CONFIG_PATH=str(lib / "pkgconfig"))
    pc = lambda *a: subprocess.run(["pkg-config", *a, "floe"], env=env, capture_output=True,  # noqa: E731
                                   text=True, check=True).stdout.split()
    assert pc("--modversion") == [version]
    san = ["-fsanitize=address,undefined"] if asan else []
    src = os.path.join(ROOT, "examples", "embed.c")
    builds = {
        "shared": [*pc("--cflags"), *pc("--libs"), f"-Wl,-rpath,{lib}"],
        "static": [*pc("--cflags"), *[x if x != "-lfloe" else "-Wl,-Bstatic -lfloe -Wl,-Bdynamic"
                                      for x in pc("--static", "--libs")]],
    }
    for kind, flags in builds.items():
        exe = tmp_path / f"embed-{kind}"
        cmd = " ".join(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", *san, src, "-o",
                        str(exe), *flags])
        subprocess.run(cmd, shell=True, check=True, timeout=300 * SCALE)
        needs = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
        assert ("libfloe.so" in needs) == (kind == "shared"), needs
        d = tmp_path / kind
        d.mkdir()
        args = [str(exe), str(d / "catalog.db"), str(d / "wh")]
        first = subprocess.run(args, capture_output=True, text=True, timeout=300 * SCALE)
        assert first.returncode == 0, first.stderr
        assert f"libfloe {version} (compiled against {version})" in first.stdout
        again = subprocess.run(args, capture_output=True, text=True, timeout=300 * SCALE)
        assert again.returncode == 0 and "whole stream already" in again.stdout, again
        t = pyiceberg_catalog(str(d / "catalog.db"), f"file://{d / 'wh'}").load_table(
            "shop.inventory")
        got = sorted((r["sku"], r["stock"], r["note"]) for r in t.scan().to_arrow().to_pylist())
        assert got == model(), kind
        con = duck()
        try:
            rows = con.execute("SELECT sku, stock, note FROM iceberg_scan(?) ORDER BY sku",
                               [t.metadata_location]).fetchall()
        finally:
            con.close()
        assert [tuple(r) for r in rows] == model(), kind
    yield prefix, needed, pc("--static", "--libs")

    subprocess.run(make + ["uninstall"], cwd=ROOT, check=True)
    left = [os.path.join(dp, f) for dp, _, fs in os.walk(prefix) for f in fs]
    assert left == [], left


def test_install_embed_and_uninstall(tmp_path):
    for _, needed, static in install_embed_and_uninstall(tmp_path, BUILD):
        assert {"libpq.so.5", "librdkafka.so.1"} <= needed, needed
        assert "-lpq" in static and "-lrdkafka" in static, static


def test_a_library_without_the_postgres_and_kafka_sources(tmp_path):
    """make WITH_PG=0 WITH_KAFKA=0: neither libpq nor librdkafka is linked or
    asked for, the library exports the same functions (the sources' refuse,
    saying why), and a program that streams its own changes works."""
    build = tmp_path / "build"
    for prefix, needed, static in install_embed_and_uninstall(tmp_path, build, "WITH_PG=0",
                                                              "WITH_KAFKA=0"):
        assert not any("libpq" in n or "rdkafka" in n for n in needed), needed
        assert "-lpq" not in static and "-lrdkafka" not in static, static
        for cmd, what in ((["pg", "--tables", "public.t"], "Postgres source (make WITH_PG=0)"),
                          (["kafka", "--brokers", "localhost:9", "--topics", "t", "--format",
                            "upsert"], "Kafka source (make WITH_KAFKA=0)")):
            p = subprocess.run([str(prefix / "bin" / "floe"), *cmd, "--catalog",
                                f"sqlite:{tmp_path / 'c.db'}"], capture_output=True, text=True,
                               timeout=60 * SCALE)
            assert p.returncode == 1, p
            assert f"this libfloe was built without the {what}" in p.stderr, p.stderr
