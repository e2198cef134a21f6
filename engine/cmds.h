/* cmds.h — the strata-engine subcommands (dispatched by main.c). */
#ifndef ENGINE_CMDS_H
#define ENGINE_CMDS_H

int cmd_serve(int argc, char **argv);
int cmd_mkpool(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_ctl(int argc, char **argv);

/* Splits "a,b,c" into a NULL-terminated malloc'd array; returns the count. */
int split_paths(const char *s, char ***out);

#endif
