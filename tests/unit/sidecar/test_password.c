/* password: the guest's encrypted password (password.c): password_open
 * (no state folder, not a folder, a path too long, a stored file too big
 * to be one), password_serve on hand-built calls in memory (the byte
 * range a password may hold, stored once, HEAD as GET); then the service
 * through the handler on OpenStack's paths (bounds, 409, the state file
 * 0600 and whole, a restart, a folder that cannot be written), moved here
 * from test_openstack.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "password.h"
#include "handler.h"

static void test_open(void **state)
{
	struct fx *f = *state;
	struct password p;
	char err[300] = "";
	memset(&p, 0x5a, sizeof(p));
	assert_int_equal(password_open(&p, NULL, err, sizeof(err)), 0);
	assert_string_equal(p.path, "");
	assert_null(p.pw);
	password_close(&p);

	put_str(in_dir(f, "file"), "x");
	char want[600];
	snprintf(want, sizeof(want), "IMDS_STATE_DIR '%s': not a directory", in_dir(f, "file"));
	assert_int_equal(password_open(&p, in_dir(f, "file"), err, sizeof(err)), -EINVAL);
	assert_string_equal(err, want);
	assert_int_equal(password_open(&p, in_dir(f, "missing"), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a directory"));

	/* A folder whose path leaves no room for /password. */
	static char deep[4200];
	size_t n = (size_t)snprintf(deep, sizeof(deep), "%s", f->dir);
	while (n < 4090) {
		size_t add = 4090 - n - 1 > 200 ? 200 : 4090 - n - 1;
		deep[n++] = '/';
		memset(deep + n, 'd', add);
		n += add;
		deep[n] = '\0';
		assert_int_equal(mkdir(deep, 0700), 0);
	}
	assert_int_equal(password_open(&p, deep, err, sizeof(err)), -ENAMETOOLONG);
	assert_string_equal(err, "IMDS_STATE_DIR: too long");
	assert_string_equal(p.path, "");

	/* A stored file too big to be a password: none is stored (logged). */
	assert_int_equal(mkdir(in_dir(f, "st"), 0700), 0);
	static char big[PASSWORD_MAX + 1];
	memset(big, 'A', sizeof(big));
	put_file(in_dir(f, "st/password"), big, sizeof(big));
	assert_int_equal(password_open(&p, in_dir(f, "st"), err, sizeof(err)), 0);
	assert_null(p.pw);
	password_close(&p);
	put_file(in_dir(f, "st/password"), big, PASSWORD_MAX);
	assert_int_equal(password_open(&p, in_dir(f, "st"), err, sizeof(err)), 0);
	assert_non_null(p.pw);
	assert_int_equal(p.pw->len, PASSWORD_MAX);
	password_close(&p);
	assert_null(p.pw);
}

/* One request to password_serve: method, body; the status. */
static int serve(struct password *p, enum http_method m, const char *body, size_t n,
		 struct http_response *res)
{
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = m;
	rq.body = (struct http_span){body, n};
	memset(res, 0, sizeof(*res));
	struct call c = {.req = &rq, .res = res, .self = p};
	password_serve(&c);
	return res->status;
}

static void test_serve_in_memory(void **state)
{
	(void)state;
	struct password p;
	char err[100];
	assert_int_equal(password_open(&p, NULL, err, sizeof(err)), 0);
	struct http_response res;
	/* Nothing stored: an empty 200, never cached. */
	assert_int_equal(serve(&p, HTTP_M_GET, NULL, 0, &res), 200);
	assert_int_equal(res.body_len, 0);
	assert_null(res.blob);
	assert_non_null(strstr(res.extra, "Cache-Control: no-store\r\n"));
	/* Every byte outside printable ASCII is refused, wherever it is. */
	for (int b = 0; b < 256; b++) {
		char pw[3] = {'a', (char)b, 'z'};
		int st = serve(&p, HTTP_M_POST, pw, 3, &res);
		int printable = b >= 0x20 && b <= 0x7e;
		if (printable ? st != 409 && st != 200 : st != 400)
			fail_msg("byte 0x%02x: %d", b, st);
		if (st == 200) /* the first printable one is stored: ' ' */
			assert_int_equal(b, 0x20);
	}
	assert_non_null(p.pw);
	assert_memory_equal(p.pw->data, "a z", 4);
	/* GET and HEAD: the stored bytes, by reference. */
	assert_int_equal(serve(&p, HTTP_M_GET, NULL, 0, &res), 200);
	assert_ptr_equal(res.blob, p.pw);
	blob_unref(res.blob);
	assert_int_equal(serve(&p, HTTP_M_HEAD, NULL, 0, &res), 200);
	assert_ptr_equal(res.blob, p.pw);
	blob_unref(res.blob);
	/* Stored once: a second one is refused, the first kept. */
	assert_int_equal(serve(&p, HTTP_M_POST, "other", 5, &res), 409);
	assert_memory_equal(p.pw->data, "a z", 4);
	password_close(&p);
}

