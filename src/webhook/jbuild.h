/* jbuild: json-c values built in one expression.
 *
 * Each builder takes the references it is given; if any is NULL (a failed
 * constructor) or an insertion fails, it releases all of them and returns
 * NULL, so a tree is built in one expression and checked once (patch_add()
 * fails on a NULL value). */
#ifndef IMDS_WH_JBUILD_H
#define IMDS_WH_JBUILD_H

#include "str.h"

struct json_object;

/* jb_obj("k1", v1, "k2", v2, ..., JB_END): a typed sentinel, since a bare
 * NULL may be a plain int in a variadic call. */
#define JB_END ((const char *)0)
struct json_object *jb_obj(const char *k, ...);
/* jb_arr(n, v1, ..., vn) */
struct json_object *jb_arr(int n, ...);
struct json_object *jb_set(struct json_object *o, const char *k, struct json_object *v);
struct json_object *jb_push(struct json_object *arr, struct json_object *v);
struct json_object *jb_str(const char *s);
struct json_object *jb_strn(struct str s);

#endif
