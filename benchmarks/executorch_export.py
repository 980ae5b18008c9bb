"""Program: export a transformers Qwen3 checkpoint to an ExecuTorch program with ExecuTorch's
own tools, for benchmarks/executorch_emulated.py (run there with the fetched wheels' tree on
PYTHONPATH).

Usage: python benchmarks/executorch_export.py CHECKPOINT_DIR OUT.pte

torchao's int4 weights (groups of 32) with dynamic int8 activations (the XNNPACK path to
KleidiAI's and XNNPACK's SME2 GEMMs), torch.export over a dynamic sequence length (1-128), the
XNNPACK partitioner, to_executorch. No KV cache: each call takes the whole sequence. Prints
one JSON line: the program's size, its delegated calls and the operators left outside
XNNPACK, and the reference logits' greedy token for the prompt 0..15 (eager, quantized)."""

from __future__ import annotations

import json
import sys

import torch
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import to_edge_transform_and_lower
from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
from torchao.quantization.granularity import PerGroup
from transformers import AutoModelForCausalLM

PROMPT = 16  # the runner's prompt: token ids 0..15


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits


def operator_name(target) -> str:
    """An operator's name, without a Python object's address or an edge op's schema."""
    name = getattr(target, "__name__", None) or str(target)
    return name.split(":")[0].removeprefix("<EdgeOpOverload").strip(" <>")


def main(checkpoint: str, out: str) -> None:
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    weights = Int8DynamicActivationIntxWeightConfig(
        weight_dtype=torch.int4, weight_granularity=PerGroup(32)
    )
    quantize_(model, weights)
    ids = torch.arange(PROMPT).reshape(1, PROMPT)
    sequence = torch.export.Dim("sequence", min=1, max=128)
    exported = torch.export.export(
        Logits(model), (ids,), dynamic_shapes=({1: sequence},), strict=False
    )
    lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    program = lowered.to_executorch()
    with open(out, "wb") as fh:
        fh.write(program.buffer)
    calls = [n for n in lowered.exported_program().graph_module.graph.nodes]
    delegated = [n for n in calls if "executorch_call_delegate" in str(n.target)]
    outside = sorted(
        {operator_name(n.target) for n in calls if n.op == "call_function"}
        - {operator_name(n.target) for n in delegated}
    )
    with torch.no_grad():
        reference = int(Logits(model)(ids)[0, -1].argmax())
    result = {
        "bytes": len(program.buffer),
        "delegated_calls": len(delegated),
        "outside_xnnpack": outside,
        "eager_next_token": reference,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