/* ---- through the handler, on OpenStack's paths ------------------------------------------ */

static void test_password(void **state)
{
	struct fx *f = *state;
	char st[512];
	snprintf(st, sizeof(st), "%s", in_dir(f, "state"));
	assert_int_equal(mkdir(st, 0700), 0);
	setenv("IMDS_STATE_DIR", st, 1);
	struct imds_app *a = start(f);
	struct resp r;
	static const char *const paths[] = {"/openstack/latest/password",
					    "/openstack/2013-04-04/password",
					    "/openstack/2018-08-27/password"};
	for (size_t i = 0; i < 3; i++) {
		call(a, "GET", paths[i], 0, NULL, &r);
		EXPECT_STATUS(paths[i], &r, 200);
		EXPECT_BODY(paths[i], &r, "");
		EXPECT_HEADER(paths[i], &r, "Cache-Control: no-store");
		resp_free(&r);
	}
	/* Not in versions before 2013-04-04; no other method. */
	call(a, "GET", "/openstack/2012-08-10/password", 0, NULL, &r);
	expect_error("GET 2012-08-10 password", &r, 404, "not_found");
	resp_free(&r);
	post_password(a, "/openstack/2012-08-10/password", "x", 1, &r);
	expect_error("POST 2012-08-10 password", &r, 405, "method_not_allowed");
	resp_free(&r);
	call(a, "PUT", "/openstack/latest/password", 0, NULL, &r);
	expect_error("PUT password", &r, 405, "method_not_allowed");
	EXPECT_HEADER("PUT password", &r, "Allow: GET, HEAD, POST");
	resp_free(&r);

	char big[PASSWORD_MAX + 1];
	memset(big, 'A', sizeof(big));
	post_password(a, paths[0], big, sizeof(big), &r);
	expect_error("1025 bytes", &r, 400, "password_too_long");
	resp_free(&r);
	post_password(a, paths[0], "", 0, &r);
	expect_error("empty", &r, 400, "password_empty");
	resp_free(&r);
	post_password(a, paths[0], "a\nb", 3, &r);
	expect_error("newline", &r, 400, "password_not_text");
	resp_free(&r);
	static const char *const fwd[] = {"X-Forwarded-For", "10.0.0.1", NULL};
	next_body = (struct http_span){"abc", 3};
	call(a, "POST", paths[0], 0, fwd, &r);
	expect_error("forwarded", &r, 403, "forbidden");
	resp_free(&r);

	post_password(a, paths[1], big, PASSWORD_MAX, &r);
	EXPECT_STATUS("1024 bytes stored", &r, 200);
	resp_free(&r);
	post_password(a, paths[0], "other", 5, &r);
	expect_error("a second POST", &r, 409, "password_exists");
	resp_free(&r);
	call(a, "GET", paths[0], 0, NULL, &r);
	EXPECT_STATUS("GET stored", &r, 200);
	assert_int_equal(r.len, PASSWORD_MAX);
	assert_memory_equal(r.body, big, PASSWORD_MAX);
	resp_free(&r);

	/* A restarted sidecar has it, from the state folder (one file, 0600). */
	struct stat sb;
	assert_int_equal(stat(in_dir(f, "state/password"), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, PASSWORD_MAX);
	assert_int_not_equal(stat(in_dir(f, "state/password.tmp"), &sb), 0);
	a = start(f);
	call(a, "GET", paths[2], 0, NULL, &r);
	assert_int_equal(r.len, PASSWORD_MAX);
	resp_free(&r);
	post_password(a, paths[0], "other", 5, &r);
	expect_error("POST after a restart", &r, 409, "password_exists");
	resp_free(&r);

	/* A state folder that cannot be written: 500, nothing stored, retry works. */
	setenv("IMDS_STATE_DIR", in_dir(f, "ro"), 1);
	assert_int_equal(mkdir(in_dir(f, "ro"), 0500), 0);
	a = start(f);
	if (geteuid() != 0) { /* root writes anyway */
		post_password(a, paths[0], "abc", 3, &r);
		expect_error("read-only state", &r, 500, "password_not_stored");
		resp_free(&r);
	}
	/* Not a folder: the sidecar does not start. */
	setenv("IMDS_STATE_DIR", in_dir(f, "state/password"), 1);
	char err[256];
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), 0);
	imds_app_free(f->app);
	f->app = imds_app_new(NULL, &f->cfg, err, sizeof(err));
	assert_null(f->app);
	assert_non_null(strstr(err, "IMDS_STATE_DIR"));
	setenv("IMDS_STATE_DIR", "relative", 1);
	assert_int_equal(config_from_env(&f->cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "IMDS_STATE_DIR"));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_open),
		cmocka_unit_test(test_serve_in_memory),
		T(test_password),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
