/* SPDX-License-Identifier: MIT */
/*
 * replay_main.c — runs a libFuzzer target over every file in a corpus
 * directory, so `make check` replays corpora with gcc and no libFuzzer.
 * Prints "<target>: N passed, 0 failed" (a crash is the only failure).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

int
main(int argc, char **argv)
{
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
		return 2;
	}
	d = opendir(argv[1]);
	if (d == NULL) {
		perror(argv[1]);
		return 2;
	}
	while ((e = readdir(d)) != NULL) {
		char path[4096];
		FILE *f;
		uint8_t *buf;
		long len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
		f = fopen(path, "rb");
		if (f == NULL)
			continue;
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc(len > 0 ? (size_t)len : 1);
		if (buf == NULL ||
		    fread(buf, 1, (size_t)len, f) != (size_t)len) {
			fclose(f);
			free(buf);
			continue;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		n++;
	}
	closedir(d);
	printf("%s: %d passed, 0 failed\n", argv[1], n);
	return 0;
}
