#!/usr/bin/env python3
"""Checks the tool-discovery query sets without building anything.

    python3 check_queries.py                 # validate every tool_queries*.json
    python3 check_queries.py --overlap SET   # also flag SET's queries that are
                                             # close paraphrases of another set's

Validation: each set has an `about` string and `queries`, each query a
non-empty `query` and a non-empty `expected` list of distinct "server/tool"
names that all exist in tool_corpus.json; no query text is repeated. It also
prints each set's queries per server (by first expected tool) and the corpus
tools no query of the set expects.

Overlap: two queries are close when their content words (lower-cased, a
plural "s" dropped, filler words removed) have Jaccard similarity >= 0.5, or
when at least three words are shared and they make up >= 0.75 of the shorter
query. It reads words only; it never runs the tool index.

Exit status 1 on any validation error or flagged pair.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parent

FILLER = set(
    """a an the and or but of in on at to for from with by as into onto over
    under about this that these those it its is are was were be been am do does
    did done i me my we our us you your he she they them their his her what
    what's which who whom whose how when where why there here so if then than
    just only all any some one can could should would will shall may might must
    please let let's i'm i've don't it's that's not no yes up out off via too
    very also get show give need want""".split()
)

JACCARD = 0.5
CONTAINMENT = 0.75
MIN_SHARED = 3


def words(text):
    out = set()
    for w in re.findall(r"[a-z0-9][a-z0-9'_.-]*", text.lower()):
        w = w.strip("'.-_")
        if not w or w in FILLER:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return out


def corpus_tools():
    corpus = json.loads((DATA / "tool_corpus.json").read_text())
    return {
        f"{server['server']}/{tool['name']}"
        for server in corpus["servers"]
        for tool in server["tools"]
    }


def validate(path, tools):
    errors = []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return [f"{path.name}: cannot read: {err}"], []
    if not isinstance(data, dict) or not isinstance(data.get("about"), str):
        errors.append(f"{path.name}: needs an `about` string")
    queries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(queries, list) or not queries:
        return errors + [f"{path.name}: needs a non-empty `queries` list"], []
    seen = set()
    for i, q in enumerate(queries):
        where = f"{path.name}: queries[{i}]"
        text = q.get("query") if isinstance(q, dict) else None
        expected = q.get("expected") if isinstance(q, dict) else None
        if not isinstance(text, str) or not text.strip():
            errors.append(f"{where}: `query` must be a non-empty string")
            continue
        if text.lower() in seen:
            errors.append(f"{where}: repeated query {text!r}")
        seen.add(text.lower())
        if not isinstance(expected, list) or not expected:
            errors.append(f"{where} ({text!r}): `expected` must be a non-empty list")
            continue
        if len(set(expected)) != len(expected):
            errors.append(f"{where} ({text!r}): `expected` repeats an entry")
        for name in expected:
            if name not in tools:
                errors.append(f"{where} ({text!r}): {name!r} is not in tool_corpus.json")
    return errors, queries


def summary(path, queries, tools):
    per_server = Counter(q["expected"][0].split("/")[0] for q in queries)
    covered = {name for q in queries for name in q["expected"]}
    print(f"{path.name}: {len(queries)} queries")
    print("  per server: " + ", ".join(f"{s} {n}" for s, n in sorted(per_server.items())))
    missing = sorted(tools - covered)
    print(f"  corpus tools never expected ({len(missing)}): " + (", ".join(missing) or "none"))


def overlaps(target, others):
    flagged = []
    for q in target:
        a = words(q["query"])
        for name, other in others:
            b = words(other["query"])
            shared = a & b
            if not shared:
                continue
            jaccard = len(shared) / len(a | b)
            contained = len(shared) / min(len(a), len(b))
            if jaccard >= JACCARD or (len(shared) >= MIN_SHARED and contained >= CONTAINMENT):
                flagged.append((jaccard, contained, q["query"], name, other["query"]))
    return flagged


def main(argv):
    overlap_set = None
    if len(argv) == 2 and argv[0] == "--overlap":
        overlap_set = DATA / argv[1]
    elif argv:
        print(__doc__)
        return 2
    tools = corpus_tools()
    sets = sorted(DATA.glob("tool_queries*.json"))
    loaded = {}
    failed = False
    for path in sets:
        errors, queries = validate(path, tools)
        for e in errors:
            print("error:", e)
        failed |= bool(errors)
        loaded[path.name] = queries
        if queries:
            summary(path, queries, tools)
    if overlap_set is not None:
        if overlap_set.name not in loaded:
            print(f"error: {overlap_set.name} is not one of {', '.join(loaded)}")
            return 1
        others = [
            (name, q)
            for name, queries in loaded.items()
            if name != overlap_set.name
            for q in queries
        ]
        flagged = overlaps(loaded[overlap_set.name], others)
        print(
            f"overlap of {overlap_set.name} against {len(others)} queries of the other sets: "
            f"{len(flagged)} close pairs (Jaccard >= {JACCARD}, or >= {MIN_SHARED} shared words "
            f"covering >= {CONTAINMENT} of the shorter query)"
        )
        for jaccard, contained, mine, name, theirs in sorted(flagged, reverse=True):
            print(f"  {jaccard:.2f}/{contained:.2f}  {mine!r}  ~  {name}: {theirs!r}")
        failed |= bool(flagged)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
