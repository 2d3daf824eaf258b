#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layers hold in the binaries: the daemons link libdpcore and libdpnet
only, so no tool-only code (the non-private optimum, schema building, PCA,
plotting, certificate issuance, the seeded generator, the simulator, the
public-sample measurements) can be reached from ownerd or learnerd, and
no LAPACK from learnerd.  ownerd's one LAPACK routine is the positive
definite solve of a peer agent's served model (common/core/serve.c,
docs/peer-agents.md §6): LAPACKE_dposv and nothing else of LAPACK.
Checked on the symbols the linker kept (nm) and the shared libraries the
binaries load (the ELF NEEDED entries, via objdump).

usage: layers.py BUILD_DIR"""
import os
import re
import subprocess
import sys

TOOL_ONLY = re.compile(r'\b(dp_optimum_\w+|dp_pca_\w+|dp_plot_\w+|dp_wallband_\w+|dp_rundata_\w+|'
                       r'dp_gnuplot_\w+|dp_report\w*|dp_prep_\w+|dp_simrng_\w+|'
                       r'dp_schema_build\w*|dp_certs_\w+|dp_public_\w+|dp_sim_\w+|'
                       r'dp_ownerdata_\w+|LAPACKE_\w+)\b')


def symbols(binary):
    out = subprocess.run(['nm', '-A', binary],
                         check=True, capture_output=True, text=True).stdout
    return out


def needed(binary):
    out = subprocess.run(['objdump', '-p', binary], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r'NEEDED\s+(\S+)', out)


def main():
    build = sys.argv[1]
    failures = []
    for name, allowed in (('owner/ownerd', {'LAPACKE_dposv'}), ('learner/learnerd', set())):
        path = os.path.join(build, name)
        found = sorted(set(TOOL_ONLY.findall(symbols(path))) - allowed)
        if found:
            failures.append(f'{name}: tool-only symbols {found[:8]}')
        libs = [l for l in needed(path) if 'lapack' in l.lower()]
        if libs and not allowed:
            failures.append(f'{name}: loads {libs}')
    # The check must be able to fail: dpasync does contain the tool code.
    tool = sorted(set(TOOL_ONLY.findall(symbols(os.path.join(build, 'tools/dpasync')))))
    for must in ('dp_optimum_solve', 'dp_simrng_next'):
        if must not in tool:
            failures.append(f'tools/dpasync lacks {must}: the symbol check is not looking')
    if failures:
        for f in failures:
            print(f, file=sys.stderr)
        sys.exit(1)
    print('layers hold: ownerd and learnerd contain no tool-only code; learnerd loads no '
          'LAPACK, ownerd only LAPACKE_dposv')


if __name__ == '__main__':
    main()
