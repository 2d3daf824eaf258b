#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every reference to a document resolves (docs/README.md).

Code (C, headers, Python, shell, meson, deployment files), the pages of
docs/ and the README refer to sections of the documents in these forms:

    docs/ledger.md §9                 docs/bench-daemons.md §7.3.1
    docs/design.md §4–5               docs/deploy.md §2.4, §2.6
    docs/ledger.md §9 "Off the loop"  (the name is looked for inside §9)
    docs/learnerd.md "Descriptors"    docs/deploy.md, "systemd"
    docs/deploy.md ("systemd", "Startup kits")
    README "Architecture"             README.md "Metrics"

A page may be named without docs/ (privacy.md §7), and inside a page of
docs/ (or the README) a § without a page names a section of that page.
A reference may run over the lines of a comment or of a C string.

A number §N, §N.M resolves to a heading numbered so ("## 9. Title",
"### 7.3.1 Title"), or §N.M to item M of a numbered list in section N.
A quoted name resolves to a heading, or to a bold lead-in (**Name** at
the start of a paragraph or of a list item), that begins with it, case
and Markdown aside (theta, epsilon and psi stand for the Greek letters);
a heading that joins two subjects with "and" ("Signals and exit codes")
begins with either.  Every page named this way, or as docs/x.md anywhere,
must exist.  And every relative link of a Markdown file, [text](path) or
[text](path#anchor), points to an existing file (and to a heading of it,
anchors made as GitHub makes them).

The checker first runs on examples it must accept and must refuse, so it
cannot pass by finding nothing; then on the tree.
Run: doc_refs.py SOURCE_ROOT
"""
import bisect
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import Fail, check, main

DIRS = ['common', 'learner', 'owner', 'tools', 'proto', 'tests', 'scripts', 'deploy', '.ci',
        'docs']
TOP = ['README.md', 'meson.build', 'meson_options.txt']
EXT = ('.c', '.h', '.proto', '.py', '.sh', '.build', '.txt', '.yml', '.yaml', '.conf',
       '.service', '.md', '.mjs')
NAMES = ('Dockerfile', 'run')
SKIP_DIRS = ('corpus', '__pycache__', 'node_modules', 'figures', 'results', 'schemas')

PAGE = r'(?<![\w/.-])(README(?:\.md)?|docs/[\w.-]+\.md|[\w-]+\.md)'
NUM = r'§\s?\d+(?:\.\d+)*(?:[–-]\d+(?:\.\d+)*)?'
NAME = r'"[A-Za-z0-9`][^"\n]{0,79}"'
ITEMS = r'(?:(?:[\s,(]|and\s)*(?:%s|%s))*' % (NUM, NAME)
REF = re.compile(PAGE + '(' + ITEMS + ')')
BARE = re.compile(r'(?<![\w/.-])(' + NUM + ITEMS + ')')
ITEM = re.compile(r'§\s?(\d+(?:\.\d+)*)(?:[–-](\d+(?:\.\d+)*))?(?:[\s,]*(' + NAME + '))?|(' +
                  NAME + ')')
LINK = re.compile(r'\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
GREEK = {'θ': 'theta', 'ε': 'epsilon', 'ψ': 'psi'}


def norm(s):
    s = s.replace('`', '').replace('*', '')
    for g, w in GREEK.items():
        s = s.replace(g, w)
    return re.sub(r'\s+', ' ', s).strip().lower()


def slug(heading):
    """A heading's anchor as GitHub makes it."""
    s = heading.strip().lower().replace('`', '').replace('*', '')
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


