"""Graph-level passes for many devices: propagate-sharding (a placement for every value, with
the redistributions operators need) and lower-sharding (the per-device program with its
collectives), with the sharding rules, redistribution plans and the collectives report."""
