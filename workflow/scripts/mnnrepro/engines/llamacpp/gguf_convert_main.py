"""Run llama.cpp's own converter (convert_hf_to_gguf.py of the pinned tree) as a program.

usage: python gguf_convert_main.py <llama.cpp tree> <checkpoint> <out.gguf>
       python gguf_convert_main.py --layout <llama.cpp tree> <model.gguf>

The second form prints the GGUF's layout as one JSON line, read with the tree's gguf-py: what
a decode step reads (every decoder tensor, the output norm, the head - the token embedding
itself when the head is tied to it - and one embedding row) and what a prefill token computes
(2 x the decoder's matrix weights), the same arithmetic as the MNN model's layout.json.

Run by file path; it imports nothing from mnnrepro. The converter recognises a BPE tokenizer's
pre-tokenizer by a hash of how it encodes a fixed text, from a list its update script
(convert_hf_to_gguf_update.py) writes into it. The synthetic models' tokenizer, trained here,
is in no list, so the converter refuses it. Like the update script, this registers it: the hash
is computed with the update script's own text (CHK_TXT, read from that file) and mapped to the
pre-tokenizer the tokenizer declares in tokenizer.json, only when that declaration is one
llama.cpp implements (byte-level BPE with GPT-2's split regex: `gpt-2`). Any other unknown
tokenizer is still refused by the converter. What was registered is printed as one JSON line.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
from hashlib import sha256
from pathlib import Path

# tokenizer.json pre_tokenizer -> llama.cpp's pre-tokenizer of the same splitting
KNOWN_PRE_TOKENIZERS = {
    json.dumps(
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        sort_keys=True,
    ): "gpt-2",
}
REGISTERED_PREFIX = "registered pre-tokenizer: "


def update_script_text(tree: Path) -> str:
    """CHK_TXT of the tree's convert_hf_to_gguf_update.py (read, not run: it downloads)."""
    module = ast.parse((tree / "convert_hf_to_gguf_update.py").read_text(encoding="utf-8"))
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "CHK_TXT" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise SystemExit(f"{tree}/convert_hf_to_gguf_update.py: no CHK_TXT")


def declared_pre_tokenizer(checkpoint: Path) -> str | None:
    data = json.loads((checkpoint / "tokenizer.json").read_text(encoding="utf-8"))
    return KNOWN_PRE_TOKENIZERS.get(json.dumps(data.get("pre_tokenizer"), sort_keys=True))


def main(argv: list[str]) -> None:
    tree, checkpoint, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    os.environ.pop("NO_LOCAL_GGUF", None)  # the tree's own gguf-py, not an installed one
    sys.path[:0] = [str(tree / "gguf-py"), str(tree)]
    # the fetched tree's, on sys.path now
    from conversion import base

    # heavy: the converter's process only
    from transformers import AutoTokenizer

    text = update_script_text(tree)

    def chkhsh_of(tok) -> str:  # as the converter and its update script compute it
        return sha256(str(tok.encode(text)).encode()).hexdigest()

    chkhsh = chkhsh_of(AutoTokenizer.from_pretrained(str(checkpoint)))
    name = declared_pre_tokenizer(checkpoint)
    original = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tok) -> str:
        return name if name and chkhsh_of(tok) == chkhsh else original(self, tok)

    if name:
        base.TextModel.get_vocab_base_pre = get_vocab_base_pre
        print(REGISTERED_PREFIX + json.dumps({"chkhsh": chkhsh, "pre": name}), flush=True)
    sys.argv = ["convert_hf_to_gguf.py", str(checkpoint), "--outfile", str(out), "--outtype", "f16"]

    spec = importlib.util.spec_from_file_location(
        "convert_hf_to_gguf", tree / "convert_hf_to_gguf.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()


def layout(tree: Path, path: Path) -> dict:
    sys.path.insert(0, str(tree / "gguf-py"))
    # the fetched tree's gguf-py, on sys.path now
    import gguf

    tensors = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}
    embedding = tensors["token_embd.weight"]
    vocab = int(embedding.shape[-1])
    head = tensors.get("output.weight", embedding)  # tied: the head reads the embedding
    decoder = [t for name, t in tensors.items() if name.startswith("blk.")]
    norm = tensors.get("output_norm.weight")
    per_token = sum(int(t.n_bytes) for t in decoder) + int(head.n_bytes)
    per_token += (int(norm.n_bytes) if norm is not None else 0) + int(embedding.n_bytes) // vocab
    return {
        "format": "gguf",
        "weight_file": path.name,
        "tied_head": "output.weight" not in tensors,
        "head_bytes": int(head.n_bytes),
        "weight_bytes": sum(int(t.n_bytes) for t in tensors.values()),
        "tensor_types": sorted({t.tensor_type.name for t in decoder}),
        "decode_bytes_per_token": per_token,
        "prefill_ops_per_token": 2.0 * sum(int(t.n_elements) for t in decoder if len(t.shape) == 2),
    }


if __name__ == "__main__":
    if sys.argv[1] == "--layout":
        print(json.dumps(layout(Path(sys.argv[2]), Path(sys.argv[3])), sort_keys=True))
    else:
        main(sys.argv[1:])
