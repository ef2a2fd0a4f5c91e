"""Check an installed memtrace (a wheel in a clean virtualenv, `.ci/run`): it is imported from
site-packages, not from a clone, and every data file the package reads at run time is there.

    VENV/bin/python -I scripts/check_wheel.py      (-I: the clone's folder is not on sys.path)
"""

from __future__ import annotations

import sys
from importlib import metadata, resources

import memtrace

DATA = {
    "memtrace.review": ["templates/case.html", "templates/base.html", "static/review.js"],
    "memtrace.server": ["pom.xml"],
    "memtrace.systems": ["sample/locomo_sample.json"],
    "memtrace.loaders": ["native_schema.json"],
    "memtrace.cypher": ["review/queue_cases.cypher", "patterns/failure_classes.cypher"],
}


def main() -> None:
    where = memtrace.__file__ or ""
    if "site-packages" not in where:
        sys.exit(f"memtrace comes from {where}, not from the installed wheel")
    missing = [
        f"{package}/{path}"
        for package, paths in DATA.items()
        for path in paths
        if not resources.files(package).joinpath(path).is_file()
    ]
    if missing:
        sys.exit(f"the wheel lacks {', '.join(missing)}")
    version = metadata.version("memtrace-graph")
    print(f"memtrace-graph {version} from {where}: every data file present")


if __name__ == "__main__":
    main()
