/* diag: the status file's reader as a table (keys, the last one winning,
 * errors in order and bounded, near-miss keys skipped, no newline in a
 * span); the running side writing that file (started, a state change, an
 * error line logged) read back by the reader; and `imds-server diag`
 * itself: its arguments, a configuration error named, JSON that parses,
 * the status file's content in it, and no data file's bytes ever (sizes
 * only).  tests/integration/diag.sh runs it against a plumbed sidecar. */
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

#include "diag.h"
#include "jwt.h"
#include "log.h"
#include "fixture.h"

/* The span as a string (static, two slots), "(absent)" for none. */
static const char *sp(struct diag_span s)
{
	static char buf[2][300];
	static int k;
	char *o = buf[k++ & 1];
	if (!s.p)
		return "(absent)";
	snprintf(o, sizeof(buf[0]), "%.*s", (int)s.n, s.p);
	return o;
}

static void test_parse(void **state)
{
	(void)state;
	static const char doc[] = "version 1.2.3\n"
				  "pid 42\n"
				  "state starting\n"
				  "statefull nope\n" /* not "state" */
				  "versions nope\n"
				  "error first one\n"
				  "garbage line\n"
				  "\n"
				  "error \n" /* no message: skipped */
				  "error second\n"
				  "state serving\n" /* the last wins */
				  "serving\n"       /* a key with no value */
				  "errors_total 2";  /* no final newline */
	struct diag_status ds;
	diag_status_parse(doc, sizeof(doc) - 1, &ds);
	assert_string_equal(sp(ds.key[0]), "1.2.3");
	assert_string_equal(sp(ds.key[1]), "42");
	assert_string_equal(sp(ds.key[2]), "(absent)"); /* started */
	assert_string_equal(sp(ds.key[3]), "(absent)"); /* updated */
	assert_string_equal(sp(ds.key[4]), "serving");
	assert_string_equal(sp(ds.key[5]), "");
	assert_non_null(ds.key[5].p);
	assert_string_equal(sp(ds.key[6]), "2");
	assert_int_equal(ds.nerr, 2);
	assert_string_equal(sp(ds.err[0]), "first one");
	assert_string_equal(sp(ds.err[1]), "second");
	/* Empty input: nothing. */
	diag_status_parse("", 0, &ds);
	assert_int_equal(ds.nerr, 0);
	for (size_t k = 0; k < DIAG_STATUS_NKEYS; k++)
		assert_null(ds.key[k].p);
	/* Errors past the bound are dropped, the first ones kept. */
	char many[4096];
	size_t o = 0;
	for (int i = 0; i < DIAG_STATUS_MAX_ERRORS + 5; i++)
		o += (size_t)snprintf(many + o, sizeof(many) - o, "error e%d\n", i);
	diag_status_parse(many, o, &ds);
	assert_int_equal(ds.nerr, DIAG_STATUS_MAX_ERRORS);
	assert_string_equal(sp(ds.err[0]), "e0");
	assert_string_equal(sp(ds.err[DIAG_STATUS_MAX_ERRORS - 1]), "e15");
	/* Bytes after the buffer's end are never read: a value cut there. */
	diag_status_parse("state servingXXXX", 12, &ds);
	assert_string_equal(sp(ds.key[4]), "servin");
}

static char dir[256];

static const char *status_text(void)
{
	static char buf[8192];
	char p[400];
	snprintf(p, sizeof(p), "%s/%s", dir, DIAG_STATUS_FILE);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The running side, once per process (it keeps its state in statics). */
static void test_status_file(void **state)
{
	(void)state;
	fx_mkdtemp(dir, sizeof(dir), "imds-diag");
	diag_status_set("waiting", NULL); /* before start: no file, no crash */
	assert_null(status_text());
	diag_status_start(dir, "v-test");
	const char *t = status_text();
	assert_non_null(t);
	struct diag_status ds;
	diag_status_parse(t, strlen(t), &ds);
	assert_string_equal(sp(ds.key[0]), "v-test");
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	assert_string_equal(sp(ds.key[1]), pid);
	assert_int_equal(ds.key[2].n, 20); /* 2026-01-02T03:04:05Z */
	assert_string_equal(sp(ds.key[4]), "starting");
	unsigned long before = log_error_count();

	diag_status_set("serving", "tap0 (default, masquerade)");
	t = status_text();
	diag_status_parse(t, strlen(t), &ds);
	assert_string_equal(sp(ds.key[4]), "serving");
	assert_string_equal(sp(ds.key[5]), "tap0 (default, masquerade)");
	/* pod mode: no agent lines */
	assert_null(ds.key[7].p);
	assert_null(ds.key[9].p);
	/* agent mode: what the node agent said, each its own line */
	diag_status_agent(DIAG_AGENT, "connected (since 2026-01-02T03:04:05Z)");
	diag_status_agent(DIAG_GUARD, "in place (since 2026-01-02T03:04:05Z, generation 1)");
	diag_status_agent(DIAG_LISTEN, "169.254.169.254:80 on veth-imds (generation 2)");
	diag_status_agent((enum diag_agent_key)7, "ignored"); /* no such key: no crash */
	t = status_text();
	diag_status_parse(t, strlen(t), &ds);
	assert_string_equal(diag_status_keys[7], "agent");
	assert_string_equal(sp(ds.key[7]), "connected (since 2026-01-02T03:04:05Z)");
	assert_string_equal(sp(ds.key[8]), "in place (since 2026-01-02T03:04:05Z, generation 1)");
	assert_string_equal(sp(ds.key[9]), "169.254.169.254:80 on veth-imds (generation 2)");
	assert_null(strstr(t, "ignored"));

	/* An error line rewrites it: counted, and the message listed. */
	log_error("diag test: a line\nwith a newline");
	t = status_text();
	diag_status_parse(t, strlen(t), &ds);
	char want[32];
	snprintf(want, sizeof(want), "%lu", before + 1);
	assert_string_equal(sp(ds.key[6]), want);
	assert_true(ds.nerr >= 1);
	assert_non_null(strstr(sp(ds.err[ds.nerr - 1]), "diag test: a line"));
	/* The temporary file never stays behind. */
	char tmp[400];
	struct stat sb;
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, DIAG_STATUS_FILE);
	assert_int_not_equal(stat(tmp, &sb), 0);
}

