#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct loop_file {
	int mask;
	loop_file_proc *rproc;
	loop_file_proc *wproc;
	void *data;
};

/* epoll_wait batch; 64 ready fds per wake-up is plenty for one core. */
#define LOOP_BATCH 64

struct loop {
	int epfd;
	int setsize;
	int stop;
	uint64_t now_us; /* the clock when the last wait returned */
	uint64_t now_ms; /* the same in ms */
	struct loop_file *files;
	loop_hook_proc *before_sleep;
	void *before_sleep_data;
	int (*idle_pending)(void *data);
	loop_hook_proc *idle;
	void *idle_data;
	unsigned poll_max_us; /* 0: sleep at once (the default) */
	unsigned poll_us;     /* the window now, 0..poll_max_us */
	struct epoll_event ready[LOOP_BATCH];
};

uint64_t loop_clock_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

time_t loop_wall_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return ts.tv_sec;
}

uint64_t loop_clock_ms(void)
{
	return loop_clock_us() / 1000u;
}

struct loop *loop_new(int setsize)
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->setsize = setsize;
	/* calloc: pages of the table are only touched as fds get used, so a
	 * generous setsize costs no resident memory. */
	l->files = calloc((size_t)setsize, sizeof(*l->files));
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!l->files || l->epfd < 0) {
		int e = errno;
		loop_free(l);
		errno = e;
		return NULL;
	}
	l->now_us = loop_clock_us();
	l->now_ms = l->now_us / 1000u;
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->files);
	free(l);
}

static uint32_t to_epoll(int mask)
{
	uint32_t ev = 0;
	if (mask & LOOP_READABLE)
		ev |= EPOLLIN;
	if (mask & LOOP_WRITABLE)
		ev |= EPOLLOUT;
	return ev;
}

int loop_add(struct loop *l, int fd, int mask, loop_file_proc *proc, void *data)
{
	if (fd < 0 || fd >= l->setsize)
		return -ERANGE;
	struct loop_file *f = &l->files[fd];
	int op = f->mask == LOOP_NONE ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
	struct epoll_event ee = {.events = to_epoll(f->mask | mask), .data.fd = fd};
	if (epoll_ctl(l->epfd, op, fd, &ee) < 0)
		return -errno;
	f->mask |= mask;
	if (mask & LOOP_READABLE)
		f->rproc = proc;
	if (mask & LOOP_WRITABLE)
		f->wproc = proc;
	f->data = data;
	return 0;
}

void loop_del(struct loop *l, int fd, int mask)
{
	if (fd < 0 || fd >= l->setsize)
		return;
	struct loop_file *f = &l->files[fd];
	if (f->mask == LOOP_NONE)
		return;
	int left = f->mask & ~mask;
	struct epoll_event ee = {.events = to_epoll(left), .data.fd = fd};
	/* A DEL of an fd already closed fails with EBADF; nothing to undo. */
	(void)epoll_ctl(l->epfd, left ? EPOLL_CTL_MOD : EPOLL_CTL_DEL, fd, &ee);
	f->mask = left;
	if (!left)
		memset(f, 0, sizeof(*f));
}

int loop_mask(const struct loop *l, int fd)
{
	if (fd < 0 || fd >= l->setsize)
		return LOOP_NONE;
	return l->files[fd].mask;
}

void loop_set_before_sleep(struct loop *l, loop_hook_proc *proc, void *data)
{
	l->before_sleep = proc;
	l->before_sleep_data = data;
}

void loop_set_when_idle(struct loop *l, int (*pending)(void *data), loop_hook_proc *proc,
			void *data)
{
	l->idle_pending = pending;
	l->idle = proc;
	l->idle_data = data;
}

void loop_stop(struct loop *l)
{
	l->stop = 1;
}

uint64_t loop_now_ms(const struct loop *l)
{
	return l->now_ms;
}

uint64_t loop_now_us(const struct loop *l)
{
	return l->now_us;
}

