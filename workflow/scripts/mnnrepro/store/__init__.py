"""Results across runs: an embedded store that finished experiments are registered into
(their archives, checked against their manifests), and the comparisons read from it."""
