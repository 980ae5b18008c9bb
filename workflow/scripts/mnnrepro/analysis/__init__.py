"""Analysis (rules in workflow/rules/analysis.smk, plots.smk, report.smk and emulation.smk's
check): tidy tables, statistics, the correctness gate, validity checks, verdicts, the summary,
plots, the Markdown report and the emulated-device agreement table; explaining the gain: the
sweep's tables (sweep), the decode ceiling's arithmetic (ceiling) and the mechanism checks
(mechanism)."""
