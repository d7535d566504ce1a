/* jview: a read-only view of one JSON text (RFC 8259), the project's one
 * JSON reader: the webhook's AdmissionReview, the sidecar's custom
 * meta-data (metajson.c), Multus' network-status (netstatus.c) and a JWT's
 * claims (jwt.c) are all read with it.  Nothing but libc: the static
 * sidecar links it too.
 *
 * jv_parse() makes one strict, validating pass over the bytes and fills a
 * flat array of nodes, one per value and one per member name, in document
 * order.  A node points into the text and knows where its subtree ends,
 * so a lookup steps over whole subtrees; nothing is copied, and a string
 * is unescaped only when it is read (jv_str), into a buffer the view owns.
 *
 * Why not json-c's DOM: a ~20 KB virt-launcher pod review cost ~110 us of
 * json-c parsing and ~20 us of freeing (a few thousand small blocks), ~75%
 * of the webhook's CPU per review; the webhook reads perhaps forty of its
 * values.  This pass costs a fraction of that (bench/webhook_bench.sh).
 *
 * Strict: the grammar of RFC 8259 and nothing else (no comments, NaN,
 * single quotes, trailing commas, leading zeros), UTF-8 checked inside
 * strings, no control bytes in them, one value and only whitespace around
 * it.  An escaped lone surrogate decodes to U+FFFD, as Go's encoding/json
 * (the API server's) does.  Duplicate member names are kept; a lookup
 * returns the last, as json-c and Go do. */
#ifndef IMDS_JVIEW_H
#define IMDS_JVIEW_H

#include <stddef.h>
#include <stdint.h>

/* Nesting of arrays and objects (the parse keeps a stack this deep). */
#define JV_MAX_DEPTH 64
/* No node: an absent member, the end of an iteration. */
#define JV_NONE UINT32_MAX

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv_node {
	uint32_t off;  /* strings: the first byte after the quote; others: the first byte */
	uint32_t len;  /* strings: raw bytes between the quotes; scalars: their bytes */
	uint32_t n;    /* strings: the decoded length; arrays, objects: elements, members */
	uint32_t end;  /* the index of the first node after this one's subtree */
	uint32_t dec;  /* escaped strings: offset of the decoded bytes in the scratch
			  buffer once read, JV_NONE before */
	uint8_t type;  /* enum jv_type */
	uint8_t flags; /* JV_F_* */
};

#define JV_F_ESCAPED 1 /* a string with backslash escapes */
#define JV_F_INTEGER 2 /* a number with no fraction and no exponent */
#define JV_F_TRUE 4    /* the boolean true */
#define JV_F_LONE_SURROGATE 8 /* a string with an escaped lone surrogate (read as U+FFFD) */

struct jv {
	/* Limits, set before jv_parse (0: JV_MAX_DEPTH, 1 << 20 nodes). */
	unsigned max_depth;
	uint32_t max_nodes;
	/* The last parse: the text is borrowed, not copied. */
	const char *text;
	size_t len;
	struct jv_node *nodes; /* nodes[0] is the root */
	uint32_t count, cap;
	/* Set with nodes and cap before the first parse (JV_BORROW): the
	 * caller's array (on its stack, say) serves first; a text that needs
	 * more moves to the heap; jv_free never frees the caller's. */
	unsigned nodes_borrowed;
	char *scratch; /* decoded escaped strings */
	size_t scratch_len, scratch_cap;
	size_t err_off; /* where the last parse failed */
};

/* A view whose first nodes are the caller's array arr[] (a few dozen
 * for a small, bounded text: no allocation at all on its path). */
#define JV_BORROW(arr) .nodes = (arr), .cap = (uint32_t)(sizeof(arr) / sizeof((arr)[0])), .nodes_borrowed = 1

/* Parses text (not NUL-terminated; it must outlive the view's use) into v,
 * reusing v's buffers.  0; -EINVAL for text that is not JSON, -E2BIG past
 * max_nodes, -ENOMEM; on failure err says what and where ("invalid UTF-8
 * at byte 70"). */
int jv_parse(struct jv *v, const char *text, size_t len, char *err, size_t errlen);

/* Releases the buffers; the limits stay.  NULL is a no-op. */
void jv_free(struct jv *v);

static inline enum jv_type jv_type(const struct jv *v, uint32_t i)
{
	return (enum jv_type)v->nodes[i].type;
}

/* The value of member key (NUL-terminated) of object obj: the last one of
 * that name; JV_NONE when obj is JV_NONE or not an object, or has none. */
uint32_t jv_get(const struct jv *v, uint32_t obj, const char *key);

/* Iteration.  Arrays: jv_first() is the first element, jv_next() the one
 * after.  Objects: jv_first() is the first member's name node, jv_next()
 * the next name node, the value is name + 1.  JV_NONE at the end. */
uint32_t jv_first(const struct jv *v, uint32_t container);
uint32_t jv_next(const struct jv *v, uint32_t container, uint32_t i);

/* The decoded bytes of string node i (not NUL-terminated; may hold NUL
 * bytes), valid until the next jv_parse or jv_free.  0 or -ENOMEM. */
int jv_str(struct jv *v, uint32_t i, const char **p, size_t *n);

/* 1 when string node i decodes to exactly the n bytes at s. */
int jv_str_eq(const struct jv *v, uint32_t i, const char *s, size_t n);

/* The raw bytes of a number, boolean or null node. */
static inline const char *jv_raw(const struct jv *v, uint32_t i, size_t *n)
{
	*n = v->nodes[i].len;
	return v->text + v->nodes[i].off;
}

#endif
