#!/usr/bin/env python3
# Usage: Tools/count-members.py LocalAuthService Sources/LocalAuthService (issue 21: members of the largest type)
"""Count members of a Swift type across its declaration and extensions.
Members: func/init/deinit/subscript/var/let/case/typealias/nested types declared at
depth 1 of `class|struct|actor T` or `extension T` bodies. Stored properties:
var/let at depth 1 of the type's own body that are not computed (no `{` get-block
after the declaration on the same line, other than willSet/didSet)."""
import re, sys, pathlib
name = sys.argv[1]; root = pathlib.Path(sys.argv[2])
decl = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|final|open|nonisolated|static|class|override|lazy|weak|unowned|mutating|convenience|required|private\(set\)|fileprivate\(set\)|dynamic)\s+)*(func|init|deinit|subscript|var|let|typealias|struct|class|enum|actor|protocol)\b')
opener = re.compile(r'^\s*(?:@\w+\s+)*(?:(?:public|private|fileprivate|internal|final|nonisolated)\s+)*(class|struct|actor|extension)\s+' + re.escape(name) + r'\b')
def strip(line):
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split('//')[0]
members = stored = 0; files = set()
for f in sorted(root.rglob('*.swift')):
    depth = 0; inside = None; ext_depth = None; in_block_comment = False
    for raw in f.read_text().splitlines():
        line = strip(raw)
        if '/*' in line and '*/' not in line: in_block_comment = True; continue
        if in_block_comment:
            if '*/' in line: in_block_comment = False
            continue
        if inside is None and opener.match(line):
            inside = opener.match(line).group(1); ext_depth = depth
        elif inside is not None and depth == ext_depth + 1:
            m = decl.match(line)
            if m:
                members += 1; files.add(f.name)
                if inside != 'extension' and m.group(1) in ('var', 'let'):
                    rest = line[m.end():]
                    computed = '{' in rest and not re.search(r'\{\s*(didSet|willSet)', rest) and '= {' not in rest and not re.search(r'=\s*\S.*\{', rest)
                    if not computed: stored += 1
        depth += line.count('{') - line.count('}')
        if inside is not None and depth <= ext_depth and ('}' in line):
            inside = None
print(f"{name}: {members} members, {stored} stored properties, in {len(files)} files")