/* diag_main's stdout and stderr (into files) and its status. */
static int run_diag(const char *const *args, char *out, size_t outcap, char *err, size_t errcap)
{
	char *argv[8] = {"imds-server", "diag"};
	int argc = 2;
	for (size_t i = 0; args && args[i]; i++)
		argv[argc++] = (char *)args[i];
	FILE *fo = tmpfile(), *fe = tmpfile();
	assert_non_null(fo);
	assert_non_null(fe);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	int rc = diag_main(argc, argv, "v-test");
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	ssize_t n = pread(fileno(fo), out, outcap - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	n = pread(fileno(fe), err, errcap - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	fclose(fo);
	fclose(fe);
	return rc;
}

static void test_main_args(void **state)
{
	(void)state;
	static char out[1 << 17], err[4096];
	fx_env_clear();
	assert_int_equal(run_diag((const char *const[]){"--bogus", NULL}, out, sizeof(out), err, sizeof(err)), 2);
	assert_non_null(strstr(err, "unknown argument '--bogus'"));
	assert_string_equal(out, "");
	assert_int_equal(run_diag((const char *const[]){"--help", NULL}, out, sizeof(out), err, sizeof(err)), 0);
	assert_non_null(strstr(out, "usage: imds-server diag [--json]"));
	/* A network setting that does not parse: exit 2, naming it. */
	setenv("IMDS_INTERFACES", "tap0=nonsense", 1);
	assert_int_equal(run_diag(NULL, out, sizeof(out), err, sizeof(err)), 2);
	assert_non_null(strstr(err, "IMDS_INTERFACES"));
	fx_env_clear();
}

static void test_main_json_no_secrets(void **state)
{
	(void)state;
	static char out[1 << 17], err[4096];
	char p[600];
	fx_env_clear();
	/* The configuration incomplete: said, and still a document. */
	assert_int_equal(run_diag((const char *const[]){"--json", NULL}, out, sizeof(out), err, sizeof(err)), 0);
	int64_t exp;
	if (jwt_claims_exp(out, strlen(out), &exp) != -ENOENT)
		fail_msg("not a JSON object: %.300s", out);
	assert_non_null(strstr(out, "\"config_error\":\"IMDS_NAMESPACE: required"));

	/* Complete, with data files whose bytes must never show. */
	snprintf(p, sizeof(p), "%s/user-data", dir);
	fx_put_file(p, "#cloud-config\npassword: SECRET-USERDATA\n", 40);
	setenv("IMDS_USER_DATA_FILE", p, 1);
	snprintf(p, sizeof(p), "%s/token", dir);
	fx_put_file(p, "SECRET-TOKEN", 12);
	setenv("IMDS_TOKEN_PATH", p, 1);
	setenv("IMDS_NAMESPACE", "default", 1);
	setenv("IMDS_VM_NAME", "vm1", 1);
	setenv("IMDS_STATE_DIR", dir, 1);
	assert_int_equal(run_diag((const char *const[]){"--json", NULL}, out, sizeof(out), err, sizeof(err)), 0);
	if (jwt_claims_exp(out, strlen(out), &exp) != -ENOENT)
		fail_msg("not a JSON object: %.300s", out);
	assert_null(strstr(out, "config_error"));
	assert_null(strstr(out, "SECRET"));
	assert_non_null(strstr(out, "\"bytes\":40")); /* user-data */
	assert_non_null(strstr(out, "\"bytes\":12")); /* the token */
	/* The running side's file (test_status_file's) read back. */
	assert_non_null(strstr(out, "\"state\":\"serving\""));
	assert_non_null(strstr(out, "\"version\":\"v-test\""));
	/* Text too, and no secret there either. */
	assert_int_equal(run_diag(NULL, out, sizeof(out), err, sizeof(err)), 0);
	assert_null(strstr(out, "SECRET"));
	assert_non_null(strstr(out, "serving"));
	fx_env_clear();
	fx_rm_tree(dir);
}

int main(void)
{
	log_init("test_diag");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_status_file),
		cmocka_unit_test(test_main_args),
		cmocka_unit_test(test_main_json_no_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
