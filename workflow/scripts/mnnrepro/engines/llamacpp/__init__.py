"""llama.cpp built from a pinned source tree (kind `llamacpp`): its kind, its build, its gate
tool's sources (gate_tool/) and its GGUF conversion."""
