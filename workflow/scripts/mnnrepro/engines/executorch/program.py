"""What an ExecuTorch model folder (results/models/<model>/pte) holds: the program the exporter
made and the gate's prompts as the export encoded them (export.py writes both, kind.py reads
them on the device)."""

PROGRAM, PROMPTS = "model.pte", "prompts.json"
