/*
 * object.c - the call object (call.h): a call of either door as its client
 * reads it - the reference count, the answer bytes, parking and waking the
 * reader, and the client letting go.
 */
#include <stdlib.h>
#include <string.h>

#include "awooop/call.h"
#include "awooop/clock.h"

void aw_call_init(aw_call *c, size_t out_max, aw_call_fn wake, void *ud, void (*destroy)(aw_call *))
{
	atomic_init(&c->refs, 1);
	atomic_init(&c->gone, 0);
	pthread_mutex_init(&c->mu, NULL);
	c->out = (aw_buf)AW_BUF_INIT(out_max);
	c->wake = wake;
	c->wake_ud = ud;
	c->destroy = destroy;
	c->door = NULL; /* not in a registry yet */
	c->rnext = c->rprev = NULL;
	atomic_init(&c->cut, 0);
}

void aw_call_hold(aw_call *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void aw_call_put(aw_call *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	c->destroy(c);
	aw_buf_free(&c->out);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void aw_call_wake(aw_call *c)
{
	if (c->parked && c->wake) {
		c->parked = 0;
		c->wake(c->wake_ud);
	}
}

void aw_call_add(aw_call *c, const char *pre, const char *data, size_t n, const char *post)
{
	size_t lp = strlen(pre), lq = strlen(post);
	if (c->out.len + lp + n + lq <= c->out.max) {
		aw_buf_add(&c->out, pre, lp);
		aw_buf_add(&c->out, data, n);
		aw_buf_add(&c->out, post, lq);
	}
	aw_call_wake(c);
}

int aw_call_head(aw_call *c, int (*head)(aw_call *c, void *arg), void *arg, aw_call_fn park,
		 void *pud)
{
	pthread_mutex_lock(&c->mu);
	int h = head(c, arg);
	if (!h) {
		c->parked = 1;
		if (park)
			park(pud);
	}
	pthread_mutex_unlock(&c->mu);
	return h;
}

ssize_t aw_call_read(aw_call *c, char *buf, size_t max, aw_call_fn park, void *pud)
{
	pthread_mutex_lock(&c->mu);
	ssize_t n = (ssize_t)aw_buf_drain(&c->out, &c->out_off, buf, max);
	if (!n && c->eof) {
		n = -1;
	} else if (!n) {
		c->parked = 1;
		park(pud);
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

int aw_call_gone(aw_call *c)
{
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->gone, 1);
	c->parked = 0;
	int whole = c->eof;
	pthread_mutex_unlock(&c->mu);
	return whole;
}

aw_err aw_call_await(aw_wake *w, const atomic_bool *stop, int64_t deadline_ns, const char *what,
		     aw_error *err)
{
	while (!aw_wake_wait(w, 100)) {
		if (stop && atomic_load(stop))
			return aw_fail(err, AW_E_RUN_CANCELLED, "stopped while the %s ran", what);
		if (deadline_ns && aw_clock_mono_ns() >= deadline_ns)
			return aw_fail(err, AW_E_RUN_TIMEOUT, "the %s outlived its deadline", what);
	}
	return AW_OK;
}
