/* http_park: requests that wait (res->park).
 *
 * A waiting request keeps its connection and its bytes, held unconsumed in
 * the connection's input, and nothing else; it sits on the L_PARKED list,
 * sorted by deadline like every list.  http_server_wake() runs the handler
 * on every waiting request again; at its deadline a request is run once
 * more with req->park_expired set, and the handler must answer then. */
#include "http.h"
#include "http_conn.h"

void park_hold(struct http_server *s, struct conn *c, unsigned park_ms)
{
	if (!c->parked) {
		c->parked = 1;
		c->park_deadline = loop_now_ms(s->loop) + park_ms;
		s->nparked++;
	}
	c->park_expired = 0;
}

void park_release(struct http_server *s, struct conn *c)
{
	if (c->parked) {
		c->parked = 0;
		c->park_expired = 0;
		c->park_answers++;
		s->nparked--;
	}
}

/* Runs a waiting request again.  1 while c lives, 0 once freed. */
static int unpark(struct http_server *s, struct conn *c)
{
	ssize_t used = conn_process(s, c, c->in, c->in_len);
	if (used < 0) {
		conn_free(s, c);
		return 0;
	}
	if (!c->close_after && conn_hold(c, c->in + used, c->in_len - (size_t)used,
				    conn_in_cap_limit(s) + s->scratch_cap) < 0) {
		conn_free(s, c);
		return 0;
	}
	if (c->close_after)
		conn_hold(c, NULL, 0, 0);
	return conn_settle(s, c);
}

/* Runs c's expired wait once more: the handler must answer it now.  A
 * connection still waiting on that same request is dropped; one whose next
 * pipelined request started a wait of its own keeps it. */
static void expire_one(struct http_server *s, struct conn *c)
{
	unsigned answers = c->park_answers;
	c->park_expired = 1;
	if (unpark(s, c) && c->parked && c->park_answers == answers)
		conn_free(s, c); /* the handler must answer once expired */
}

void http_server_wake(struct http_server *s)
{
	for (struct conn *c = s->lists[L_PARKED].head, *nx; c; c = nx) {
		nx = c->next;
		unpark(s, c);
	}
}

unsigned http_server_parked(const struct http_server *s)
{
	return s->nparked;
}

uint64_t park_expire(struct http_server *s, uint64_t now)
{
	uint64_t next = 0;
	for (struct conn *c = s->lists[L_PARKED].head, *nx; c; c = nx) {
		nx = c->next;
		if (c->deadline <= now) {
			expire_one(s, c);
		} else if (!next || c->deadline < next) {
			next = c->deadline;
		}
	}
	return next;
}

void park_drain(struct http_server *s)
{
	for (struct conn *w = s->lists[L_PARKED].head, *nx; w; w = nx) {
		nx = w->next;
		expire_one(s, w);
	}
}
