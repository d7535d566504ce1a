/* cli: the command-line flags of every program, taken as Kubernetes
 * manifests write them: "--name value" and "--name=value" alike. */
#ifndef IMDS_CLI_H
#define IMDS_CLI_H

/* argv[*i] is the flag name, in either form: 1 with its value in *out (*i
 * past a separate value), else 0.  A flag with no value left prints
 * "<prog>: <name> needs a value" and exits 2 (a configuration error). */
int cli_flag(int argc, char **argv, int *i, const char *prog, const char *name, const char **out);

#endif
