"""Engine kinds as plugins: one module per kind (prebuilt: the PyPI wheel; mnn_build: MNN
built from source), the interface in base.py, the registry that rules, staging, identity,
verdict and validity ask (registry.py)."""
