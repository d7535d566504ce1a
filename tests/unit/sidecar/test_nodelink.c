/* nodelink: the sidecar's side of the node agent, through its header, with
 * this test as the agent: `await` binds the socket, sends the sidecar's
 * configuration to a root peer only, waits past a peer that refuses the
 * pod or sends garbage, and returns 0 on "guard in place" with the guard
 * file written for `probe`; without an agent it returns 1 after its
 * timeout and says so; a path too long or held by something that is not a
 * socket is refused.  `probe` reads the guard file: missing, empty, a link
 * (not followed) or a FIFO (no writer: it must not wait) say the agent is
 * missing.  `run` needs an HTTP server and is covered by
 * tests/integration/node_agent.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "nodelink.h"
#include "nodemsg.h"

static char dir[200], sock[260], guard[260];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	(void)state;
	const char *t = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/test_nodelink.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	snprintf(guard, sizeof(guard), "%s/%s", dir, NODELINK_GUARD_FILE);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* `await` in a child, its stdout and stderr into files of the folder. */
static pid_t await_child(unsigned timeout_s)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char out[300];
		snprintf(out, sizeof(out), "%s/await.out", dir);
		if (!freopen(out, "w", stdout) || dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
			_exit(99);
		setvbuf(stdout, NULL, _IONBF, 0);
		struct imds_config cfg = {.ns = "default", .vm_name = "vm1", .hop_limit = 1};
		_exit(nodelink_await(&cfg, sock, timeout_s));
	}
	return pid;
}

static int child_status(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void read_file(const char *name, char *out, size_t cap)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	size_t n = 0;
	if (f) {
		n = fread(out, 1, cap - 1, f);
		fclose(f);
	}
	out[n] = 0;
}

