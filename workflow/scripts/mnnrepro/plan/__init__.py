"""The experiment an invocation runs, decided before any rule: its config (given, default or
replayed) resolved and checked against the schema, its cross-references and the kinds'
registries (experiment, checks), and the config catalog generated from the schema (catalog);
and the bisection of an engine's source, which runs the workflow once per commit (bisect).
The top stage: it asks every kind below it."""
