/* emit.h — writing JSON text: escaped strings. */
#ifndef STRATA_COLLECT_EMIT_H
#define STRATA_COLLECT_EMIT_H

#include <stdio.h>

/* s as a JSON string literal (quotes included). */
void emit_json_string(FILE *out, const char *s);

#endif
