"""HIR to MIR."""
