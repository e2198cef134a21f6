/* arcsim.h — `strata-engine arcsim`: trace-driven ARC/LRU simulator. */
#ifndef STRATA_ARCSIM_H
#define STRATA_ARCSIM_H

/* argv[0] is the subcommand name ("arcsim"); returns the process exit code. */
int arcsim_main(int argc, char **argv);

#endif
