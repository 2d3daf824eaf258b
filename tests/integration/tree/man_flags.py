#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The man pages list exactly the flags of the binaries' --help.

For learnerd(8) and ownerd(8) the flags that `--help` defines (its lines
"  -c, --config FILE   ...") must be the flags that the page defines (its
scdoc lines that begin with a bold flag, "*-c*, *--config* _FILE_").  For
dpasync(1), each subcommand's `dpasync SUB --help` (and `ledger
raise-lifetime`, `ledger lower-lifetime`, `sim --mode p2p`) is held to the
page's section "## dpasync SUB ...", the top-level --help to "# OPTIONS",
and every subcommand `dpasync --help` lists must have its section.
`--[no-]x` counts as one flag --x on both sides.  Flags named in running
text (descriptions) do not count.

The checker first runs on a page with one flag removed and one added,
which it must refuse, so that it cannot pass by matching nothing.
Run: man_flags.py SOURCE_ROOT BUILD_ROOT
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, main, run

FLAG = re.compile(r'^-{1,2}[A-Za-z0-9\[][A-Za-z0-9\[\]-]*$')
# A bold flag in scdoc at the start of a definition line: *--listen*
SCD_FLAG = re.compile(r'\*(-{1,2}[A-Za-z0-9\[][A-Za-z0-9\[\]-]*)\*')


def norm(flag):
    return flag.replace('[no-]', '')


def help_flags(text):
    """The flags a --help text defines: the flags that begin a
    two-space-indented line, up to the first word that is not one (a
    metavariable, or the description after a run of spaces)."""
    out = set()
    for line in text.splitlines():
        if not re.match(r'^  -{1,2}[A-Za-z0-9\[]', line):
            continue
        for tok in line.replace(',', ' ').split():
            if not FLAG.match(tok):
                break
            out.add(norm(tok))
    return out


def page_sections(text):
    """{heading: body} of an scdoc page, split at every '#' heading."""
    secs, name, body = {}, '', []
    for line in text.splitlines():
        if line.startswith('#'):
            secs[name] = '\n'.join(body)
            name, body = line.lstrip('#').strip(), []
        else:
            body.append(line)
    secs[name] = '\n'.join(body)
    return secs


def page_flags(text):
    out = set()
    for line in text.splitlines():
        if line.startswith('*-'):
            out |= {norm(f) for f in SCD_FLAG.findall(line)}
    return out


def compare(what, helped, paged, errors):
    if not helped:
        errors.append('%s: --help defines no flags: the parser is broken' % what)
    for f in sorted(helped - paged):
        errors.append('%s: %s is in --help but not in the man page' % (what, f))
    for f in sorted(paged - helped):
        errors.append('%s: %s is in the man page but not in --help' % (what, f))


def check_pages(src, bins):
    errors, n = [], 0
    for b, page in (('learnerd', 'learner/learnerd.8.scd'), ('ownerd', 'owner/ownerd.8.scd')):
        helped = help_flags(run([bins[b], '--help']).stdout)
        compare(b + '(8)', helped, page_flags(open(os.path.join(src, page)).read()), errors)
        n += len(helped)
    secs = page_sections(open(os.path.join(src, 'tools', 'dpasync.1.scd')).read())
    top = run([bins['dpasync'], '--help']).stdout
    subs = re.findall(r'^  ([a-z][a-z0-9-]*)  ', top, re.M)
    check(len(subs) >= 8, 'dpasync --help lists only %r' % subs)
    cases = [('OPTIONS', [], top)]
    for s in subs + ['ledger raise-lifetime', 'ledger lower-lifetime', 'sim --mode p2p']:
        argv = s.split()
        cases.append(('dpasync ' + s, argv, None))
    for name, argv, text in cases:
        if text is None:
            text = run([bins['dpasync']] + argv + ['--help']).stdout
        if name not in secs:
            errors.append('dpasync(1): no section "%s"' % name)
            continue
        helped = help_flags(text)
        compare('dpasync(1) "%s"' % name, helped, page_flags(secs[name]), errors)
        n += len(helped)
    return errors, n, len(cases)


def test(argv):
    src, build = argv[0], argv[1]
    bins = {'learnerd': os.path.join(build, 'learner', 'learnerd'),
            'ownerd': os.path.join(build, 'owner', 'ownerd'),
            'dpasync': os.path.join(build, 'tools', 'dpasync')}
    # The checker refuses a page that lost a flag or gained one.
    helped = help_flags('  -c, --config FILE   read\n  --[no-]bias    x --not-this\n'
                        'Usage --nor-this\n  --mode a|b\n  - a list, not --that\n'
                        '  --t, --T N    both\n')
    check(helped == {'-c', '--config', '--bias', '--mode', '--t', '--T'},
          'help parser: %r' % helped)
    errs = []
    compare('self-test', helped, page_flags('*-c*, *--config* _FILE_\n\tsee *--bias*\n'
                                            '*--[no-]bias*\n*--extra*\n*--t*, *--T* _N_\n'), errs)
    check(len(errs) == 2 and '--mode' in errs[0] and '--extra' in errs[1],
          'the checker does not refuse a missing and an extra flag: %r' % errs)

    errors, n, sections = check_pages(src, bins)
    if errors:
        raise Fail('%d mismatch(es) between --help and the man pages:\n  %s'
                   % (len(errors), '\n  '.join(errors)))
    print('ok: %d flags of learnerd, ownerd and %d dpasync sections match their man pages'
          % (n, sections))


if __name__ == '__main__':
    main(test)
