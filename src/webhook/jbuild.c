#include "jbuild.h"

#include <stdarg.h>

#include <json-c/json.h>

struct json_object *jb_set(struct json_object *o, const char *k, struct json_object *v)
{
	if (o && v && json_object_object_add(o, k, v) == 0)
		return o; /* o owns v now */
	json_object_put(o);
	json_object_put(v);
	return NULL;
}

struct json_object *jb_push(struct json_object *arr, struct json_object *v)
{
	if (arr && v && json_object_array_add(arr, v) == 0)
		return arr; /* arr owns v now */
	json_object_put(arr);
	json_object_put(v);
	return NULL;
}

/* jb_obj("k1", v1, "k2", v2, ..., JB_END): a typed sentinel, since a bare
 * NULL may be a plain int in a variadic call. */
struct json_object *jb_obj(const char *k, ...)
{
	struct json_object *o = json_object_new_object();
	va_list ap;
	va_start(ap, k);
	for (; k; k = va_arg(ap, const char *))
		o = jb_set(o, k, va_arg(ap, struct json_object *));
	va_end(ap);
	return o;
}

/* jb_arr(n, v1, ..., vn) */
struct json_object *jb_arr(int n, ...)
{
	struct json_object *arr = json_object_new_array();
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		arr = jb_push(arr, va_arg(ap, struct json_object *));
	va_end(ap);
	return arr;
}

struct json_object *jb_str(const char *s)
{
	return json_object_new_string(s);
}

struct json_object *jb_strn(struct str s)
{
	return json_object_new_string_len(s.p, (int)s.n);
}
