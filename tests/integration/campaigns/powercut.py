# SPDX-License-Identifier: Apache-2.0
"""The disk of a power cut (docs/reliability.md §8): after the fault shim
killed a daemon (tests/lib/iofault.c, DP_FAULT_ACTION=kill-before|
kill-after) with its power-cut recorder on (tests/lib/powercut.c,
DP_POWER_STORE), cut() rolls the tracked directories back to what the
daemon's syncs had made durable, as a disk would show them after the power
came back.  Three ways to come back:

- lost: every write and every directory change not made durable is gone.
  A file holds its content as of the start of its last successful fsync or
  fdatasync (or of the process, for a file that was there then; empty for
  a file created since and never synced); a directory holds the entries it
  had at the start of its last successful fsync (or of the process).  A
  directory created since, that its parent's fsync never listed, is gone
  with everything in it.
- meta: the directories keep every change (creations, renames, unlinks),
  the files' data is as in lost: a name can point to a file whose data
  never reached the disk (empty, or its last synced content).
- torn: each directory, at random, as in lost or as at the crash; each file
  that grew since its last sync keeps a random prefix of what it gained
  (cut at any byte, so a record or a line can be torn); a file changed
  otherwise (truncated, overwritten) is as synced or as at the crash.

The files' content after the cut is always one the file had, never stale
or foreign blocks (ext4 data=ordered, docs/reliability.md §8.1)."""
import os, random, shutil

MODES = ('lost', 'meta', 'torn')

class Store:
    """The recorder's index (powercut.c): durable images and listings."""
    def __init__(self, d):
        self.d = d
        self.images = {}      # key -> (seq, data file), the latest
        self.dirs = {}        # directory key -> (seq, entries), the latest synced
        self.dir_paths = []   # (path, entries) of every synced listing
        self.base, self.crash = {}, {}   # tracked path -> (key, entries) or None
        self.drops, self.ended = [], False
        path = os.path.join(d, 'index')
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        for line in lines:
            f = line.split(' ', 3)
            tag = f[0]
            if tag == 'img':
                seq, key = int(f[1]), f[2]
                if key not in self.images or self.images[key][0] < seq:
                    self.images[key] = (seq, os.path.join(d, f[1]))
            elif tag in ('dir', 'base', 'crash'):
                seq, key, p = int(f[1]), f[2], f[3]
                ents = self.listing(f[1])
                if tag == 'dir':
                    if key not in self.dirs or self.dirs[key][0] < seq:
                        self.dirs[key] = (seq, ents)
                    self.dir_paths.append((p, ents))
                else:
                    getattr(self, tag)[p] = (key, ents)
            elif tag in ('base-absent', 'crash-absent'):
                getattr(self, tag.split('-')[0])[line.split(' ', 1)[1]] = None
            elif tag == 'drop':
                self.drops.append(line)
            elif tag == 'end':
                self.ended = True

    def listing(self, seq):
        """{name: (type, key)} of the listing in data file seq."""
        out = {}
        for line in open(os.path.join(self.d, seq)).read().splitlines():
            t, key, name = line.split(' ', 2)
            out[name] = (t, key)
        return out

    def durable(self, key):
        """The durable content of inode key (b'' when never synced)."""
        if key not in self.images:
            return b''
        return open(self.images[key][1], 'rb').read()

    def listed_by_parent(self, path, key):
        """Whether a synced listing of path's parent names it as key."""
        parent, name = os.path.split(os.path.realpath(path))
        return any(os.path.realpath(p) == parent and ents.get(name, (None, None))[1] == key
                   for p, ents in self.dir_paths)

def cut(store, mode, seed):
    """Roll every tracked directory back (mode: lost, meta or torn; seed
    for torn's choices).  Returns what changed, per directory:
    {path: {'gone': bool, 'removed': [names], 'files': {name: (bytes
    before, bytes after)}}}."""
    if mode not in MODES:
        raise ValueError('mode %r' % mode)
    if not store.ended:
        raise ValueError('%s: no crash record (the shim did not kill)' % store.d)
    rng = random.Random(seed)
    out = {}
    for path in sorted(store.crash):
        now, base = store.crash[path], store.base.get(path)
        if now is None:
            continue
        key, now_ents = now
        if not os.path.isdir(path):
            # Inside a directory the cut has already removed (sorted:
            # parents first).
            out[path] = {'gone': True, 'removed': sorted(now_ents), 'files': {}}
            continue
        keep_dirs = mode == 'meta' or (mode == 'torn' and rng.random() < 0.5)
        if keep_dirs:
            ents = now_ents
        else:
            kept = (base is not None and base[0] == key) or store.listed_by_parent(path, key)
            if not kept:
                shutil.rmtree(path)
                out[path] = {'gone': True, 'removed': sorted(now_ents), 'files': {}}
                continue
            if key in store.dirs:
                ents = store.dirs[key][1]
            else:
                ents = base[1] if base is not None and base[0] == key else {}
        # What the page cache held, by inode (a file may have been renamed).
        cur = {}
        for name, (t, k) in now_ents.items():
            if t == 'f' and os.path.isfile(os.path.join(path, name)):
                cur[k] = open(os.path.join(path, name), 'rb').read()
        mtimes = {n: os.stat(os.path.join(path, n)).st_mtime for n in os.listdir(path)}
        rec = {'gone': False, 'removed': [], 'files': {}}
        for name in sorted(os.listdir(path)):
            if name not in ents:
                p = os.path.join(path, name)
                shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
                rec['removed'].append(name)
        for name, (t, k) in sorted(ents.items()):
            p = os.path.join(path, name)
            if t == 'd':
                os.makedirs(p, exist_ok=True)
                continue
            if t != 'f':
                continue
            data = store.durable(k)
            c = cur.get(k)
            if mode == 'torn' and c is not None and c != data:
                if c.startswith(data):
                    data = c[:rng.randint(len(data), len(c))]
                elif rng.random() < 0.5:
                    data = c
            before = len(open(p, 'rb').read()) if os.path.isfile(p) else None
            with open(p, 'wb') as f:
                f.write(data)
            # Keep the time the daemon gave it (the newest job file is
            # found by its modification time).
            if name in mtimes:
                os.utime(p, (mtimes[name], mtimes[name]))
            if before != len(data):
                rec['files'][name] = (before, len(data))
        out[path] = rec
    return out
