/* replay.c - run a fuzz target over its corpus without libFuzzer.
 *
 * Usage: replay_TARGET [FILE|DIR]...  With no arguments it reads
 * $SRCDIR/tests/fuzz/corpus/TARGET (SRCDIR from make check, default ".").
 * Each file is fed to LLVMFuzzerTestOneInput once; a crash or a violated
 * property aborts the program, which fails the test.  Exit 0 and a count
 * of inputs otherwise (1 if there were none: an empty corpus is a bug).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef FUZZ_TARGET
#error "compile with -DFUZZ_TARGET=\"name\""
#endif

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "replay: %s: cannot size it\n", path);
		fclose(f);
		return -1;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "replay: %s: cannot read it\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* an exact-size copy, so that ASan sees reads past the input */
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int replay_path(const char *path, int *count)
{
	struct dirent **names;
	struct stat st;
	int n, ret = 0;

	if (stat(path, &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char full[4096];

		if (names[i]->d_name[0] != '.') {
			snprintf(full, sizeof(full), "%s/%s", path, names[i]->d_name);
			if (replay_path(full, count))
				ret = -1;
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	char dflt[4096];
	int count = 0, ret = 0;

	if (argc < 2) {
		const char *src = getenv("SRCDIR");

		snprintf(dflt, sizeof(dflt), "%s/tests/fuzz/corpus/%s", src ? src : ".", FUZZ_TARGET);
		ret = replay_path(dflt, &count);
	}
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i], &count))
			ret = -1;
	printf("replay %s: %d inputs%s\n", FUZZ_TARGET, count, ret ? ", some unreadable" : "");
	return ret || count == 0 ? 1 : 0;
}
