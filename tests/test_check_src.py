"""scripts/check-src.sh, the guard of the layering (docs/architecture.md):
clean on the tree as it is, and failing, with where and why, on a copy of
the tree given a forbidden include, an edge no file uses any more, a docs
page that quotes another list, or a raw allocation in library code."""
import os
import shutil
import subprocess

from conftest import ROOT, SCALE


def copy_tree(tmp_path):
    for d in ("src", "scripts", "docs"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    return tmp_path


def check(root):
    return subprocess.run(["bash", str(root / "scripts" / "check-src.sh")], capture_output=True,
                          text=True, timeout=120 * SCALE)


def test_the_tree_is_clean():
    p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "check-src.sh")],
                       capture_output=True, text=True, timeout=120 * SCALE)
    assert p.returncode == 0 and p.stdout.strip() == "check-src: clean", p.stdout


def test_a_forbidden_include_fails(tmp_path):
    root = copy_tree(tmp_path)
    f = root / "src" / "parquet" / "api.c"
    f.write_text('#include "sink/sink_internal.h"\n' + f.read_text())
    p = check(root)
    assert p.returncode == 1, p.stdout
    assert "src/parquet/api.c:1 includes sink/ from parquet/: not an edge" in p.stdout, p.stdout


def test_an_edge_no_file_uses_and_a_docs_page_that_differs_fail(tmp_path):
    root = copy_tree(tmp_path)
    # the only files of catalog/ that include io/ stop doing so
    for dp, _, fs in os.walk(root / "src" / "catalog"):
        for name in fs:
            f = os.path.join(dp, name)
            text = open(f).read()
            open(f, "w").write("\n".join(line for line in text.split("\n")
                                         if not line.startswith('#include "io/')))
    doc = root / "docs" / "architecture.md"
    doc.write_text(doc.read_text().replace("    mirror -> util source sink\n",
                                           "    mirror -> util source sink table\n"))
    p = check(root)
    assert p.returncode == 1, p.stdout
    assert "the edge catalog -> io is allowed but no file uses it" in p.stdout, p.stdout
    assert "docs/architecture.md does not quote the edges" in p.stdout, p.stdout
    assert "mirror -> util source sink table" in p.stdout, p.stdout


def test_a_raw_allocation_in_library_code_fails(tmp_path):
    root = copy_tree(tmp_path)
    f = root / "src" / "util" / "str.c"
    f.write_text(f.read_text() + "\nvoid *leak(void);\nvoid *leak(void) { return malloc(1); }\n")
    p = check(root)
    assert p.returncode == 1 and "raw allocation in library code" in p.stdout, p.stdout
    assert "src/util/str.c:" in p.stdout, p.stdout
