/*
 * replay_main.c - runs every file of a corpus directory through a fuzz target's
 * LLVMFuzzerTestOneInput, so corpora (and any crash inputs added to them) are
 * regression tests in every build, with or without libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 1;
	}
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		uint8_t *buf = malloc(1 << 20);
		size_t len = buf ? fread(buf, 1, 1 << 20, f) : 0;
		fclose(f);
		if (!buf)
			return 1;
		LLVMFuzzerTestOneInput(buf, len);
		free(buf);
		n++;
	}
	closedir(d);
	printf("replayed %d inputs from %s\n", n, argv[1]);
	return n > 0 ? 0 : 1;
}