class Page:
    """The headings, bold lead-ins and numbered list items of a Markdown
    text: what a reference may name."""

    def __init__(self, text):
        self.heads = []     # (level, number or None, title, line)
        self.bold = []      # (title, line)
        self.items = []     # (number, line)
        self.slugs = set()
        seen = {}
        fence = False
        for i, line in enumerate(text.split('\n'), 1):
            if line.startswith('```'):
                fence = not fence
            if fence:
                continue
            m = re.match(r'(#{1,6})\s+(.*?)\s*#*\s*$', line)
            if m:
                t = m.group(2)
                n = re.match(r'(\d+(?:\.\d+)*)\.?\s+(.*)', t)
                self.heads.append((len(m.group(1)), n.group(1) if n else None,
                                   n.group(2) if n else t, i))
                s = slug(t)
                k = seen.get(s, 0)
                seen[s] = k + 1
                self.slugs.add(s if k == 0 else '%s-%d' % (s, k))
                continue
            m = re.match(r'\s*(?:[-*]\s+|\d+\.\s+)?\*\*(.+?)(?:\*\*|$)', line)
            if m:
                self.bold.append((m.group(1), i))
            m = re.match(r'(\d+)\.\s', line)
            if m:
                self.items.append((m.group(1), i))

    def section(self, num):
        """(first, past-last) line of the section numbered num, or None."""
        for j, (lv, n, _, ln) in enumerate(self.heads):
            if n == num:
                end = [h[3] for h in self.heads[j + 1:] if h[0] <= lv]
                return ln, end[0] if end else 1 << 30
        if '.' in num:      # §1.4: item 4 of the numbered list of §1
            outer, item = num.rsplit('.', 1)
            span = self.section(outer)
            if span and any(n == item and span[0] <= ln < span[1] for n, ln in self.items):
                return span
        return None

    def named(self, name, span=None):
        want = norm(name)
        cands = [(norm(t), ln, True) for _, _, t, ln in self.heads]
        cands += [(norm(t), ln, False) for t, ln in self.bold]
        for text, ln, heading in cands:
            if span and not span[0] <= ln < span[1]:
                continue
            parts = [text] + (text.split(' and ') if heading else [])
            if any(re.match(re.escape(want) + r'(\W|$)', p.strip()) for p in parts):
                return True
        return False


def flatten(path, text):
    """The text with every line's comment leader dropped and C string
    literals joined, so a reference can run over lines; and the offset at
    which each line starts."""
    if path.endswith(('.c', '.h')):
        text = re.sub(r'(?<!\\)"[ \t]*\n\s*"', lambda m: '\n' * m.group(0).count('\n'), text)
        text = text.replace('\\n', ' ').replace('\\"', '"')
    code = not path.endswith('.md')
    out, starts, pos = [], [], 0
    for line in text.split('\n'):
        if code:
            line = re.sub(r'^\s*(?:/\*+|\*+(?!\*)|#+|//+)?', '', line)
        starts.append(pos)
        out.append(line)
        pos += len(line) + 1
    return ' '.join(out), starts


class Checker:
    def __init__(self, root, pages=None):
        self.root = root
        self.pages = pages if pages is not None else {}
        self.errors = []
        self.refs = 0
        self.links = 0

    def page(self, name):
        """The Page of a document name as written, or None if no such file."""
        if name.startswith('README'):
            rel = 'README.md'
        elif name.startswith('docs/'):
            rel = name
        else:
            rel = 'docs/' + name
        if rel not in self.pages:
            p = os.path.join(self.root, rel)
            self.pages[rel] = Page(open(p, encoding='utf-8').read()) if os.path.isfile(p) else None
        return rel, self.pages[rel]

    def items(self, where, rel, page, items):
        for it in ITEM.finditer(items):
            n1, n2, name1, name2 = it.groups()
            self.refs += 1
            if n1:
                for n in [n1] + ([n2] if n2 else []):
                    span = page.section(n)
                    if span is None:
                        self.errors.append('%s: %s has no §%s' % (where, rel, n))
                    elif name1 and not page.named(name1[1:-1], span):
                        self.errors.append('%s: %s §%s has no section %s' % (where, rel, n, name1))
            elif not page.named(name2[1:-1]):
                self.errors.append('%s: %s has no section %s' % (where, rel, name2))

    def text(self, path, text):
        """Check every reference in one file's text; path is relative to
        the root."""
        flat, starts = flatten(path, text)
        line = lambda off: bisect.bisect_right(starts, off)
        in_docs = path.endswith('.md')
        for m in REF.finditer(flat):
            name, items = m.group(1), m.group(2)
            bare_md = not name.startswith(('docs/', 'README'))
            if bare_md and not items.strip():
                continue        # a file name (report.md), not a reference
            rel, page = self.page(name)
            where = '%s:%d' % (path, line(m.start()))
            if page is None:
                self.errors.append('%s: no page %s' % (where, rel))
                continue
            if items.strip():
                self.items(where, rel, page, items)
        if in_docs:
            own = self.pages.get(path) or Page(text)
            refs = {(m.start(2), m.end(2)) for m in REF.finditer(flat)}
            for m in BARE.finditer(flat):
                if any(a <= m.start() < b for a, b in refs):
                    continue
                self.items('%s:%d' % (path, line(m.start())), path, own, m.group(1))
            self.md_links(path, text)

    def md_links(self, path, text):
        base = os.path.dirname(path)
        fence = False
        for i, l in enumerate(text.split('\n'), 1):
            if l.startswith('```'):
                fence = not fence
            if fence or l.startswith('    '):
                continue
            for m in LINK.finditer(re.sub(r'`[^`]*`', '', l)):
                target = m.group(1)
                if re.match(r'[a-z]+:', target):
                    continue
                self.links += 1
                where = '%s:%d' % (path, i)
                file, _, anchor = target.partition('#')
                rel = os.path.normpath(os.path.join(base, file)) if file else path
                full = os.path.join(self.root, rel)
                if not os.path.exists(full):
                    self.errors.append('%s: link to %s: no such file' % (where, target))
                elif anchor and rel.endswith('.md'):
                    _, page = self.page(rel if rel != 'README.md' else 'README')
                    if anchor not in page.slugs:
                        self.errors.append('%s: link to %s: no heading #%s' % (where, target, anchor))


