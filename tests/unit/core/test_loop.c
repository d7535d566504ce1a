/* loop: the epoll loop's own contract, one step at a time through
 * loop_once: interest per fd and direction, which handler gets which
 * event (one owner of both directions gets one call; hang-ups reach the
 * handler there is), a read handler removing its fd before the write
 * handler runs, the before-sleep hook, the idle work (only once nothing is
 * ready), loop_run/loop_stop, fds outside
 * the table refused, the timerfd helpers (armed in the past, so no
 * test waits on the clock), and the busy poll's window (a child process
 * writes to a pipe at set gaps: back to back opens it, sparse shuts it). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"

struct rec {
	int calls;
	int mask;     /* OR of every mask seen */
	int last_fd;
	int del_on_read; /* the read handler removes its fd */
	int stop;        /* the handler stops the loop */
	char buf[16];
};

static void on_event(struct loop *l, int fd, void *data, int mask)
{
	struct rec *r = data;
	r->calls++;
	r->mask |= mask;
	r->last_fd = fd;
	if (mask & LOOP_READABLE)
		(void)!read(fd, r->buf, sizeof(r->buf));
	if (r->del_on_read && (mask & LOOP_READABLE))
		loop_del(l, fd, LOOP_READABLE | LOOP_WRITABLE);
	if (r->stop)
		loop_stop(l);
}

/* Separate handlers for reading and writing, on their own records. */
static struct rec wrec;
static void on_write(struct loop *l, int fd, void *data, int mask)
{
	(void)data;
	on_event(l, fd, &wrec, mask);
}

static void test_add_range_and_bad_fd(void **state)
{
	(void)state;
	struct loop *l = loop_new(16);
	assert_non_null(l);
	struct rec r = {0};
	assert_int_equal(loop_add(l, -1, LOOP_READABLE, on_event, &r), -ERANGE);
	assert_int_equal(loop_add(l, 16, LOOP_READABLE, on_event, &r), -ERANGE);
	assert_int_equal(loop_mask(l, -1), LOOP_NONE);
	assert_int_equal(loop_mask(l, 16), LOOP_NONE);
	loop_del(l, -1, LOOP_READABLE); /* safe */
	loop_del(l, 99, LOOP_READABLE);
	/* A closed fd in range: epoll's error, and nothing recorded. */
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	int fd = p[0];
	close(p[0]);
	close(p[1]);
	if (fd < 16) {
		assert_int_equal(loop_add(l, fd, LOOP_READABLE, on_event, &r), -EBADF);
		assert_int_equal(loop_mask(l, fd), LOOP_NONE);
	}
	loop_free(l);
	loop_free(NULL);
}

static void test_readable_dispatch_and_mask(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	struct rec r = {0};
	assert_int_equal(loop_add(l, p[0], LOOP_READABLE, on_event, &r), 0);
	assert_int_equal(loop_mask(l, p[0]), LOOP_READABLE);
	/* Nothing ready: 0, no call. */
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(r.calls, 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.mask, LOOP_READABLE);
	assert_int_equal(r.last_fd, p[0]);
	/* Drained by the handler: not ready again. */
	assert_int_equal(loop_once(l, 0), 0);
	/* Removed: a write no longer calls it, and the fd is forgotten. */
	loop_del(l, p[0], LOOP_READABLE);
	assert_int_equal(loop_mask(l, p[0]), LOOP_NONE);
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(r.calls, 1);
	loop_del(l, p[0], LOOP_READABLE); /* twice: safe */
	close(p[0]);
	close(p[1]);
	loop_free(l);
}

