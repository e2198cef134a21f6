/* main.c — strata-engine: subcommand dispatch (serve, mkpool, stats, ctl, arcsim). */
#include <stdio.h>
#include <string.h>

#include "arcsim.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: strata-engine serve --pool PATH[,PATH...] --export NAME[:OPTIONS] [options]\n"
		   "       strata-engine mkpool PATH[,PATH...] [--size SIZE] [--recordsize SIZE] [--force]\n"
		   "       strata-engine stats [--socket PATH | --pid PID]\n"
		   "       strata-engine ctl [--socket PATH | --pid PID] REQUEST... (l2arc on|off, inject-delay ...)\n"
		   "       strata-engine arcsim ... (trace-driven ARC simulator; see arcsim --help)\n"
		   "Run `strata-engine COMMAND --help` for a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "mkpool"))
		return cmd_mkpool(argc - 1, argv + 1);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(argc - 1, argv + 1);
	if (!strcmp(cmd, "ctl"))
		return cmd_ctl(argc - 1, argv + 1);
	if (!strcmp(cmd, "arcsim"))
		return arcsim_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "strata-engine: unknown command '%s' (serve, mkpool, stats, arcsim)\n", cmd);
	return 2;
}
