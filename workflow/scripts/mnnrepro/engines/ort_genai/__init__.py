"""ONNX Runtime GenAI from pinned archives (kind `ort-genai`): its kind, its fetch, its model
builder, its module for the Python runner (genai_llm) and its C API runner's sources
(gate_tool/)."""
