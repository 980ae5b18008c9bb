"""MNN built from a pinned source tree (kind `build`): its kind, its llm_bench's output, its gate
tool's sources (gate_tool/)."""
