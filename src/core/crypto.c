/*
 * crypto.c - thin wrappers over OpenSSL libcrypto so no other file includes it.
 */
#include "awooop/crypto.h"

#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

void aw_sha256(const void *data, size_t len, uint8_t out[AW_SHA256_LEN])
{
	unsigned int n = AW_SHA256_LEN;
	EVP_Digest(data, len, out, &n, EVP_sha256(), NULL);
}

void aw_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

void aw_sha256_hex(const void *data, size_t len, char *out)
{
	uint8_t d[AW_SHA256_LEN];
	aw_sha256(data, len, d);
	aw_hex(d, sizeof d, out);
}

void aw_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		    uint8_t out[AW_SHA256_LEN])
{
	unsigned int n = AW_SHA256_LEN;
	HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &n);
}

/* Ids (a UUID's 10 random bytes, a span id's 8: several a run) are taken
 * from a pool of the thread's, filled from the DRBG 256 bytes at a time - a
 * RAND_bytes call each was a fifteenth of a worker's CPU. Bytes are wiped
 * as they are taken; a forked child drops the pool it inherited (it would
 * hand out its parent's next ids). More than 16 bytes (keys, secrets) come
 * from the DRBG directly. */
#define POOL 256
static __thread uint8_t pool[POOL];
static __thread size_t pool_left;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_drop(void)
{
	OPENSSL_cleanse(pool, sizeof pool);
	pool_left = 0;
}

static void pool_init(void)
{
	pthread_atfork(NULL, NULL, pool_drop);
}

aw_err aw_random_bytes(void *buf, size_t len)
{
	if (len > 16)
		return RAND_bytes(buf, (int)len) == 1 ? AW_OK : AW_E_INTERNAL;
	pthread_once(&pool_once, pool_init);
	if (pool_left < len) {
		if (RAND_bytes(pool, POOL) != 1)
			return AW_E_INTERNAL;
		pool_left = POOL;
	}
	uint8_t *p = pool + (POOL - pool_left);
	memcpy(buf, p, len);
	OPENSSL_cleanse(p, len);
	pool_left -= len;
	return AW_OK;
}

int aw_ct_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

size_t aw_base64url_len(size_t len)
{
	return (len * 4 + 2) / 3;
}

void aw_base64url(const uint8_t *in, size_t len, char *out)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t o = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
		out[o++] = tbl[v >> 6 & 63];
		out[o++] = tbl[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
		out[o++] = tbl[v >> 6 & 63];
	}
	out[o] = '\0';
}

static int b64url_value(char c)
{
	return c >= 'A' && c <= 'Z'   ? c - 'A'
	       : c >= 'a' && c <= 'z' ? c - 'a' + 26
	       : c >= '0' && c <= '9' ? c - '0' + 52
	       : c == '-'	      ? 62
	       : c == '_'	      ? 63
				      : -1;
}

int aw_base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *outlen)
{
	if (len % 4 == 1 || len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0) > cap)
		return -1;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64url_value(in[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) /* a second spelling of the same bytes */
		return -1;
	*outlen = o;
	return 0;
}
