"""Running strata's own parts together, for `strata demo` and `strata check run`:
a private engine (on loop devices when asked), strata-load, `strata collect` into
a private archive, and a teardown that undoes all of it on exit, error or Ctrl-C."""
