"""Analyses that several stages share: what a block or loop nest reads and writes (`regions`,
`access`; `block_regions` infers a block's regions when they are not written), how much storage
a buffer spans (`storage`), the signature an exported function presents to its callers
(`entry_signature`), and a product dimension's other factors, which solve its one unknown
size (`size_factor`)."""
