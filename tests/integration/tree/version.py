#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One version: meson.build's project version (docs/deploy.md "Debian package").

meson passes it to the C code as DP_VERSION, which learnerd, ownerd and
dpasync print for --version (and the metrics' build_info); debian/changelog
cannot read meson.build, so its top entry must name the same version.
Run: version.py SOURCE_ROOT BUILD_ROOT MESON_VERSION
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, main, run


def test(argv):
    src, build, version = argv
    check(re.match(r'^\d+\.\d+\.\d+$', version), 'meson project version %r is not N.N.N' % version)
    with open(os.path.join(src, 'debian', 'changelog')) as f:
        top = f.readline()
    m = re.match(r'^dpasync \(([^)]+)\) \S+; urgency=\S+$', top.strip())
    check(m, 'debian/changelog: top line %r is not "dpasync (VERSION) DIST; urgency=U"' % top)
    check(m.group(1) == version,
          'debian/changelog says %s, meson.build %s: add a changelog entry (dch -v %s)'
          % (m.group(1), version, version))
    for b, path in (('learnerd', 'learner/learnerd'), ('ownerd', 'owner/ownerd'),
                    ('dpasync', 'tools/dpasync')):
        out = run([os.path.join(build, path), '--version']).stdout.strip()
        check(out == '%s %s' % (b, version), '%s --version printed %r, want "%s %s"'
              % (b, out, b, version))
    print('ok: meson.build, debian/changelog and the three --version agree on %s' % version)


if __name__ == '__main__':
    main(test)
