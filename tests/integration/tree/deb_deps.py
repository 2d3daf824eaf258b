#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One list of build dependencies (docs/deploy.md §4 "Debian package").

scripts/deps.sh installs what compiling needs (its BUILD_PKGS: the README's
route, CI and the image's build stage) and debian/control declares what
building the package needs (Build-Depends, which dpkg-buildpackage checks).
The image builds the package with exactly BUILD_PKGS installed, so a
library missing from Build-Depends would go unnoticed there and fail on a
clean build machine; one missing from BUILD_PKGS would fail only the
package.  The two must name the same packages, but for what each side
gets elsewhere: gcc and libc6-dev (build-essential, which
dpkg-buildpackage assumes), debhelper's own entries, and the unit tests'
cmocka and python3 (deps.sh installs them outside BUILD_PKGS).
A self-test first refuses a control file with one library left out.
Run: deb_deps.py SOURCE_ROOT
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import check, main

# What each side gets from elsewhere (see above).
ONLY_DEPS = {'gcc', 'libc6-dev'}
ONLY_CONTROL = {'debhelper-compat', 'dh-sequence-installsysusers', 'python3', 'libcmocka-dev'}


def build_pkgs(text):
    m = re.search(r'^BUILD_PKGS=\((.*?)^\)', text, re.S | re.M)
    check(m, 'scripts/deps.sh: no BUILD_PKGS=( ... ) array')
    return set(re.sub(r'#.*', '', m.group(1)).split())


def build_depends(text):
    m = re.search(r'^Build-Depends:(.*?)(?=^\S)', text, re.S | re.M)
    check(m, 'debian/control: no Build-Depends field')
    names = set()
    for item in m.group(1).split(','):
        item = re.sub(r'\(.*?\)|<.*?>|\[.*?\]', '', item).strip()
        if item:
            names.add(item.split('|')[0].strip())
    return names


def differences(deps_text, control_text):
    a = build_pkgs(deps_text) - ONLY_DEPS
    b = build_depends(control_text) - ONLY_CONTROL
    return sorted(a - b), sorted(b - a)


def test(argv):
    src = argv[0]
    deps = open(os.path.join(src, 'scripts', 'deps.sh')).read()
    control = open(os.path.join(src, 'debian', 'control')).read()
    # Self-test: the comparison sees one library left out of the control file.
    broken = re.sub(r'^\s*libuv1-dev,\n', '', control, flags=re.M)
    check(broken != control and differences(deps, broken) == (['libuv1-dev'], []),
          'self-test: a control file without libuv1-dev was not caught: %r'
          % (differences(deps, broken),))
    only_deps, only_control = differences(deps, control)
    check(not only_deps and not only_control,
          'scripts/deps.sh BUILD_PKGS and debian/control Build-Depends differ: only in deps.sh '
          '%s, only in debian/control %s: name each build dependency in both' % (only_deps, only_control))
    print('ok: scripts/deps.sh and debian/control name the same %d build dependencies'
          % len(build_pkgs(deps) - ONLY_DEPS))


if __name__ == '__main__':
    main(test)
