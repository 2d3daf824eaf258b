#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The licence is stated once and carried by every source file.

LICENSE at the top is the Apache License 2.0, and every source, build,
script and deployment file under the source tree names it in an
SPDX-License-Identifier line among its first two lines (after a shebang).
Data, documentation, JSON, fuzz corpora and dictionaries carry none.
Run: license.py SOURCE_ROOT
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, main

IDENT = 'SPDX-License-Identifier: Apache-2.0'
DIRS = ['common', 'learner', 'owner', 'tools', 'proto', 'tests', 'scripts', 'deploy', '.ci']
TOP = ['meson.build', 'meson_options.txt']
EXT = ('.c', '.h', '.proto', '.py', '.sh', '.yml', '.yaml', '.conf', '.service')
NAMES = ('meson.build', 'Dockerfile', 'run')
SKIP_DIRS = ('corpus', '__pycache__', 'node_modules')


def sources(root):
    for name in TOP:
        yield os.path.join(root, name)
    for d in DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, d)):
            dirnames[:] = [n for n in dirnames if n not in SKIP_DIRS]
            for f in files:
                if f.endswith(EXT) or f in NAMES:
                    yield os.path.join(dirpath, f)


def test(argv):
    root = argv[0]
    text = open(os.path.join(root, 'LICENSE')).read()
    check('Apache License' in text[:200] and 'Version 2.0' in text[:300],
          'LICENSE is not the Apache License 2.0')
    missing, n = [], 0
    for path in sources(root):
        with open(path, encoding='utf-8', errors='replace') as f:
            head = [f.readline() for _ in range(3)]
        if head[0].startswith('#!'):
            head = head[1:]
        n += 1
        if not any(IDENT in l for l in head[:2]):
            missing.append(os.path.relpath(path, root))
    check(n > 200, 'only %d source files found under %s' % (n, root))
    if missing:
        raise Fail('%d file(s) without "%s" in their first lines: %s'
                   % (len(missing), IDENT, ', '.join(sorted(missing)[:20])))
    print('ok: LICENSE is Apache-2.0; %d source files carry its SPDX line' % n)


if __name__ == '__main__':
    main(test)
