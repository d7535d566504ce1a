/* yaml: writing one YAML scalar so that any YAML 1.1 reader (PyYAML in
 * cloud-init) reads back exactly the same string.
 *
 * Plain style only for the boring case (a letter, then letters, digits and
 * . _ / -, and not a YAML 1.1 bool or null word); everything else is
 * double-quoted with escapes.  Quoting "no", "0x1f", "2024-01-01" or
 * "a: b" keeps cloud-init from turning an instance-id into a bool, a
 * number, a date or a mapping. */
#ifndef IMDS_YAML_H
#define IMDS_YAML_H

#include <stddef.h>

#include "sbuf.h"

int yaml_plain_ok(const char *s, size_t n);
void yaml_scalar(struct sbuf *b, const char *s, size_t n);

#endif
