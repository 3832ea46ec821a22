"""Analyses that several stages share: what a block or loop nest reads and writes (`regions`,
`access`), how much storage a buffer spans (`storage`), and the signature an exported function
presents to its callers (`entry_signature`)."""
