/*
 * uuid7.c - UUIDv7 generation (see uuid.h for the layout and the monotonic
 * counter). A process-wide mutex guards (last_ms, counter); the counter is seeded
 * at random each new millisecond with its top bit clear, leaving at least 2048
 * increments before it borrows the next millisecond.
 */
#include "awooop/uuid.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/crypto.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_ms;
static uint16_t counter;

void aw_uuid7(aw_uuid *out)
{
	uint8_t rnd[10];
	aw_random_bytes(rnd, sizeof rnd);

	uint64_t now = (uint64_t)aw_clock_wall_ms();
	pthread_mutex_lock(&lock);
	if (now > last_ms) {
		last_ms = now;
		counter = (uint16_t)((rnd[0] << 8 | rnd[1]) & 0x07ff);
	} else if (++counter > 0x0fff) {
		/* counter exhausted (or clock went back): borrow the next ms */
		last_ms++;
		counter = (uint16_t)((rnd[0] << 8 | rnd[1]) & 0x07ff);
	}
	uint64_t ms = last_ms;
	uint16_t c = counter;
	pthread_mutex_unlock(&lock);

	for (int i = 0; i < 6; i++)
		out->b[i] = (uint8_t)(ms >> (40 - 8 * i));
	out->b[6] = (uint8_t)(0x70 | (c >> 8));
	out->b[7] = (uint8_t)c;
	memcpy(out->b + 8, rnd + 2, 8);
	out->b[8] = (uint8_t)(0x80 | (out->b[8] & 0x3f));
}

void aw_uuid_format(const aw_uuid *u, char *out)
{
	char hex[33];
	aw_hex(u->b, 16, hex);
	snprintf(out, AW_UUID_STR_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
		 hex + 16, hex + 20);
}

void aw_uuid7_str(char *out)
{
	aw_uuid u;
	aw_uuid7(&u);
	aw_uuid_format(&u, out);
}

int aw_uuid_parse(const char *s, aw_uuid *out)
{
	if (!s || strlen(s) != AW_UUID_STR_LEN)
		return -1;
	int n = 0;
	for (int i = 0; i < AW_UUID_STR_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -1;
			continue;
		}
		int hi = aw_hex_digit(s[i]), lo = aw_hex_digit(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		if (out)
			out->b[n] = (uint8_t)(hi << 4 | lo);
		n++;
		i++;
	}
	return 0;
}

int aw_uuid_valid(const char *s)
{
	if (aw_uuid_parse(s, NULL) != 0)
		return 0;
	for (; *s; s++) /* the one spelling awooop writes, on every backend */
		if (*s >= 'A' && *s <= 'F')
			return 0;
	return 1;
}

uint64_t aw_uuid7_ms(const aw_uuid *u)
{
	uint64_t ms = 0;
	for (int i = 0; i < 6; i++)
		ms = ms << 8 | u->b[i];
	return ms;
}
