"""Many devices: device meshes, placements (Axe layouts over device axes), distributed tensor
struct info, the collectives' contract, and a numpy-simulated mesh.

The passes that use them are in tirc.passes.dist (propagate-sharding, lower-sharding); the
runtime side (the MPI shim, scatter and gather) is tirc.runtime.distributed.
"""
