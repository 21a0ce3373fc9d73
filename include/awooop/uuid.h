/*
 * uuid.h - UUIDv7 (RFC 9562 §5.7): 48-bit Unix ms timestamp, version 7,
 * variant 0b10, and a 12-bit counter in rand_a (§6.2 method 1) so ids made by one
 * process are strictly increasing even within one millisecond or when the wall
 * clock steps back.
 */
#ifndef AWOOOP_UUID_H
#define AWOOOP_UUID_H

#include <stdint.h>

#define AW_UUID_STR_LEN 36

typedef struct {
	uint8_t b[16];
} aw_uuid;

void aw_uuid7(aw_uuid *out);
/* out must hold AW_UUID_STR_LEN + 1 bytes; lowercase canonical form. */
void aw_uuid_format(const aw_uuid *u, char *out);
void aw_uuid7_str(char *out);
/* 0 if s is a canonical (8-4-4-4-12 hex, any case) UUID string. */
int aw_uuid_parse(const char *s, aw_uuid *out);
/* 1 if s is a UUID in the one spelling awooop writes and accepts for ids:
 * 8-4-4-4-12 lowercase hex (an uppercase id is not found, on every backend). */
int aw_uuid_valid(const char *s);
uint64_t aw_uuid7_ms(const aw_uuid *u);

#endif
