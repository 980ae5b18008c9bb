"""Archive and replay (rules in workflow/rules/archive.smk): deterministic result archives
(pack), provenance of the run (provenance) and re-deriving results from an archive (replay)."""
