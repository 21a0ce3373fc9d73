/*
 * test_call.c - unit tests of the call object (call.h): a reader parked on
 * an empty call is woken by a writer on another thread and reads whole
 * events in order, then the end; the ceiling drops an event whole; the head
 * parks until the door decides; a client gone is woken no more; the door's
 * destructor runs once, at the last put.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "awooop/alloc.h"
#include "awooop/call.h"
#include "awooop/wake.h"

typedef struct {
	aw_call base;
	int decided; /* the door's head (base.mu) */
	int *freed;
} door_call;

static void door_free(aw_call *b)
{
	door_call *c = (door_call *)b;
	(*c->freed)++;
}

static door_call *door_new(size_t max, aw_wake *w, int *freed)
{
	door_call *c = aw_calloc(1, sizeof *c);
	assert_non_null(c);
	aw_call_init(&c->base, max, w ? aw_wake_signal : NULL, w, door_free);
	c->freed = freed;
	return c;
}

static int parks;
static void park(void *ud)
{
	(void)ud;
	parks++;
}

#define EVENTS 200

static void *writer(void *arg)
{
	door_call *c = arg;
	for (int i = 0; i < EVENTS; i++) {
		char d[32];
		int n = snprintf(d, sizeof d, "{\"n\":%d}", i);
		pthread_mutex_lock(&c->base.mu);
		aw_call_add(&c->base, "data: ", d, (size_t)n, "\n\n");
		pthread_mutex_unlock(&c->base.mu);
	}
	pthread_mutex_lock(&c->base.mu);
	c->base.eof = 1;
	aw_call_wake(&c->base);
	pthread_mutex_unlock(&c->base.mu);
	aw_call_put(&c->base); /* the writer's */
	return NULL;
}

/* A reader parked on an empty call, woken by a writer thread: every event
 * whole and in order, then -1; the destructor runs once, at the last put. */
static void test_park_wake_read(void **state)
{
	(void)state;
	aw_wake w;
	aw_wake_init(&w);
	int freed = 0;
	door_call *c = door_new(1 << 20, &w, &freed);
	char buf[7]; /* reads smaller than an event: events span reads */
	parks = 0;
	assert_int_equal(aw_call_read(&c->base, buf, sizeof buf, park, NULL), 0);
	assert_int_equal(parks, 1);
	assert_int_equal(c->base.parked, 1);
	aw_call_hold(&c->base);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, writer, c), 0);
	char got[EVENTS * 24];
	size_t len = 0;
	for (;;) {
		ssize_t n = aw_call_read(&c->base, buf, sizeof buf, park, NULL);
		if (n < 0)
			break;
		if (!n) { /* parked: the writer wakes us */
			assert_true(aw_wake_wait(&w, 5000));
			continue;
		}
		assert_true(len + (size_t)n < sizeof got);
		memcpy(got + len, buf, (size_t)n);
		len += (size_t)n;
	}
	got[len] = 0;
	pthread_join(t, NULL);
	char want[32], *p = got;
	for (int i = 0; i < EVENTS; i++) {
		int n = snprintf(want, sizeof want, "data: {\"n\":%d}\n\n", i);
		assert_memory_equal(p, want, (size_t)n);
		p += n;
	}
	assert_int_equal(p - got, (ptrdiff_t)len);
	assert_int_equal(aw_call_read(&c->base, buf, sizeof buf, park, NULL), -1);
	assert_int_equal(freed, 0); /* the reader's reference is left */
	aw_call_put(&c->base);
	assert_int_equal(freed, 1);
	aw_call_put(NULL);
	aw_wake_destroy(&w);
}

/* Past the ceiling an event is dropped whole; what fits still goes. */
static void test_whole_or_nothing(void **state)
{
	(void)state;
	int freed = 0;
	door_call *c = door_new(20, NULL, &freed);
	pthread_mutex_lock(&c->base.mu);
	aw_call_add(&c->base, "data: ", "0123456789", 10, "\n\n"); /* 18 */
	aw_call_add(&c->base, "data: ", "x", 1, "\n\n");	   /* 9: past 20 */
	aw_call_add(&c->base, "", "ab", 2, "");			   /* 20: fits */
	c->base.eof = 1;
	pthread_mutex_unlock(&c->base.mu);
	char buf[64];
	ssize_t n = aw_call_read(&c->base, buf, sizeof buf, park, NULL);
	assert_int_equal(n, 20);
	assert_memory_equal(buf, "data: 0123456789\n\nab", 20);
	assert_int_equal(aw_call_read(&c->base, buf, sizeof buf, park, NULL), -1);
	aw_call_put(&c->base);
	assert_int_equal(freed, 1);
}

static int head_of(aw_call *b, void *arg)
{
	*(int *)arg += 1;
	return ((door_call *)b)->decided;
}

/* The head parks until the door decides (park may be NULL); a client gone
 * is not woken, and learns whether the answer was whole. */
static void test_head_gone(void **state)
{
	(void)state;
	aw_wake w;
	aw_wake_init(&w);
	int freed = 0, asked = 0;
	door_call *c = door_new(64, &w, &freed);
	parks = 0;
	assert_int_equal(aw_call_head(&c->base, head_of, &asked, park, NULL), 0);
	assert_int_equal(parks, 1);
	assert_int_equal(aw_call_head(&c->base, head_of, &asked, NULL, NULL), 0);
	pthread_mutex_lock(&c->base.mu);
	c->decided = 2;
	aw_call_wake(&c->base);
	pthread_mutex_unlock(&c->base.mu);
	assert_true(aw_wake_wait(&w, 0));
	assert_int_equal(aw_call_head(&c->base, head_of, &asked, park, NULL), 2);
	assert_int_equal(parks, 1);
	assert_int_equal(asked, 3);
	/* parked on the stream, then gone: the writer wakes nobody */
	char buf[8];
	assert_int_equal(aw_call_read(&c->base, buf, sizeof buf, park, NULL), 0);
	aw_call_hold(&c->base); /* the door's */
	assert_int_equal(aw_call_gone(&c->base), 0);
	assert_int_equal(c->base.gone, 1);
	pthread_mutex_lock(&c->base.mu);
	aw_call_add(&c->base, "", "late", 4, "");
	c->base.eof = 1;
	pthread_mutex_unlock(&c->base.mu);
	assert_false(aw_wake_wait(&w, 0));
	assert_int_equal(aw_call_gone(&c->base), 1); /* whole by now */
	aw_call_put(&c->base);			     /* the client's */
	assert_int_equal(freed, 0);
	aw_call_put(&c->base); /* the door's: the last */
	assert_int_equal(freed, 1);
	aw_wake_destroy(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_park_wake_read),
		cmocka_unit_test(test_whole_or_nothing),
		cmocka_unit_test(test_head_gone),
	};
	return cmocka_run_group_tests_name("call_object", tests, NULL, NULL);
}
