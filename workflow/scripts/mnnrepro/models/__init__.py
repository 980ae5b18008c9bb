"""Model stage (rules in workflow/rules/models.smk): synthetic checkpoints (synthetic), MNN's
exporter (export, llmexport_main) and ModelScope downloads (modelscope)."""
