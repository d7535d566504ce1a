/* tapwire: stands in for qemu in the network tests.  qemu holds the VM's
 * tap (in the launcher pod) and moves the guest's frames in and out of it;
 * tapwire holds the same tap, queue and all, and moves the frames to and
 * from a tap of its own in a "guest" network namespace, whose stack plays
 * the guest.  So the pod sees exactly what it sees with a VM: frames
 * received on a real tun/tap device (netdev ingress hooks, the bridge, the
 * tap's queues), which a veth named tap0 would not give.
 *
 *   tapwire POD_NETNS TAP GUEST_NETNS GUEST_IF [POD_NETNS TAP]...
 *
 * TAP must exist in POD_NETNS (KubeVirt creates it: `ip tuntap add ... mode
 * tap multi_queue user 107`); GUEST_IF is created in GUEST_NETNS, down, and
 * lives as long as tapwire does.  Prints "ready" on stdout once both are
 * attached; runs until SIGTERM/SIGINT or a device goes away.
 *
 * A live migration: each SIGUSR1 moves the pod side to the next POD_NETNS
 * TAP pair (the target pod's tap, which the target's qemu holds once the
 * source's stopped), and prints "switched N" (N from 1).  The guest's side
 * stays attached throughout, so GUEST_IF never loses its carrier and the
 * guest keeps its neighbour table, as a migrated VM keeps its memory. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/if.h>
#include <linux/if_tun.h>

static volatile sig_atomic_t stop;
static volatile sig_atomic_t next_pod;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	next_pod = 1;
}

static int enter_netns(const char *name)
{
	char path[256];
	int fd, ret;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "tapwire: %s: %s\n", path, strerror(errno));
		return -1;
	}
	ret = setns(fd, CLONE_NEWNET);
	if (ret)
		fprintf(stderr, "tapwire: setns %s: %s\n", name, strerror(errno));
	close(fd);
	return ret;
}

/* Attaches to (or creates) tap name; multi-queue first, as KubeVirt's taps
 * are, then single-queue. */
static int tap_open(const char *name, int create)
{
	static const short tries[2] = {IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE, IFF_TAP | IFF_NO_PI};
	for (int i = create ? 1 : 0; i < 2; i++) {
		struct ifreq ifr;
		int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0) {
			fprintf(stderr, "tapwire: /dev/net/tun: %s\n", strerror(errno));
			return -1;
		}
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
		ifr.ifr_flags = tries[i];
		if (ioctl(fd, TUNSETIFF, &ifr) == 0)
			return fd;
		if (i == 1 || errno != EINVAL)
			fprintf(stderr, "tapwire: TUNSETIFF %s: %s\n", name, strerror(errno));
		close(fd);
	}
	return -1;
}

/* Moves every frame waiting on from to to.  0, or -1 when a side is gone. */
static int pump(int from, int to)
{
	static unsigned char buf[65536 + 64];
	for (int i = 0; i < 64; i++) {
		ssize_t n = read(from, buf, sizeof(buf));
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		if (n == 0)
			return -1;
		/* A full queue drops the frame, as a link would. */
		if (write(to, buf, (size_t)n) < 0 && errno != EAGAIN && errno != EIO)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pollfd p[2];
	int pod, guest, hop = 0;

	if (argc < 5 || (argc - 5) % 2) {
		fprintf(stderr, "usage: tapwire POD_NETNS TAP GUEST_NETNS GUEST_IF [POD_NETNS TAP]...\n");
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGUSR1, on_usr1);
	if (enter_netns(argv[1]) || (pod = tap_open(argv[2], 0)) < 0)
		return 1;
	if (enter_netns(argv[3]) || (guest = tap_open(argv[4], 1)) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	p[0] = (struct pollfd){.fd = pod, .events = POLLIN};
	p[1] = (struct pollfd){.fd = guest, .events = POLLIN};
	while (!stop) {
		if (next_pod) {
			int to;
			next_pod = 0;
			if (5 + 2 * hop + 1 >= argc) {
				fprintf(stderr, "tapwire: SIGUSR1 with no next pod\n");
				return 1;
			}
			close(pod); /* the source's qemu stops, the target's resumes */
			if (enter_netns(argv[5 + 2 * hop]) || (to = tap_open(argv[6 + 2 * hop], 0)) < 0)
				return 1;
			pod = to;
			p[0].fd = pod;
			hop++;
			printf("switched %d\n", hop);
			fflush(stdout);
		}
		int n = poll(p, 2, 1000);
		if (n < 0 && errno != EINTR)
			return 1;
		if ((p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) ||
		    (p[1].revents & (POLLERR | POLLHUP | POLLNVAL)))
			return 1;
		if ((p[0].revents & POLLIN) && pump(pod, guest))
			return 1;
		if ((p[1].revents & POLLIN) && pump(guest, pod))
			return 1;
	}
	return 0;
}
