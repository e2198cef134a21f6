"""strata.posix — what strata asks of the kernel beyond the standard library's wrappers (a
child dying with its parent). Stdlib only: the lowest room, importing nothing of strata."""
