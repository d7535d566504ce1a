#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_flag(int argc, char **argv, int *i, const char *prog, const char *name, const char **out)
{
	size_t n = strlen(name);
	if (strcmp(argv[*i], name) == 0) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "%s: %s needs a value\n", prog, name);
			exit(2);
		}
		*out = argv[++*i];
		return 1;
	}
	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=') {
		*out = argv[*i] + n + 1;
		return 1;
	}
	return 0;
}
