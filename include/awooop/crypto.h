/*
 * crypto.h - the few primitives awooop needs, all through OpenSSL libcrypto:
 * SHA-256, HMAC-SHA256, a CSPRNG, constant-time compare and base64url.
 * Output buffers are caller-owned; nothing here allocates.
 */
#ifndef AWOOOP_CRYPTO_H
#define AWOOOP_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "awooop/err.h"

#define AW_SHA256_LEN 32
#define AW_SHA256_HEX_LEN 64 /* without the NUL */

void aw_sha256(const void *data, size_t len, uint8_t out[AW_SHA256_LEN]);
/* out must hold AW_SHA256_HEX_LEN + 1 bytes; lowercase hex. */
void aw_sha256_hex(const void *data, size_t len, char *out);
void aw_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		    uint8_t out[AW_SHA256_LEN]);
/* Fills buf with len bytes from OpenSSL's CSPRNG (up to 16 through a pool of
 * the thread's, see crypto.c); AW_E_INTERNAL if it cannot. */
aw_err aw_random_bytes(void *buf, size_t len);
/* 1 if equal; time depends only on len. */
int aw_ct_equal(const void *a, const void *b, size_t len);
/* The value of a hex digit (either case), -1 for any other character. */
static inline int aw_hex_digit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}
/* Lowercase hex of len bytes into out (2*len + 1 bytes). */
void aw_hex(const uint8_t *in, size_t len, char *out);
/* Unpadded base64url; out must hold aw_base64url_len(len) + 1 bytes. */
size_t aw_base64url_len(size_t len);
void aw_base64url(const uint8_t *in, size_t len, char *out);
/* Strict unpadded base64url: -1 for padding, any other character, a length
 * of 1 mod 4, non-zero trailing bits or more than cap bytes of output. */
int aw_base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *outlen);

#endif
