/* node: the agent's pod folder handling, as a hostile pod could lay it out
 * (issue 29 item 3).  node_uid_ok over folder names that could climb out;
 * node_open_sock over a real pods folder in a temporary directory: the
 * socket found, and refused where it is a FIFO (no writer: the open must
 * not wait; an alarm kills a hang), a sparse 8 GiB file, a folder, nothing,
 * or reached through a symbolic link at any of its components, inside the
 * pod's folder or out of it; node_cgroup_names_pod over /proc/<pid>/cgroup
 * texts of both cgroup drivers, another pod's, and look-alikes.  The agent
 * end to end (connecting, SO_PEERCRED, the netns) is
 * tests/integration/node_agent.sh. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "node.h"

#define UID "6f1e2b8c-0d43-4d5e-9c1a-2b3c4d5e6f70"

static void test_uid_ok(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int ok;
	} t[] = {
		{UID, 1},
		{"0123456789abcdef0123456789abcdef", 1}, /* a static pod's (a hash) */
		{"a", 1},
		{"A.b_c-d", 1},
		{"...", 1}, /* a name, not a way up */
		{"", 0},
		{".", 0},
		{"..", 0},
		{"../x", 0},
		{"a/b", 0},
		{"/etc", 0},
		{"a b", 0},
		{"a\n", 0},
		{"\xc3\xa9", 0},
		{"123456789012345678901234567890123456789012345678901234567890123", 1},  /* 63 */
		{"1234567890123456789012345678901234567890123456789012345678901234", 0}, /* 64 */
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (node_uid_ok(t[i].s) != t[i].ok)
			fail_msg("'%s': %d, want %d", t[i].s, node_uid_ok(t[i].s), t[i].ok);
}

static char root[256];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/imds-node, made; its
 * path into out. */
static void pod_dir(const char *uid, char *out, size_t cap)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/pods/%s/%s", root, uid, NODE_DIR_REL);
	for (char *c = p + strlen(root) + 1; *c; c++)
		if (*c == '/') {
			*c = 0;
			mkdir(p, 0755);
			*c = '/';
		}
	assert_int_equal(mkdir(p, 0755) == 0 || errno == EEXIST, 1);
	snprintf(out, cap, "%s", p);
}

/* A unix socket bound at path (longer than sun_path allows: bound by its
 * last component from its folder). */
static int bind_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char folder[600];
	const char *slash = strrchr(path, '/');
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), here = open(".", O_PATH | O_CLOEXEC);
	assert_true(fd >= 0 && here >= 0 && slash);
	snprintf(folder, sizeof(folder), "%.*s", (int)(slash - path), path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", slash + 1);
	assert_int_equal(chdir(folder), 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(fchdir(here), 0);
	close(here);
	return fd;
}

static int open_pods(void)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/pods", root);
	int d = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(d >= 0);
	return d;
}

static int setup(void **state)
{
	(void)state;
	const char *t = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/test_node.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(root))
		return -1;
	char p[300];
	snprintf(p, sizeof(p), "%s/pods", root);
	return mkdir(p, 0755);
}

