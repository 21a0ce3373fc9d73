/*
 * loggen_main.c - writes a generated log corpus to stdout, for timing the
 * whole `awooop redact` command on it:
 *   bench_loggen FORMAT clean|dense MB
 * FORMAT: a name below, or grid:LINELEN:RUNS:ENDNUM (loggen.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loggen.h"

int main(int argc, char **argv)
{
	size_t len, planted;
	char *buf = NULL;
	if (argc == 4 && (!strcmp(argv[2], "clean") || !strcmp(argv[2], "dense")))
		buf = loggen_named(argv[1], (size_t)strtoul(argv[3], NULL, 10) * 1000000,
				   !strcmp(argv[2], "dense"), &len, &planted);
	if (!buf) {
		fprintf(stderr, "usage: bench_loggen FORMAT|grid:LINELEN:RUNS:ENDNUM clean|dense "
				"MB\nformats:");
		for (int i = 0; loggen_formats[i]; i++)
			fprintf(stderr, " %s", loggen_formats[i]);
		fprintf(stderr, "\n");
		return 2;
	}
	size_t w = fwrite(buf, 1, len, stdout);
	free(buf);
	fprintf(stderr, "%zu bytes, %zu secrets planted\n", len, planted);
	return w == len ? 0 : 1;
}
