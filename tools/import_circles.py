#!/usr/bin/env python3
"""Import circles between the workspace's modules.

Reads every `.rs` file under `crates/*/src` (one module per file), draws an edge A -> B when
A names an item of B through a path (`use`, `crate::`, `super::`, `self::`, or a child
module's name), follows re-exports (`pub use`) to the module that defines the item, and prints
each strongly connected component of more than one module: a set of modules that import each
other in a circle.

By default a module's use of what its own folder's `mod.rs` (or an ancestor) defines is not an
edge, so only circles between siblings and across folders show; `--with-ancestors` counts it
too, which adds a circle for every `mod.rs` that uses the children that use it.

A text scan, not a compiler: macros, glob imports and paths built by macros are not followed.

    python3 tools/import_circles.py [ROOT] [--with-ancestors] [--edges]
"""
import argparse
import os
import re
import sys
from collections import defaultdict

USE = re.compile(r'(pub(\([^)]*\))?\s+)?use\s+([^;]+);')
PATH = re.compile(r'\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+')


def without_comments_and_strings(src):
    src = re.sub(r'//[^\n]*', '', src)
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', src)


def modules(root):
    """(crate, module path) -> file, for every file under crates/*/src."""
    found = {}
    crates = os.path.join(root, 'crates')
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, 'src')
        for folder, _, files in os.walk(src):
            for name in files:
                if not name.endswith('.rs'):
                    continue
                parts = os.path.relpath(os.path.join(folder, name), src)[:-3].split(os.sep)
                if parts[-1] == 'mod':
                    parts = parts[:-1]
                if parts in (['lib'], ['main']):
                    parts = []
                if parts and parts[0] == 'bin':
                    continue
                found[(crate, tuple(parts))] = os.path.join(folder, name)
    return found


def use_paths(tree, prefix=()):
    """The paths of a `use` tree (`a::{b, c::d as e}` -> a::b, a::c::d)."""
    tree = tree.strip()
    brace = tree.find('{')
    if brace < 0:
        segments = [s.strip() for s in tree.split('::') if s.strip()]
        if segments and ' as ' in segments[-1]:
            segments[-1] = segments[-1].split(' as ')[0].strip()
        return [list(prefix) + segments]
    head = [s.strip() for s in tree[:brace].split('::') if s.strip()]
    items, current, depth = [], '', 0
    for c in tree[brace + 1:tree.rfind('}')]:
        depth += (c == '{') - (c == '}')
        if c == ',' and depth == 0:
            items.append(current)
            current = ''
        else:
            current += c
    items.append(current)
    paths = []
    for item in items:
        if item.strip():
            paths += use_paths(item, list(prefix) + head)
    return paths


def graph(root, with_ancestors):
    mods = modules(root)
    parsed = {}
    for (crate, parts), path in mods.items():
        with open(path, encoding='utf-8') as f:
            text = without_comments_and_strings(f.read())
        # A file's own unit tests (`#[cfg(test)] mod tests { use super::*; }`, last in the
        # file) are no dependency of the module, and their `super` is the file itself.
        tests = re.search(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text)
        if tests:
            text = text[:tests.start()]
        uses = [(bool(m.group(1)), p) for m in USE.finditer(text) for p in use_paths(m.group(3))]
        text = USE.sub('', text)
        inline = [m.group(0).split('::') for m in PATH.finditer(text)]
        for child in set(re.findall(r'\bmod\s+([a-z_][a-z0-9_]*)\s*[;{]', text)):
            pattern = r'(?<![A-Za-z0-9_:])' + child + r'(?:::[A-Za-z_][A-Za-z0-9_]*)+'
            inline += [m.group(0).split('::') for m in re.finditer(pattern, text)]
        parsed[(crate, parts)] = (uses, inline)

    def absolute(crate, parts, segments):
        if segments[0] == 'crate':
            return segments[1:]
        base = list(parts)
        if segments[0] in ('self', 'super'):
            while segments and segments[0] in ('self', 'super'):
                if segments[0] == 'super':
                    base = base[:-1]
                segments = segments[1:]
            return base + segments
        if (crate, tuple(parts) + (segments[0],)) in mods:
            return list(parts) + segments
        return None  # another crate

    reexports = defaultdict(dict)
    for (crate, parts), (uses, _) in parsed.items():
        for public, path in uses:
            target = absolute(crate, parts, path) if public and path else None
            if target and path[-1] not in ('*', 'self'):
                reexports[(crate, parts)][path[-1]] = target

    def resolve(crate, path, depth=0):
        for n in range(len(path), -1, -1):
            module = tuple(path[:n])
            if (crate, module) in mods:
                target = reexports[(crate, module)].get(path[n]) if n < len(path) else None
                if target and target != path[:n + 1] and depth < 8:
                    return resolve(crate, target + path[n + 1:], depth + 1)
                return module
        return None

    edges = defaultdict(set)
    for (crate, parts), (uses, inline) in parsed.items():
        for path in [p for public, p in uses if not public and p] + inline:
            full = absolute(crate, parts, path)
            target = resolve(crate, full) if full is not None else None
            if target is None or target == parts:
                continue
            if not with_ancestors and target == parts[:len(target)]:
                continue
            edges[(crate, parts)].add((crate, target))
    return mods, edges


def circles(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    sys.setrecursionlimit(100000)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in nodes:
        if v not in index:
            visit(v)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('root', nargs='?', default='.')
    parser.add_argument('--with-ancestors', action='store_true',
                        help="count a module's use of what its ancestors define")
    parser.add_argument('--edges', action='store_true', help='print the edges of each circle')
    args = parser.parse_args()
    mods, edges = graph(args.root, args.with_ancestors)
    name = lambda m: m[0] + '::' + ('::'.join(m[1]) or '(root)')
    found = sorted(circles(list(mods), edges), key=len, reverse=True)
    for component in found:
        print(f'{len(component)} modules: ' + ', '.join(sorted(map(name, component))))
        if args.edges:
            inside = set(component)
            for v in sorted(component):
                for w in sorted(edges[v] & inside):
                    print(f'    {name(v)} -> {name(w)}')
    print(f'circles: {len(found)}; modules in circles: {sum(map(len, found))}; '
          f'modules: {len(mods)}')


if __name__ == '__main__':
    main()
