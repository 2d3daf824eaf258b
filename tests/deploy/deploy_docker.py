#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The deployment run for real on a Docker engine (docs/deploy.md §9).

Setup: dockerd started when none is running (and stopped at the end), the
base image debian:12 pulled or made with debootstrap (kept for later runs),
the images built from deploy/Dockerfile (targets runtime, tools, systemd,
prometheus).  Then, side by side:

compose  deploy/docker-compose.yml (3 owners, its default clocks, and
         Prometheus from the Dockerfile's `prometheus` target, the
         default) on an internal network the test creates: the
         job reaches `done k=T`; ownerd killed with SIGKILL inside owner-1's
         container is restarted by the restart policy, owner-2's container
         killed with `docker kill -s KILL` and started again; both resume
         from their ledgers and every ledger stays within its budget
         (`dpasync ledger`); `eval` gives psi within the simulator's range
         for the settings learnerd planned (half the smallest to twice the
         largest of 20 `dpasync sim` runs, as e2e_modes); Prometheus' HTTP
         API, queried from a container on that network, has every
         documented dpasync series and all three owners; the `tools` image
         draws a plot and a report of the trace; `down -v` leaves no
         container or volume.
systemd  the `systemd` image, systemd as PID 1, no network: learnerd.service
         and ownerd@owner-{1,2,3} enabled with systemctl, configured from the
         shipped examples, the units unmodified: the job completes; kill -9
         of ownerd@owner-1 -> one restart, it resumes from its ledger; a bad
         configuration exits 2 and is not restarted; after the job the
         enabled owners do not restart or use CPU; the units run as the
         package's system user dpasync; `systemd-analyze security` of both
         units at most 1.2.  Then the Debian package the image installed:
         upgraded to a rebuild with a higher version, removed, purged and
         reinstalled, the ledgers and /etc/dpasync byte-identical after
         each step and `dpasync ledger` reading the same spent budget.

With --prepare it only does the setup (engine, base image, images) and
stops: scripts/test.sh runs that while the main build compiles, so that the
test proper finds its images built.

Prints the time of each step.  Needs root, dockerd (docker.io),
docker-compose, debootstrap: scripts/deps.sh installs them; a missing one is
a failure, never a skip.
"""
import os, sys, threading, time, traceback
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
from harness import Fail, check, tmpdir, cleanup, main
import engine, compose_stack, systemd_units

def brief(msg):
    """A failure's first line (which check failed) and the tail of the log
    it carries: the tail alone once hid which check it was."""
    if len(msg) <= 2500:
        return msg
    first = msg.split('\n', 1)[0][:500]
    return '%s\n[...]\n%s' % (first, msg[-2000:])

def test(argv):
    check(os.geteuid() == 0, 'must run as root (scripts/test.sh does): it starts dockerd')
    t0 = time.time()
    d = tmpdir('deploy-docker')
    eng = engine.Engine(d)
    try:
        eng.up()
        eng.base_image()
        targets = ['runtime', 'tools', 'systemd', 'prometheus']
        eng.build_all(targets)
        images = {t: '%s:%s' % (engine.TAG, t) for t in targets}
        if '--prepare' in argv:
            print('prepared in %.0f s: %s' % (time.time() - t0,
                  ', '.join('%s %.0f s' % kv for kv in eng.times.items())))
            return
        t_setup = time.time() - t0

        results, errors = {}, {}
        t_sides = time.time()
        def side(name, fn):
            try:
                fn()
            except Exception as e:
                errors[name] = e
                if not isinstance(e, Fail):
                    traceback.print_exc()
            finally:       # which side the suite waits for
                results['%s scenario s' % name] = time.time() - t_sides
        cd = os.path.join(d, 'compose')
        os.makedirs(cd)
        th = [threading.Thread(target=side, args=('compose', lambda: compose_stack.scenario(
                  eng, cd, images, results))),
              threading.Thread(target=side, args=('systemd', lambda: systemd_units.scenario(
                  eng, images['systemd'], results)))]
        for x in th:
            x.start()
        for x in th:
            x.join()

        print('setup %.0f s: %s' % (t_setup, ', '.join('%s %.0f s' % kv for kv in eng.times.items())))
        for k in ('owners scraped s', 'compose job s', 'systemd job s', 'compose scenario s',
                  'systemd scenario s'):
            if k in results:
                print('%s %.0f' % (k, results[k]))
        if 'psi' in results:
            print('compose: psi %.4g, simulator %.4g .. %.4g (T %d)' % results['psi'])
        if 'ledgers' in results:
            print('compose ledgers (answers, cap, epsilon): %r; answers when killed %r'
                  % (results['ledgers'], results['killed at']))
        if 'prometheus' in results:
            print('prometheus (%s): %d of %d documented series; learner iterations %g'
                  % (images['prometheus'], *results['prometheus']))
        if 'plots' in results:
            print('tools image: %d PNG figures' % results['plots'])
        if 'down' in results:
            print('down -v: exit %d, %d containers and %d volumes left' % results['down'])
        if 'systemd owner-1' in results:
            print('systemd: T %d; owner-1 answers %d at kill -9, %d at the end (cap %d); owners after the job: %r'
                  % ((results['systemd T'],) + results['systemd owner-1'] + (results['systemd after'],)))
        if 'systemd-analyze' in results:
            print('systemd-analyze security: %r' % results['systemd-analyze'])
        if 'systemd package' in results:
            v1, v2, n = results['systemd package']
            print('package: %s -> %s, removed, purged, %s reinstalled: %d ledger and config files '
                  'unchanged (%.0f s: %s)' % (v1, v2, v1, n, results['systemd package s'], ', '.join(
                      '%s %.1f s' % kv for kv in results['systemd package steps'].items())))
        print('total %.0f s' % (time.time() - t0))
        if errors:
            raise Fail('; '.join('%s: %s' % (n, brief(str(e))) for n, e in errors.items()))
    finally:
        eng.close()
        cleanup(d)

if __name__ == '__main__':
    main(test)
