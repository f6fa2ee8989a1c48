#!/usr/bin/env python3
"""Which folder's types each folder of the service names (make ties).

Reads Sources/LocalAuthService: a type is a top-level class, struct, enum,
protocol, actor or typealias; a folder names it when its name appears in
that folder's code (comments and string literals left out). Files directly
under the service are "(root)" (the loop, the clock, logind: the floor's
floor), except Service.swift, the composition root, which names everything. Prints, for each folder, the folders it
names and which of their types, then the mutual ties (two folders that name
each other), the number docs/DESIGN.md's "Layers" quotes. Layering is
enforced by LayeringTests; this is the measure.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "Sources/LocalAuthService"
DECL = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|internal|private|fileprivate|package|final|nonisolated|indirect)\s+)*"
    r"(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z]\w*)", re.M)
IDENT = re.compile(r"(?<![.\w])[A-Z]\w*\b")  # a .Name is a member, not a type of ours


def strip(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    code = re.sub(r'"""(?:.|\n)*?"""', '""', code)
    code = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', code)
    return re.sub(r"//[^\n]*", " ", code)


def folder_of(path):
    rel = os.path.relpath(path, ROOT)
    if rel == "Service.swift":
        return "Service.swift"  # the composition root: above everything
    return rel.split(os.sep)[0] if os.sep in rel else "(root)"


files = {}
for dirpath, _, names in os.walk(ROOT):
    for name in names:
        if name.endswith(".swift"):
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                files[path] = strip(f.read())

owner = {}
for path, code in files.items():
    for name in DECL.findall(code):
        owner.setdefault(name, folder_of(path))

# A nested type's own declaration (`final class Call` inside another type)
# names nothing: only its uses do.
NESTED = re.compile(r"\b(class|struct|enum|protocol|actor|typealias)\s+[A-Z]\w*")

names = {}
for path, code in files.items():
    here = folder_of(path)
    for ident in set(IDENT.findall(NESTED.sub(r"\1 _", code))):
        there = owner.get(ident)
        if there and there != here:
            names.setdefault(here, {}).setdefault(there, set()).add(ident)

for folder in sorted(names):
    print(f"{folder} names:")
    for there in sorted(names[folder]):
        print(f"  {there}: {', '.join(sorted(names[folder][there]))}")
mutual = sorted((a, b) for a in names for b in names[a] if a < b and a in names.get(b, {}))
print(f"mutual ties: {len(mutual)}")
for a, b in mutual:
    print(f"  {a} <-> {b}")
