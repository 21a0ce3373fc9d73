/*
 * loggen_main.c - writes a generated log corpus to stdout, for timing the
 * whole `awooop redact` command on it:
 *   bench_loggen FORMAT clean|dense MB
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loggen.h"

int main(int argc, char **argv)
{
	int f = argc == 4 ? loggen_format_index(argv[1]) : -1;
	if (f < 0 || (strcmp(argv[2], "clean") && strcmp(argv[2], "dense"))) {
		fprintf(stderr, "usage: bench_loggen FORMAT clean|dense MB\nformats:");
		for (int i = 0; loggen_formats[i]; i++)
			fprintf(stderr, " %s", loggen_formats[i]);
		fprintf(stderr, "\n");
		return 2;
	}
	size_t len, planted;
	char *buf = loggen(f, (size_t)strtoul(argv[3], NULL, 10) * 1000000,
			   !strcmp(argv[2], "dense"), &len, &planted);
	size_t w = fwrite(buf, 1, len, stdout);
	free(buf);
	fprintf(stderr, "%zu bytes, %zu secrets planted\n", len, planted);
	return w == len ? 0 : 1;
}
