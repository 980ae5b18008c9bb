"""MNN's Python wheel from PyPI (kind `prebuilt`): run through the Python runner."""
