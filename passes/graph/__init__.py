"""Graph-level passes: normalize, legalize, fusion, memory planning, lowering."""
