"""GPU lowering passes: thread binding, launch dimensions, scopes, host/device split."""