static int teardown(void **state)
{
	(void)state;
	return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_open_sock(void **state)
{
	(void)state;
	char dir[512], sock[600], osock[600];
	struct stat st, want;
	int dfd = open_pods(), fd;

	alarm(20); /* a blocking open on the FIFO would hang: killed instead */

	/* no folder, then a folder without the socket */
	assert_int_equal(node_open_sock(dfd, UID, &st), -ENOENT);
	pod_dir(UID, dir, sizeof(dir));
	assert_int_equal(node_open_sock(dfd, UID, &st), -ENOENT);

	/* the sidecar's socket */
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	int s = bind_at(sock);
	fd = node_open_sock(dfd, UID, &st);
	assert_true(fd >= 0);
	assert_int_equal(stat(sock, &want), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_ino, want.st_ino);
	assert_int_equal(fcntl(fd, F_GETFL) & O_PATH, O_PATH);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(s);
	unlink(sock);

	/* not a socket: a FIFO (nobody writes), a huge file, a folder */
	assert_int_equal(mkfifo(sock, 0600), 0);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ENOTSOCK);
	unlink(sock);
	fd = open(sock, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)8 << 30), 0); /* sparse */
	close(fd);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ENOTSOCK);
	unlink(sock);
	assert_int_equal(mkdir(sock, 0755), 0);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ENOTSOCK);
	rmdir(sock);

	/* links, each to a real socket: as the last component, to one out
	 * of the pods folder and to one inside the pod's own folder */
	snprintf(osock, sizeof(osock), "%s/outside.sock", root);
	int o = bind_at(osock);
	assert_int_equal(symlink(osock, sock), 0);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ELOOP);
	unlink(sock);
	char inner[600];
	snprintf(inner, sizeof(inner), "%s/real.sock", dir);
	int in = bind_at(inner);
	assert_int_equal(symlink("real.sock", sock), 0);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ELOOP);
	unlink(sock);
	close(in);
	unlink(inner);

	/* the imds-node folder a link to a folder holding a socket */
	char elsewhere[300], esock[400];
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", root);
	assert_int_equal(mkdir(elsewhere, 0755), 0);
	snprintf(esock, sizeof(esock), "%s/agent.sock", elsewhere);
	int e = bind_at(esock);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(symlink(elsewhere, dir), 0);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ELOOP);
	unlink(dir);

	/* the pod's folder itself a link to another pod's, whose socket is real */
	static const char other[] = "0b9c8d7e-6f50-4a3b-8c2d-1e0f9a8b7c6d";
	char odir[512], osk[600], pfolder[300];
	pod_dir(other, odir, sizeof(odir));
	snprintf(osk, sizeof(osk), "%s/agent.sock", odir);
	int os2 = bind_at(osk);
	fd = node_open_sock(dfd, other, &st);
	assert_true(fd >= 0); /* reached by its own name */
	close(fd);
	snprintf(pfolder, sizeof(pfolder), "%s/pods/%s", root, UID);
	assert_int_equal(nftw(pfolder, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	assert_int_equal(symlink(other, pfolder), 0);
	assert_int_equal(node_open_sock(dfd, UID, &st), -ELOOP);

	/* names that are no pod's */
	assert_int_equal(node_open_sock(dfd, "..", &st), -EINVAL);
	assert_int_equal(node_open_sock(dfd, "../pods/" UID, &st), -EINVAL);
	assert_int_equal(node_open_sock(dfd, "", &st), -EINVAL);
	alarm(0);
	close(e);
	close(o);
	close(os2);
	close(dfd);
}

static void test_cgroup(void **state)
{
	(void)state;
	static const struct {
		const char *name, *text;
		int want;
	} t[] = {
		{"cgroupfs, v2", "0::/kubepods/besteffort/pod" UID "/1f2e3d\n", 1},
		{"cgroupfs, v2, the pod's own cgroup", "0::/kubepods/pod" UID "\n", 1},
		{"cgroupfs, v2, at the end without a line end", "0::/kubepods/pod" UID, 1},
		{"systemd, v2",
		 "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		 "6f1e2b8c_0d43_4d5e_9c1a_2b3c4d5e6f70.slice/cri-containerd-ab12.scope\n",
		 1},
		{"cgroupfs, v1, among other controllers",
		 "12:pids:/kubepods/pod" UID "/c1\n11:memory:/kubepods/pod" UID "/c1\n0::/\n", 1},
		{"another pod", "0::/kubepods/besteffort/pod0b9c8d7e-6f50-4a3b-8c2d-1e0f9a8b7c6d/c\n", 0},
		{"the node's", "0::/system.slice/containerd.service\n", 0},
		{"empty", "", 0},
		{"the UID with more after it", "0::/kubepods/pod" UID "0/c\n", 0},
		{"the UID as a suffix of a longer name", "0::/kubepods/xpod" UID "/c\n", 0},
		{"the UID in a container's name", "0::/kubepods/podx/pod" UID ".scope\n", 0},
		{"systemd form without .slice", "0::/kubepods-pod6f1e2b8c_0d43_4d5e_9c1a_2b3c4d5e6f70/x\n", 0},
		{"systemd form, the UID's dashes kept", "0::/kubepods-pod" UID ".slice/x\n", 0},
		{"no pod prefix", "0::/kubepods/" UID "/c\n", 0},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (node_cgroup_names_pod(t[i].text, UID) != t[i].want)
			fail_msg("%s: %d, want %d", t[i].name, node_cgroup_names_pod(t[i].text, UID),
				 t[i].want);
	/* a UID the agent would not follow matches nothing */
	assert_int_equal(node_cgroup_names_pod("0::/kubepods/pod../c\n", ".."), 0);
	assert_int_equal(node_cgroup_names_pod("0::/kubepods/pod/c\n", ""), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uid_ok),
		cmocka_unit_test_setup_teardown(test_open_sock, setup, teardown),
		cmocka_unit_test(test_cgroup),
	};
	return cmocka_run_group_tests_name("node", tests, NULL, NULL);
}