def sources(root):
    for name in TOP:
        yield name
    for d in DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, d)):
            dirnames[:] = sorted(n for n in dirnames if n not in SKIP_DIRS)
            for f in sorted(files):
                if f.endswith(EXT) or f in NAMES:
                    yield os.path.relpath(os.path.join(dirpath, f), root)


SAMPLE_PAGE = '''# A page

## 1. First
**Lead-in of a paragraph.** Text.

1. **An item.**
2. Another.

## 2. Signals and exit codes
### 2.1 Inner, with `code`
- **Off the loop** (a bold lead-in in a list)
'''

GOOD = [
    'see docs/a.md §1 and docs/a.md §2.1.',
    'docs/a.md §1–2, §2.1 "Off the loop"',
    '/* the first (docs/a.md\n * "Lead-in of a paragraph") */',
    '# docs/a.md, "Exit codes" and docs/a.md ("First", "Signals")',
    '"text docs/a.md (\\"Inner, with code\\",\\n"\n\t"\\"First\\")"',
    'a.md §1.2 names a list item',
    'docs/a.md is named without a section',
]
BAD = [
    'docs/a.md §3',
    'docs/a.md §2.2',
    'docs/a.md "Second"',
    'docs/a.md §1 "Off the loop"',
    'docs/a.md "Codes"',
    '# docs/a.md,\n# "Inner, without"',
    'docs/b.md §1',
    'docs/b.md',
]


def self_test():
    """The checker accepts every form above and refuses each broken one."""
    pages = {'docs/a.md': Page(SAMPLE_PAGE), 'docs/b.md': None}
    for s in GOOD:
        c = Checker('/nonexistent', dict(pages))
        c.text('x.c', s)
        check(not c.errors and c.refs + ('without' in s) >= 1,
              'self-test: %r refused or not seen: %s' % (s, c.errors))
    for s in BAD:
        c = Checker('/nonexistent', dict(pages))
        c.text('x.c', s)
        check(len(c.errors) == 1, 'self-test: %r gave %s, want one error' % (s, c.errors))
    c = Checker('/nonexistent', dict(pages))
    c.text('docs/a.md', 'see §2 and §1.1; not §4')
    check(len(c.errors) == 1 and '§4' in c.errors[0], 'self-test: bare §: %s' % c.errors)


def test(argv):
    root = os.path.abspath(argv[0])
    self_test()
    c = Checker(root)
    n = 0
    me = os.path.realpath(__file__)
    for rel in sources(root):
        path = os.path.join(root, rel)
        if os.path.realpath(path) == me:
            continue    # its examples name pages that do not exist
        with open(path, encoding='utf-8', errors='replace') as f:
            c.text(rel, f.read())
        n += 1
    check(n > 250 and c.refs > 300, 'only %d files and %d references found under %s'
          % (n, c.refs, root))
    if c.errors:
        raise Fail('%d reference(s) do not resolve:\n  %s' % (len(c.errors), '\n  '.join(c.errors)))
    print('ok: %d references and %d links in %d files resolve' % (c.refs, c.links, n))


if __name__ == '__main__':
    main(test)