static void test_one_owner_both_directions(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	struct rec r = {0};
	assert_int_equal(loop_add(l, sv[0], LOOP_READABLE, on_event, &r), 0);
	assert_int_equal(loop_add(l, sv[0], LOOP_WRITABLE, on_event, &r), 0);
	assert_int_equal(loop_mask(l, sv[0]), LOOP_READABLE | LOOP_WRITABLE);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(r.calls, 1); /* one call with both bits */
	assert_int_equal(r.mask, LOOP_READABLE | LOOP_WRITABLE);
	/* Dropping one direction keeps the other. */
	loop_del(l, sv[0], LOOP_WRITABLE);
	assert_int_equal(loop_mask(l, sv[0]), LOOP_READABLE);
	r = (struct rec){0};
	assert_int_equal(loop_once(l, 0), 0); /* writable no longer asked */
	assert_int_equal(r.calls, 0);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

static void test_two_handlers(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	struct rec r = {0};
	wrec = (struct rec){0};
	assert_int_equal(loop_add(l, sv[0], LOOP_READABLE, on_event, &r), 0);
	assert_int_equal(loop_add(l, sv[0], LOOP_WRITABLE, on_write, &r), 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.mask, LOOP_READABLE);
	assert_int_equal(wrec.calls, 1);
	assert_int_equal(wrec.mask, LOOP_WRITABLE);

	/* The read handler removes the fd: the write handler is not run. */
	r = (struct rec){.del_on_read = 1};
	wrec = (struct rec){0};
	assert_int_equal(write(sv[1], "y", 1), 1);
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(wrec.calls, 0);
	assert_int_equal(loop_mask(l, sv[0]), LOOP_NONE);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* The peer's close reaches a write-only watcher as a write event (EPOLLHUP
 * goes to whichever handler exists). */
static void test_hangup_reaches_handler(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	/* Fill the socket so it is not writable. */
	char junk[4096];
	memset(junk, 'j', sizeof(junk));
	while (write(sv[0], junk, sizeof(junk)) > 0)
		;
	wrec = (struct rec){0};
	assert_int_equal(loop_add(l, sv[0], LOOP_WRITABLE, on_write, NULL), 0);
	assert_int_equal(loop_once(l, 0), 0);
	close(sv[1]);
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(wrec.calls, 1);
	assert_int_equal(wrec.mask, LOOP_WRITABLE);
	close(sv[0]);
	loop_free(l);
}

static int hook_calls;
static void hook(struct loop *l, void *data)
{
	hook_calls++;
	if (data && hook_calls >= *(int *)data)
		loop_stop(l);
}

static void test_before_sleep_and_run(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	hook_calls = 0;
	loop_set_before_sleep(l, hook, NULL);
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(hook_calls, 2);

	/* loop_run returns once a handler stops it. */
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	struct rec r = {.stop = 1};
	assert_int_equal(loop_add(l, p[0], LOOP_READABLE, on_event, &r), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	hook_calls = 0;
	assert_int_equal(loop_run(l), 0);
	assert_int_equal(r.calls, 1);
	assert_true(hook_calls >= 1);
	/* A stop from the hook itself: run returns before waiting (nothing
	 * is ready, so a wait would block forever). */
	int stop_at = 1;
	hook_calls = 0;
	loop_set_before_sleep(l, hook, &stop_at);
	assert_int_equal(loop_run(l), 0);
	assert_int_equal(hook_calls, 1);
	close(p[0]);
	close(p[1]);
	loop_free(l);
}

/* Idle work (loop_set_when_idle): done only once no fd is ready, and only
 * while pending says there is some; loop_run does it before it sleeps. */
static int idle_left, idle_calls, idle_ready_then;
static int idle_pending(void *data)
{
	(void)data;
	return idle_left > 0;
}

static void idle_work(struct loop *l, void *data)
{
	idle_calls++;
	idle_left = 0;
	if (data) {
		/* did the fd still have bytes when the idle work ran? */
		char c;
		idle_ready_then = read(*(int *)data, &c, 1) == 1;
		loop_stop(l);
	}
}

static void test_when_idle(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	struct rec r = {0};
	assert_int_equal(loop_add(l, p[0], LOOP_READABLE, on_event, &r), 0);
	idle_calls = 0;
	idle_left = 0;
	loop_set_when_idle(l, idle_pending, idle_work, NULL);
	/* nothing pending: no idle work, whether or not fds are ready */
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(idle_calls, 0);
	/* pending, an fd ready: the fd first, the idle work not yet */
	idle_left = 1;
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(r.calls, 1);
	assert_int_equal(idle_calls, 0);
	/* pending, nothing ready: the idle work, once */
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(idle_calls, 1);
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(idle_calls, 1);
	/* loop_run: with 16 bytes to read one at a time (the handler reads
	 * them in pieces of 16, so one call; then the pipe is empty), the idle
	 * work runs once all is read, before the loop would sleep. */
	loop_del(l, p[0], LOOP_READABLE);
	struct rec one = {0};
	assert_int_equal(loop_add(l, p[0], LOOP_READABLE, on_event, &one), 0);
	assert_int_equal(write(p[1], "0123456789abcdef", 16), 16);
	idle_left = 1;
	idle_ready_then = -1;
	loop_set_when_idle(l, idle_pending, idle_work, &p[0]);
	assert_int_equal(loop_run(l), 0);
	assert_int_equal(idle_calls, 2);
	assert_int_equal(one.calls, 1);
	assert_int_equal(idle_ready_then, 0); /* nothing left unread when it ran */
	close(p[0]);
	close(p[1]);
	loop_free(l);
}

static void test_timer(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	int t = loop_timer_new();
	assert_true(t >= 0);
	struct rec r = {0};
	assert_int_equal(loop_add(l, t, LOOP_READABLE, on_event, &r), 0);
	/* Not armed: never fires; nothing to ack. */
	assert_int_equal(loop_once(l, 0), 0);
	assert_true(loop_timer_ack(t) == 0);
	/* A deadline already past fires at once. */
	uint64_t before = loop_now_ms(l);
	assert_int_equal(loop_timer_arm(t, 1), 0);
	r.del_on_read = 0;
	assert_int_equal(loop_once(l, 0), 1);
	assert_int_equal(r.calls, 1); /* on_event read the 8-byte count */
	assert_true(loop_now_ms(l) >= before);
	assert_true(loop_now_ms(l) <= loop_clock_ms());
	/* Armed far ahead and disarmed with 0: nothing. */
	assert_int_equal(loop_timer_arm(t, loop_clock_ms() + 3600000u), 0);
	assert_int_equal(loop_timer_arm(t, 0), 0);
	assert_int_equal(loop_once(l, 0), 0);
	/* Acked by the caller: the count, then 0. */
	loop_del(l, t, LOOP_READABLE);
	assert_int_equal(loop_timer_arm(t, 1), 0);
	assert_true(loop_timer_ack(t) == 1);
	assert_true(loop_timer_ack(t) == 0);
	/* A bad fd: the error, not a crash. */
	assert_int_equal(loop_timer_arm(-1, 5), -EBADF);
	close(t);
	loop_free(l);
}

/* Counts the bytes a writer child sends; the window after each wait. */
struct gaps {
	int bytes;
	unsigned widest;
};
static void on_gap_byte(struct loop *l, int fd, void *data, int mask)
{
	(void)mask;
	struct gaps *g = data;
	char b[64];
	ssize_t n = read(fd, b, sizeof(b));
	if (n > 0)
		g->bytes += (int)n;
	unsigned w = loop_busy_poll_window(l);
	if (w > g->widest)
		g->widest = w;
}

/* A child writes n bytes, gap_us apart; the loop waits for all of them.
 * Returns the widest window seen. */
static unsigned run_gaps(struct loop *l, int n, long gap_us)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < n; i++) {
			struct timespec ts = {gap_us / 1000000, (gap_us % 1000000) * 1000};
			nanosleep(&ts, NULL);
			if (write(p[1], "x", 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	struct gaps g = {0};
	assert_int_equal(loop_add(l, p[0], LOOP_READABLE, on_gap_byte, &g), 0);
	int quiet = 0;
	while (g.bytes < n && quiet < 10) /* a timeout per missing byte, never a hang */
		quiet = loop_once(l, 2000) == 0 ? quiet + 1 : 0;
	assert_int_equal(g.bytes, n);
	loop_del(l, p[0], LOOP_READABLE);
	close(p[0]);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return g.widest;
}

static void test_busy_poll(void **state)
{
	(void)state;
	struct loop *l = loop_new(1024);
	/* off by default: the window never opens */
	assert_int_equal(run_gaps(l, 20, 200), 0);
	/* bytes 200 us apart, within a 5 ms bound: each wait grows the window
	 * (10, 20, 40, ... us) until it holds the gap; a loaded machine may
	 * stretch a gap past the bound now and then, which halves it once */
	loop_set_busy_poll(l, 5000);
	assert_int_equal(loop_busy_poll_window(l), 0);
	unsigned widest = run_gaps(l, 40, 200);
	assert_true(widest >= 80);
	assert_true(widest <= 5000);
	/* bytes 20 ms apart: every wait outlasts the bound, the window halves
	 * each time and shuts under the start */
	run_gaps(l, 12, 20000);
	assert_int_equal(loop_busy_poll_window(l), 0);
	/* a zero timeout never polls and never moves the window */
	assert_int_equal(loop_once(l, 0), 0);
	assert_int_equal(loop_busy_poll_window(l), 0);
	/* open again, then off: the window is reset */
	run_gaps(l, 20, 200);
	loop_set_busy_poll(l, 0);
	assert_int_equal(loop_busy_poll_window(l), 0);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_range_and_bad_fd),
		cmocka_unit_test(test_readable_dispatch_and_mask),
		cmocka_unit_test(test_one_owner_both_directions),
		cmocka_unit_test(test_two_handlers),
		cmocka_unit_test(test_hangup_reaches_handler),
		cmocka_unit_test(test_before_sleep_and_run),
		cmocka_unit_test(test_when_idle),
		cmocka_unit_test(test_timer),
		cmocka_unit_test(test_busy_poll),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
