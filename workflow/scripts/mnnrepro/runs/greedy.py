"""The correctness gate's greedy answers of one variant on a device (files verified first)."""

from __future__ import annotations

from mnnrepro.devices.base import Device
from mnnrepro.engines.base import GreedyAsk
from mnnrepro.engines.registry import engine_for
from mnnrepro.runs.staging import check_receipt, engine_files


def run_greedy(
    device: Device,
    receipt: dict,
    record: dict,
    variant: dict,
    prompts: list[str],
    max_new_tokens: int,
    timeout: float,
    tool: dict | None = None,
    prompt_tokens: int = 512,
    forced: list[list[int]] | None = None,
) -> dict:
    """Greedy answers of one variant (runtime + env); the engine's files, and a built
    engine's gate tool, are verified on the device first. forced: per prompt, the reference's
    tokens to feed instead of the engine's own choices (teacher forcing)."""
    check_receipt(device, receipt)
    expected = engine_files(record, receipt)
    if tool:
        base = receipt["gate_tools"][record["engine"]]
        expected.update({f"{base}/{f['path']}": f["sha256"] for f in tool["files"]})
    device.verify(expected)
    ask = GreedyAsk(
        variant.get("runtime", {}),
        prompts,
        max_new_tokens,
        timeout,
        variant.get("env", {}),
        prompt_tokens,
        forced,
    )
    return engine_for(record, receipt).greedy(device, receipt, ask)
