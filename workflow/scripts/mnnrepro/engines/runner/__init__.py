"""The Python runner (python_runner.py), the program the kinds without a program of their own
run on a device, and the modules it imports by their bare names (runner_timing, its timing
loop; vision_entries; genai_llm, ONNX Runtime GenAI behind MNN's calls): one folder, as they
are staged on a device, so that Python finds them beside the runner wherever it runs."""

from pathlib import Path

RUNNER_DIR = Path(__file__).parent  # where the kinds' runner files are, as staged