/* One wait and dispatch.  Returns the number of fds handled, or -errno. */
static int loop_poll(struct loop *l, int timeout_ms)
{
	int n = epoll_wait(l->epfd, l->ready, LOOP_BATCH, timeout_ms);
	int e = errno;
	l->now_us = loop_clock_us(); /* even when interrupted: loop_wait reads it */
	l->now_ms = l->now_us / 1000u;
	if (n < 0)
		return e == EINTR ? 0 : -e;
	for (int i = 0; i < n; i++) {
		int fd = l->ready[i].data.fd;
		uint32_t ev = l->ready[i].events;
		struct loop_file *f = &l->files[fd];
		/* Errors and hang-ups go to whichever handler exists, so the
		 * owner sees them through its own read or write. */
		int fired = 0;
		if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))
			fired |= LOOP_READABLE;
		if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			fired |= LOOP_WRITABLE;
		fired &= f->mask;
		if (!fired)
			continue;
		/* One owner for both directions gets one call with both bits. */
		if (f->rproc == f->wproc || !(fired & LOOP_WRITABLE)) {
			loop_file_proc *p = (fired & LOOP_READABLE) ? f->rproc : f->wproc;
			if (p)
				p(l, fd, f->data, fired);
			continue;
		}
		if ((fired & LOOP_READABLE) && f->rproc)
			f->rproc(l, fd, f->data, LOOP_READABLE);
		/* The read handler may have closed or re-registered fd. */
		if ((f->mask & LOOP_WRITABLE) && f->wproc)
			f->wproc(l, fd, f->data, LOOP_WRITABLE);
	}
	return n;
}

/* Idle work pending: dispatch what is ready without sleeping; with nothing
 * ready, do the idle work.  The fds handled, 0 when it ran the idle work (or
 * had none), or -errno. */
static int loop_idle(struct loop *l)
{
	if (!l->idle || !l->idle_pending(l->idle_data))
		return 0;
	int r = loop_poll(l, 0);
	if (r == 0)
		l->idle(l, l->idle_data);
	return r;
}

void loop_set_busy_poll(struct loop *l, unsigned max_us)
{
	l->poll_max_us = max_us;
	l->poll_us = 0;
}

unsigned loop_busy_poll_window(const struct loop *l)
{
	return l->poll_us;
}

/* Waits for ready fds: with a busy-poll bound set, first polls without
 * sleeping for the current window, then sleeps, and adapts the window to
 * how long the wait took -- haltpoll's rule for a guest vCPU's poll before
 * it halts (Linux, Documentation/virt/guest-halt-polling.rst): a wake-up
 * after the window but within the bound grows it (x2, from
 * LOOP_POLL_GROW_START), one after the bound shrinks it (/2, to 0 under
 * the start).  Sparse requests thus keep it at 0 (no poll, two clock
 * reads per sleep); back-to-back ones keep it open and the loop never
 * pays a sleep and a wake-up between them. */
static int loop_wait(struct loop *l, int timeout_ms)
{
	if (!l->poll_max_us || timeout_ms == 0)
		return loop_poll(l, timeout_ms);
	uint64_t t0 = loop_clock_us();
	if (l->poll_us) {
		uint64_t until = t0 + l->poll_us;
		do {
			int r = loop_poll(l, 0);
			if (r != 0 || l->stop)
				return r; /* caught within the window: it stays */
		} while (l->now_us < until); /* the clock read as the poll returned */
	}
	int r = loop_poll(l, timeout_ms);
	/* the wait itself: from before the poll to the wake, not the
	 * handlers' time after it */
	uint64_t waited = l->now_us - t0;
	if (waited > l->poll_max_us) {
		l->poll_us /= 2;
		if (l->poll_us < LOOP_POLL_GROW_START)
			l->poll_us = 0;
	} else if (waited > l->poll_us) {
		unsigned grown = l->poll_us ? l->poll_us * 2 : LOOP_POLL_GROW_START;
		l->poll_us = grown < l->poll_max_us ? grown : l->poll_max_us;
	}
	return r;
}

int loop_once(struct loop *l, int timeout_ms)
{
	if (l->before_sleep)
		l->before_sleep(l, l->before_sleep_data);
	int r = loop_idle(l);
	if (r)
		return r;
	return loop_wait(l, timeout_ms);
}

int loop_run(struct loop *l)
{
	l->stop = 0;
	while (!l->stop) {
		if (l->before_sleep)
			l->before_sleep(l, l->before_sleep_data);
		if (l->stop)
			break;
		int r = loop_idle(l);
		if (r == 0 && !l->stop)
			r = loop_wait(l, -1);
		if (r < 0)
			return r;
	}
	return 0;
}

int loop_timer_new(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int loop_timer_arm(int tfd, uint64_t deadline_ms)
{
	struct itimerspec its = {0};
	if (deadline_ms) {
		its.it_value.tv_sec = (time_t)(deadline_ms / 1000u);
		its.it_value.tv_nsec = (long)(deadline_ms % 1000u) * 1000000L;
	}
	if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	return 0;
}

uint64_t loop_timer_ack(int tfd)
{
	uint64_t n = 0;
	if (read(tfd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return 0;
	return n;
}
