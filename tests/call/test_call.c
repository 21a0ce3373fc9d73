/*
 * test_call.c - unit tests of the call object (call.h): a reader parked on
 * an empty call is woken by a writer on another thread and reads whole
 * events in order, then the end; the ceiling drops an event whole; the head
 * parks until the door decides; a client gone is woken no more; the door's
 * destructor runs once, at the last put. The in-flight registry: calls
 * listed per project and counted per door, a door's bound, a suspension
 * cutting each call of the project that entered before it once through its
 * own door's cancel, aw_calls_each, leaving in any order, a door let go.
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
#include "support.h"

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

/* ------------------------------------------------------------ the registry */

static int cancels[2];
static void cancel_a(aw_call *c)
{
	assert_int_equal(atomic_load(&c->cut), 1); /* set before the door is told */
	cancels[0]++;
}
static void cancel_b(aw_call *c)
{
	(void)c;
	cancels[1]++;
}
static const aw_door door_a = {.name = "a", .cancel = cancel_a};
static const aw_door door_b = {.name = "b", .cancel = cancel_b};

static void visit(aw_call *c, void *ud)
{
	aw_call **seen = ud;
	while (*seen)
		seen++;
	*seen = c;
}

static void test_registry(void **state)
{
	(void)state;
	aw_test_db db;
	aw_test_db_create("sqlite", &db);
	aw_store *s = aw_test_store_open(&db);
	aw_calls *r = NULL;
	aw_error err = {0};
	assert_int_equal(aw_calls_new(&(aw_calls_opts){.store = s}, &r, &err), AW_OK);
	int sa = aw_calls_door(r, &door_a), sb = aw_calls_door(r, &door_b);
	assert_true(sa >= 0 && sb >= 0 && sa != sb);
	aw_call c[6] = {0};
	long held = -1;
	assert_int_equal(aw_calls_enter(r, sa, &c[0], "p1", 1, &held), 0);
	assert_int_equal(held, 1);
	assert_int_equal(aw_calls_enter(r, sb, &c[1], "p1", 0, NULL), 0);
	assert_int_equal(aw_calls_enter(r, sa, &c[2], "p2", 0, NULL), 0);
	assert_int_equal(aw_calls_enter(r, sa, &c[3], "p1", 1, &held), 1); /* past a's bound */
	assert_int_equal(held, 1);
	assert_null(c[3].door);
	char longid[AW_PROJECT_MAX + 8];
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = 0;
	assert_int_equal(aw_calls_enter(r, sa, &c[3], longid, 0, NULL), -1);
	assert_int_equal(aw_calls_busy(r, sa), 2);
	assert_int_equal(aw_calls_busy(r, -1), 3);
	aw_call *seen[4] = {0};
	aw_calls_each(r, sa, "p1", visit, seen);
	assert_ptr_equal(seen[0], &c[0]);
	assert_null(seen[1]);
	/* a suspension of p1: both doors' calls of p1, each once, none of p2 */
	aw_calls_kill(r, "p1");
	assert_int_equal(cancels[0], 1);
	assert_int_equal(cancels[1], 1);
	assert_true(c[0].cut && c[1].cut && !c[2].cut);
	aw_calls_kill(r, "p1");
	assert_int_equal(cancels[0] + cancels[1], 2);
	/* a call entered after it is not cut by it; the next suspension cuts it */
	assert_int_equal(aw_calls_enter(r, sb, &c[4], "p1", 0, NULL), 0);
	assert_int_equal(c[4].cut, 0);
	aw_calls_kill(r, "p1");
	assert_int_equal(c[4].cut, 1);
	assert_int_equal(cancels[1], 2);
	/* leaving from the middle of a list, then the rest */
	assert_int_equal(aw_calls_enter(r, sb, &c[5], "p1", 0, NULL), 0);
	aw_calls_leave(r, &c[4], &held);
	assert_int_equal(held, 2); /* c[1], c[5] */
	memset(seen, 0, sizeof seen);
	aw_calls_each(r, sb, "p1", visit, seen);
	assert_ptr_equal(seen[0], &c[5]);
	assert_ptr_equal(seen[1], &c[1]);
	assert_null(seen[2]);
	for (int i = 0; i < 6; i++)
		aw_calls_leave(r, &c[i], NULL); /* c[3], c[4]: not entered (any more) */
	assert_int_equal(aw_calls_busy(r, -1), 0);
	memset(seen, 0, sizeof seen);
	aw_calls_each(r, sb, "p1", visit, seen);
	assert_null(seen[0]);
	/* a door let go: no call enters it */
	aw_calls_door_off(r, sb);
	assert_int_equal(aw_calls_enter(r, sb, &c[1], "p1", 0, NULL), 2);
	aw_calls_door_off(r, sa);
	aw_calls_free(r);
	aw_store_close(s);
	aw_test_db_drop(&db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_park_wake_read),
		cmocka_unit_test(test_whole_or_nothing),
		cmocka_unit_test(test_head_gone),
		cmocka_unit_test(test_registry),
	};
	return cmocka_run_group_tests_name("call_object", tests, NULL, NULL);
}
