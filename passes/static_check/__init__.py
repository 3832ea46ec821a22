"""static-check: compile-time checks of loop functions as they are written (see
static_check_pass)."""
