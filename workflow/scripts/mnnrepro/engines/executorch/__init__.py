"""ExecuTorch with its XNNPACK delegate (the fourth stack): engines/executorch/kind.py."""
