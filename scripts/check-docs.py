#!/usr/bin/env python3
"""Every source file the docs name exists: each `…/Name.swift` (or `Name.swift`, `Name.py`, `name.sh`) in backticks in
README.md and docs/*.md must be the end of a path in the repository. Counts and version lists drift unless something
checks them, so the docs hold none; paths are checked here (scripts/test.sh runs this)."""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
suffixes = set()
for f in files:
    parts = f.split("/")
    for i in range(len(parts)):
        suffixes.add("/".join(parts[i:]))

# A path in backticks: letters, digits, _ + - . and slashes, ending in a source extension, maybe with `:line`.
cited = re.compile(r"`([A-Za-z0-9_+./-]+\.(?:swift|py|sh))(?::[0-9]+(?:[–-][0-9]+)?)?`")
missing = []
for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for path in cited.findall(line):
            # `SQLiteStore+<Aggregate>.swift`-style patterns and wildcards are not paths.
            if "<" in path or "*" in path:
                continue
            if path.removeprefix("./") not in suffixes:
                missing.append(f"{doc.relative_to(root)}:{number}: `{path}` names no file in the repository")
if missing:
    print("\n".join(missing))
    sys.exit(1)
print(f"the docs name only files that exist ({len(files)} files in the repository)")
