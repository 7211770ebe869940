"""Receipt assembly from (trace, build), its invariants and bounds, and the fail-open diagnostic."""