/* The agent's side: connect once the socket is there (2 s at most). */
static int agent_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	assert_true(strlen(sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	for (int i = 0; i < 200; i++) {
		int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		assert_true(c >= 0);
		if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return c;
		close(c);
		usleep(10000);
	}
	fail_msg("no socket at %s after 2 s", sock);
	return -1;
}

static void agent_send(int c, const struct nodemsg *m)
{
	char buf[NODEMSG_MAX];
	int n = nodemsg_encode(m, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(send(c, buf, (size_t)n, MSG_NOSIGNAL), n);
}

/* What the sidecar sent first: its configuration. */
static void agent_expect_config(int c)
{
	char buf[NODEMSG_MAX + 1], err[256];
	struct nodemsg m;
	struct pollfd p = {c, POLLIN, 0};
	assert_int_equal(poll(&p, 1, 2000), 1);
	ssize_t n = recv(c, buf, sizeof(buf), 0);
	assert_true(n > 0);
	if (nodemsg_decode(buf, (size_t)n, &m, err, sizeof(err)))
		fail_msg("the sidecar's config: %s", err);
	assert_int_equal(m.type, NODEMSG_CONFIG);
	assert_string_equal(m.ns, "default");
	assert_string_equal(m.name, "vm1");
	assert_int_equal(m.port, 80);
	assert_int_equal(m.hops, 1);
}

static void test_await_guard(void **state)
{
	(void)state;
	char out[1024];
	alarm(30);
	pid_t pid = await_child(10);

	/* an agent that refuses the pod: await waits for the next */
	int c = agent_connect();
	agent_expect_config(c);
	struct nodemsg r = {.type = NODEMSG_REFUSED};
	snprintf(r.reason, sizeof(r.reason), "its cgroup does not name the pod");
	agent_send(c, &r);
	close(c);
	/* one that sends what is no message */
	c = agent_connect();
	agent_expect_config(c);
	assert_int_equal(send(c, "garbage\n", 8, MSG_NOSIGNAL), 8);
	char b[16];
	struct pollfd p = {c, POLLIN, 0};
	assert_int_equal(poll(&p, 1, 2000), 1);
	assert_int_equal(recv(c, b, sizeof(b), 0), 0); /* closed by the sidecar */
	close(c);
	/* and the agent that puts the guard in place */
	c = agent_connect();
	agent_expect_config(c);
	struct nodemsg g = {.type = NODEMSG_GUARD, .generation = 7};
	agent_send(c, &g);
	assert_int_equal(child_status(pid), 0);
	close(c);
	alarm(0);
	read_file("await.out", out, sizeof(out));
	assert_non_null(strstr(out, "refused this pod: its cgroup does not name the pod"));
	assert_non_null(strstr(out, "guard in place (generation 7)"));
	read_file(NODELINK_GUARD_FILE, out, sizeof(out));
	assert_non_null(strstr(out, "guard in place, generation 7"));
	assert_int_equal(access(sock, F_OK), -1); /* the socket removed */
	/* probe reads what await wrote */
	assert_int_equal(nodelink_probe(sock), 0);
}

/* Only root (the agent) is sent anything. */
static void test_await_not_root(void **state)
{
	(void)state;
	if (geteuid() != 0)
		fail_msg("this test needs root: it plays a non-root peer with setresuid, as "
			 "`make test` runs it (uid is %u)",
			 (unsigned)geteuid());
	alarm(30);
	pid_t pid = await_child(3);
	pid_t peer = fork();
	assert_true(peer >= 0);
	if (peer == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(98);
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		if (strlen(sock) >= sizeof(sa.sun_path))
			_exit(97);
		memcpy(sa.sun_path, sock, strlen(sock) + 1);
		/* the folder is root's: connect needs search and write on the
		 * socket only, which chmod below gives */
		for (int i = 0; i < 200; i++) {
			int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
			if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
				char buf[64];
				struct pollfd p = {c, POLLIN, 0};
				if (poll(&p, 1, 2000) != 1)
					_exit(3); /* neither config nor close */
				_exit(recv(c, buf, sizeof(buf), 0) == 0 ? 0 : 4);
			}
			close(c);
			usleep(10000);
		}
		_exit(2);
	}
	/* let the peer reach the socket */
	for (int i = 0; i < 200 && access(sock, F_OK); i++)
		usleep(10000);
	chmod(dir, 0755);
	chmod(sock, 0777);
	assert_int_equal(child_status(peer), 0); /* closed, no config sent */
	assert_int_equal(child_status(pid), 1);  /* and no guard */
	alarm(0);
}

static void test_await_timeout(void **state)
{
	(void)state;
	char out[1024];
	alarm(30);
	pid_t pid = await_child(1);
	assert_int_equal(child_status(pid), 1);
	alarm(0);
	read_file("await.out", out, sizeof(out));
	assert_non_null(strstr(out, "after 1 s: " NODELINK_MISSING));
	assert_int_equal(access(sock, F_OK), -1);
	assert_int_equal(access(guard, F_OK), -1);
	assert_int_equal(nodelink_probe(sock), 1);
}

static void test_await_bad_path(void **state)
{
	(void)state;
	struct imds_config cfg = {.ns = "default", .vm_name = "vm1"};
	char longp[200];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(nodelink_await(&cfg, longp, 1), 2);
	/* a file where the socket goes: refused, left alone */
	int fd = open(sock, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	assert_int_equal(nodelink_await(&cfg, sock, 1), 1);
	struct stat st;
	assert_int_equal(stat(sock, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 4);
}

static void test_probe(void **state)
{
	(void)state;
	/* nothing, an empty file */
	assert_int_equal(nodelink_probe(sock), 1);
	int fd = open(guard, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(nodelink_probe(sock), 1);
	unlink(guard);
	/* a link to a file that says the guard is in place: not followed */
	char real[300];
	snprintf(real, sizeof(real), "%s/elsewhere", dir);
	fd = open(real, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "guard in place, generation 1\n", 29), 29);
	close(fd);
	assert_int_equal(symlink(real, guard), 0);
	assert_int_equal(nodelink_probe(sock), 1);
	unlink(guard);
	/* a FIFO nobody writes: answered at once (an alarm kills a hang) */
	assert_int_equal(mkfifo(guard, 0644), 0);
	alarm(10);
	assert_int_equal(nodelink_probe(sock), 1);
	alarm(0);
	unlink(guard);
	/* the file itself */
	assert_int_equal(rename(real, guard), 0);
	assert_int_equal(nodelink_probe(sock), 0);
	/* a socket path without a folder: the guard file beside it, here */
	assert_int_equal(nodelink_probe("agent.sock"), access(NODELINK_GUARD_FILE, F_OK) == 0 ? 0 : 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_await_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_await_not_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_await_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_await_bad_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
	};
	return cmocka_run_group_tests_name("nodelink", tests, NULL, NULL);
}
