#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# The layers of lib/, checked on the built objects: derive the file-level
# call graph from `nm` (a file depends on the file that defines a symbol it
# leaves undefined: a call or a reference to data), then fail, naming the
# edge, when
#   - a call crosses folders against the layer map of
#     Documentation/lib/layers.rst (the lines "lib/X/  may call: lib/ ..."),
#   - a folder with objects is not in that map,
#   - a cycle spans more than one file (recursion inside a file is fine).
#
#   check-layers.py [--map LAYERS.rst] [--nm NM] OBJDIR
#
# OBJDIR is $(O)/lib: objects lib/FOO.o for the core, lib/DIR/FOO.o for
# the folder lib/DIR/.  Exit 0 and one "ok" line, or 1 and one line per
# problem.
import argparse
import os
import re
import subprocess
import sys

MAP_LINE = re.compile(r'^\s+(lib/(?:[a-z0-9_]+/)?)\s+may call:\s*(.*?)\s*$')
# nm -P: "name type [value size]"; defined global types, undefined ones.
DEFINED = set('TDBRCVWGSi')
UNDEFINED = set('Uw')


def read_map(path):
    allowed = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = MAP_LINE.match(line)
            if not m:
                continue
            calls = m.group(2).split()
            if calls == ['(nothing)']:
                calls = []
            allowed[m.group(1)] = set(calls)
    return allowed


def folder_of(name):
    d = os.path.dirname(name)
    return 'lib/' + (d + '/' if d else '')


def read_objects(objdir, nm):
    """Map each object (path below objdir, no .o) to (defined, undefined)."""
    paths = sorted(os.path.join(root, fn) for root, _, files in os.walk(objdir)
                   for fn in files if fn.endswith('.o'))
    objs = {os.path.relpath(path, objdir)[:-2]: (set(), set()) for path in paths}
    if not paths:
        return objs
    # one nm for all of them (-A: each line opens with its file's path):
    # a process per object took ten seconds on a loaded machine
    out = subprocess.run([nm, '-P', '-A'] + paths, check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        path, _, sym = line.partition(': ')
        parts = sym.split()
        if len(parts) < 2 or not path.endswith('.o'):
            continue
        defined, undefined = objs[os.path.relpath(path, objdir)[:-2]]
        if parts[1] in DEFINED:
            defined.add(parts[0])
        elif parts[1] in UNDEFINED:
            undefined.add(parts[0])
    return objs


def call_graph(objs):
    """edges[a][b]: the symbols a takes from b (a != b)."""
    owner = {}
    for name, (defined, _) in objs.items():
        for sym in defined:
            owner.setdefault(sym, name)
    edges = {name: {} for name in objs}
    for name, (_, undefined) in objs.items():
        for sym in sorted(undefined):
            to = owner.get(sym)
            if to and to != name:
                edges[name].setdefault(to, []).append(sym)
    return edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def cycle_in(comp, edges):
    """One cycle through the component's first file, as a list of files."""
    members = set(comp)
    start = comp[0]
    # Breadth-first from start back to start, inside the component.
    prev = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v]):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp + [start]


def edge_text(a, b, edges):
    syms = edges[a][b]
    more = ' and %d more' % (len(syms) - 1) if len(syms) > 1 else ''
    return '%s -> %s (%s%s)' % (a, b, syms[0], more)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--map', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..', 'Documentation',
        'lib', 'layers.rst'))
    ap.add_argument('--nm', default=os.environ.get('NM', 'nm'))
    ap.add_argument('objdir')
    args = ap.parse_args()

    allowed = read_map(args.map)
    if 'lib/' not in allowed:
        print('check-layers: no layer map in %s (lines "lib/X/  may call: ...")'
              % args.map)
        return 1
    objs = read_objects(args.objdir, args.nm)
    if not objs:
        print('check-layers: no objects under %s; build first' % args.objdir)
        return 1
    edges = call_graph(objs)
    problems = []

    for folder in sorted({folder_of(n) for n in objs} - set(allowed)):
        problems.append('folder %s is not in the layer map: add a line "%s  may call: ..." to %s'
                        % (folder, folder, args.map))
    for a in sorted(edges):
        fa = folder_of(a)
        for b in sorted(edges[a]):
            fb = folder_of(b)
            if fa == fb or fa not in allowed or fb in allowed[fa]:
                continue
            problems.append('upward call %s: %s may call only %s (%s)'
                            % (edge_text(a, b, edges), fa,
                               ' '.join(sorted(allowed[fa])) or 'nothing',
                               os.path.basename(args.map)))
    for comp in sccs(sorted(objs), edges):
        if len(comp) < 2:
            continue
        cyc = cycle_in(comp, edges)
        problems.append('cycle over %d files (%s): %s' % (
            len(comp), ' '.join(comp),
            ', '.join(edge_text(cyc[i], cyc[i + 1], edges)
                      for i in range(len(cyc) - 1))))

    for p in problems:
        print('check-layers: ' + p)
    if problems:
        return 1
    print('ok: %d files in %d folders, %d file-level edges; no upward call, no cycle'
          % (len(objs), len({folder_of(n) for n in objs}),
             sum(len(e) for e in edges.values())))
    return 0


if __name__ == '__main__':
    sys.exit(main())
