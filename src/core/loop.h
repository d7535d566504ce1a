/* loop: the one epoll event loop of a process (redis ae style).
 *
 * File events live in a table indexed by fd, each with a read and a write
 * handler and one void * for its owner.  Timers, signals and inotify are
 * ordinary fds in the same loop (timerfd, signalfd), so there are no hidden
 * threads and no second source of wake-ups.  A before-sleep hook runs once
 * per iteration, before epoll_wait; idle work (the log's flush, serve.c)
 * runs when nothing is ready and its owner says it is due. */
#ifndef IMDS_LOOP_H
#define IMDS_LOOP_H

#include <stdint.h>
#include <time.h>

enum {
	LOOP_NONE = 0,
	LOOP_READABLE = 1,
	LOOP_WRITABLE = 2,
};

struct loop;
typedef void loop_file_proc(struct loop *l, int fd, void *data, int mask);
typedef void loop_hook_proc(struct loop *l, void *data);

/* setsize: the largest fd + 1 the loop will ever watch.  Returns NULL with
 * errno set on failure. */
struct loop *loop_new(int setsize);
void loop_free(struct loop *l);

/* Register (or extend) interest in fd.  mask is LOOP_READABLE and/or
 * LOOP_WRITABLE; proc is called with the mask that fired.  0 or -errno. */
int loop_add(struct loop *l, int fd, int mask, loop_file_proc *proc, void *data);
/* Remove interest; removing the last bit forgets the fd.  Safe on unknown fds. */
void loop_del(struct loop *l, int fd, int mask);
int loop_mask(const struct loop *l, int fd);

void loop_set_before_sleep(struct loop *l, loop_hook_proc *proc, void *data);
/* Work that can wait while fds are ready (writing buffered log lines): once
 * pending(data) says there is some, the loop first looks for ready fds
 * without sleeping and calls proc only when there are none, right before it
 * sleeps.  Under load the work then waits for the next idle moment (or its
 * own bound: the log writes a full buffer at once); when idle it costs one
 * zero-timeout wait more.  pending() runs every iteration: cheap, and it
 * may say "not yet" (serve.c's log: only once a client hung up, or from its
 * own timer). */
void loop_set_when_idle(struct loop *l, int (*pending)(void *data), loop_hook_proc *proc,
			void *data);

/* Poll without sleeping, for up to max_us, before each sleep (0, the
 * default: sleep at once).  Between answers that come back to back the
 * sleep and the wake-up (the scheduler on both sides, the waker's
 * try_to_wake_up) cost more than a small answer; the window adapts as the
 * kernel's haltpoll governor adapts a vCPU's (loop.c), so sparse requests
 * keep it shut and cost no poll.  loop_busy_poll_window() is the window
 * now, in us (tests, diag). */
#define LOOP_POLL_GROW_START 10u
void loop_set_busy_poll(struct loop *l, unsigned max_us);
unsigned loop_busy_poll_window(const struct loop *l);

/* Run until loop_stop().  Returns 0, or -errno if epoll_wait fails hard. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
/* One iteration: before-sleep hook, wait up to timeout_ms (-1: forever),
 * dispatch (with idle work pending: a zero-timeout wait first, and the idle
 * hook only when it finds nothing).  Returns the number of ready fds, or -errno.  For tests and
 * fuzzers that drive the loop step by step. */
int loop_once(struct loop *l, int timeout_ms);

/* Monotonic time in milliseconds / microseconds.  loop_now_ms() and
 * loop_now_us() are the clock when the last wait returned, read once per
 * iteration (what timeouts compare against, and when the bytes of the
 * fds it found ready had come); loop_clock_* read the clock. */
uint64_t loop_now_ms(const struct loop *l);
uint64_t loop_now_us(const struct loop *l);
uint64_t loop_clock_us(void);
uint64_t loop_clock_ms(void);
/* The wall clock's second, from the coarse clock: a second's resolution is
 * all the Date header and the log's stamps need, and it is read without
 * the TSC (musl's time() reads the precise one). */
time_t loop_wall_sec(void);

/* A one-shot timer fd (timerfd, CLOCK_MONOTONIC) owned by the caller.
 * Arm at an absolute monotonic deadline in ms; deadline 0 disarms. */
int loop_timer_new(void);
int loop_timer_arm(int tfd, uint64_t deadline_ms);
/* Drain a fired timerfd; returns the expiration count or 0. */
uint64_t loop_timer_ack(int tfd);

#endif
