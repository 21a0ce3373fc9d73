/*
 * redact.c - the redaction engine (see redact.h and docs/internals/redact.md).
 *
 * Pipeline per buffer:
 *   1. Hyperscan scans once for the prefilter pattern of every class;
 *   2. each report (class, end offset) not already covered is confirmed by the
 *      class's exact PCRE2-JIT pattern searched in a window around it, then by
 *      the class validator (Luhn, inet_pton, digit counts);
 *   3. findings are sorted and the non-overlapping ones replaced, keeping the
 *      text around a named secret part (group 1) intact.
 * Clean text costs one Hyperscan pass; PCRE2 runs only near candidates.
 * A project's custom patterns (redact_custom.c) run after step 2, on the
 * text of calls made for that project only.
 */
#include "awooop/alloc.h"
#include "awooop/redact.h"
#include "redact_hook.h"

#include <arpa/inet.h>
#include <hs/hs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "awooop/ctx.h"
#include "awooop/str.h"
#include "redact_custom.h"

/* Streaming: bytes held back at the end of each flush so a secret split across
 * chunks is seen whole (the longest match of any class but private-key blocks,
 * which are held until their END line, up to AW_REDACT_MAX_HOLD), and the
 * buffered size that triggers a flush (cache-sized). */
#define HOLD 10240
#define FLUSH_AT (256u << 10)

typedef struct finding {
	size_t start, end;   /* whole match */
	size_t rstart, rend; /* the part replaced */
	aw_redact_class cls;
	int ci; /* AW_RC_CUSTOM: the pattern's index in the call's set */
} finding;

typedef int (*validator)(const char *s, size_t len);

static int card_ok(const char *s, size_t n);
static int luhn_ok(const char *s, size_t n);
static int digits_phone_ok(const char *s, size_t n);
static int ipv6_ok(const char *s, size_t n);
static int ssn_ok(const char *s, size_t n);
static int iban_ok(const char *s, size_t n);
static int tok_ok(const char *s, size_t n);
static int crc_token_ok(const char *s, size_t n);
static int discord_ok(const char *s, size_t n);

/* Boundaries of a token made of the URL-safe base64 alphabet */
#define TB "(?<![A-Za-z0-9_-])"
#define TE "(?![A-Za-z0-9_-])"

static const struct cls_def {
	const char *hs;	  /* prefilter: cheap, may be broader than pcre */
	const char *pcre; /* exact; group 1 (if any) is the part replaced */
	size_t back;	  /* max distance from match start to a prefilter end */
	size_t fwd;	  /* max distance a match extends past a prefilter end */
	validator ok;	  /* on the replaced part */
} defs[AW_RC__COUNT] = {
	[AW_RC_EMAIL] =
		/* '@' and the first letter after it: a prefilter ending in "\.[A-Za-z]"
		   let Hyperscan anchor on every ".x" of the text and look back for an
		   '@' (20-30% of every clean corpus, with no '@' in it) */
	{"@[A-Za-z0-9.-]{0,62}[A-Za-z]",
	 "(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\\.[A-Za-z]{2,24}(?![A-Za-z0-9-])",
	 140, 300, NULL},
	/* phone, card, ipv4 and ipv6 have no Hyperscan prefilter: they are found
	   by the shape scanner below (Hyperscan is slow on the character-class
	   runs and one-byte literals they are made of, in digit-rich log text) */
	[AW_RC_PHONE] =
		{NULL,
		 "(?<![\\w+.-])(?:\\+[1-9][0-9 ().-]{6,20}[0-9]|\\(\\d{3}\\)[ .-]?\\d{3}[ .-]\\d{4}|\\d{3}[.-]\\d{3}[.-]\\d{4}|0\\d{1,4}[ -]\\d{3,4}[ -]\\d{3,4})(?![\\w.-]?\\d)",
		 32, 32, digits_phone_ok},
	/* a card is a whole token: not part of a word, a hex id, a UUID or a
	   decimal ("01a23090-7224-7278-8c84-...", "1027 1395066363000" are not) */
	[AW_RC_CARD] = {NULL, "(?<![\\w.+-])[2-6](?:[ -]?\\d){12,18}(?![\\w-]|\\.\\d)", 40, 40,
			card_ok},
	[AW_RC_IPV4] =
		{NULL,
		 "(?<![\\d.])(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(?:\\.(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}(?!\\.?\\d)",
		 16, 16, NULL},
	[AW_RC_IPV6] = {NULL, "(?<![\\w:.])[0-9A-Fa-f:.]{1,44}[0-9A-Fa-f:](?![\\w:])", 48, 48,
			ipv6_ok},
	/* US SSN, dashed: found by the shape scanner; ssn_ok drops the numbers
	   the SSA never issues */
	[AW_RC_SSN] = {NULL, "(?<![\\w.+/-])\\d{3}-\\d{2}-\\d{4}(?![\\w-]|\\.\\d)", 16, 16, ssn_ok},
	/* IBAN, compact or in groups of 4: the shape scanner finds "CCdd" at a
	   token start; iban_ok checks the country's length and mod 97 */
	[AW_RC_IBAN] =
		{NULL,
		 "(?<![A-Za-z0-9])[A-Z]{2}\\d{2}(?:(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,3})?|[A-Z0-9]{11,30})(?![A-Za-z0-9])",
		 8, 56, iban_ok},
	[AW_RC_AWS_KEY_ID] =
		{"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}",
		 "(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])", 20, 4,
		 NULL},
	[AW_RC_AWS_SECRET] =
		{"(?i)aws[A-Za-z0-9_ .-]{0,20}(?:secret|sk|key)[A-Za-z0-9_ .-]{0,20}[\"']?\\s*[:=]\\s*[\"']?[A-Za-z0-9/+=]{40}",
		 "(?i:aws)[A-Za-z0-9_ .-]{0,20}(?i:secret|sk|key)[A-Za-z0-9_ .-]{0,20}[\"']?\\s*[:=]\\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
		 140, 4, NULL},
	[AW_RC_GITHUB] =
		{"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22}",
		 "(?<![A-Za-z0-9_])(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,244})(?![A-Za-z0-9_])",
		 40, 260, crc_token_ok},
	[AW_RC_SLACK] =
		{"xox[abeoprs]-[A-Za-z0-9-]{10}|xapp-\\d-[A-Za-z0-9-]{10}",
		 "(?<![A-Za-z0-9-])(?:(?:xoxe\\.)?xox[abeoprs]-[A-Za-z0-9-]{10,250}|xapp-\\d-[A-Za-z0-9-]{10,250})",
		 20, 260, NULL},
	[AW_RC_SLACK_WEBHOOK] =
		{"hooks\\.slack\\.com/(?:services|workflows|triggers)/",
		 "https?://hooks\\.slack\\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,200}",
		 50, 210, NULL},
	[AW_RC_JWT] =
		{"eyJ[A-Za-z0-9_-]{4,}\\.eyJ",
		 "(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,1024}\\.eyJ[A-Za-z0-9_-]{2,8192}\\.[A-Za-z0-9_-]{0,1024}(?![A-Za-z0-9_-])",
		 1040, 9300, NULL},
	[AW_RC_PEM] =
		{"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----",
		 "-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|\\z)",
		 64, AW_REDACT_MAX_HOLD, NULL},
	[AW_RC_AUTH_HEADER] =
		{"(?i)authorization[\"']?\\s*[:=]|bearer\\s+[A-Za-z0-9._~+/-]{8}",
		 "(?i)(?:\\bauthorization\\b[\"']?\\s*[:=]\\s*[\"']?(?:(?:bearer|basic|token|digest|apikey)\\s+)?|\\bbearer\\s+)(?!\\[REDACTED:)([A-Za-z0-9._~+/=-]{8,4096})",
		 80, 4200, NULL},
	[AW_RC_URL_CREDS] =
		{"://[^\\s:/?#@\"'<>]+:[^\\s/?#@\"'<>]+@",
		 "\\b[A-Za-z][A-Za-z0-9+.-]{1,20}://([^\\s:/?#@\"'<>]{1,256}:[^\\s/?#@\"'<>]{1,256})@",
		 540, 4, NULL},
	[AW_RC_ASSIGNMENT] =
		{"(?i)(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)[\"']?\\s*(?:=|:|=>)",
		 "(?i)\\b(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)[\"']?\\s*(?:=>|=|:)\\s*[\"']?(?!\\[REDACTED:)([^\\s\"',;&<>]{3,512})",
		 80, 530, NULL},
	[AW_RC_AWOOOP_KEY] = {"awk_[A-Za-z0-9_-]{43}",
			      "(?<![A-Za-z0-9_-])awk_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", 48, 4,
			      NULL},
	/* ---- provider credentials: a documented prefix and alphabet, most of a
	   fixed length; tok_ok drops placeholders (xxxx, 0123456789, few distinct
	   characters), crc_token_ok checks GitHub's and npm's CRC32 ---- */
	[AW_RC_AWS_SESSION] =
		{"IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE",
		 "(?<![A-Za-z0-9/+])(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9/+]{80,4000}={0,2}",
		 24, 4100, NULL},
	[AW_RC_BEDROCK] =
		{"ABSKQmVkcm9ja0FQSUtleS|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t",
		 "(?<![A-Za-z0-9/+-])(?:ABSKQmVkcm9ja0FQSUtleS|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t)[A-Za-z0-9/+]{20,4000}={0,2}",
		 64, 4100, NULL},
	[AW_RC_OPENAI] =
		{"T3BlbkFJ|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20}",
		 TB
		 "sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})" TE,
		 270, 260, tok_ok},
	[AW_RC_ANTHROPIC] = {"sk-ant-(?:api|admin|oat|ort)[0-9][0-9]-",
			     TB "sk-ant-(?:api|admin|oat|ort)\\d\\d-[A-Za-z0-9_-]{32,200}" TE, 20,
			     210, tok_ok},
	[AW_RC_GOOGLE_API] = {"AIza[0-9A-Za-z_-]{35}", TB "AIza[0-9A-Za-z_-]{35}" TE, 40, 4,
			      tok_ok},
	[AW_RC_GOOGLE_OAUTH] = {"GOCSPX-|ya29\\.[A-Za-z0-9_-]{20}",
				TB "(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\\.[A-Za-z0-9_-]{20,2048})" TE,
				30, 2060, tok_ok},
	[AW_RC_HUGGINGFACE] = {"hf_[A-Za-z]{34}|api_org_[A-Za-z]{34}",
			       TB "(?:hf|api_org)_[A-Za-z]{34}" TE, 44, 4, tok_ok},
	[AW_RC_GROQ] = {"gsk_[A-Za-z0-9]{52}", TB "gsk_[A-Za-z0-9]{52}" TE, 60, 4, tok_ok},
	[AW_RC_PERPLEXITY] = {"pplx-[A-Za-z0-9]{48}", TB "pplx-[A-Za-z0-9]{48}" TE, 56, 4, tok_ok},
	[AW_RC_REPLICATE] = {"r8_[A-Za-z0-9]{37}", TB "r8_[A-Za-z0-9]{37}" TE, 44, 4, tok_ok},
	[AW_RC_XAI] = {"xai-[A-Za-z0-9]{80}", TB "xai-[A-Za-z0-9]{80}" TE, 88, 4, tok_ok},
	[AW_RC_OPENROUTER] = {"sk-or-v1-[0-9a-f]{64}", TB "sk-or-v1-[0-9a-f]{64}" TE, 76, 4,
			      tok_ok},
	[AW_RC_LANGSMITH] = {"lsv2_(?:pt|sk)_[0-9a-f]{32}_",
			     TB "lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}" TE, 44, 14, tok_ok},
	/* Entra ID (Azure AD) client secrets: 3 characters, a digit, "Q~", 31-34 */
	/* (the prefilter is the bare literal: with the class run after it, it
	   cost the PostgreSQL corpus a third of its Hyperscan speed) */
	[AW_RC_AZURE_SECRET] =
		{"Q~",
		 "(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
		 8, 40, tok_ok},
	[AW_RC_AZURE_STORAGE] = {"AccountKey=", "AccountKey=([A-Za-z0-9+/]{86}==)", 16, 92, NULL},
	[AW_RC_GITLAB] =
		{"gl(?:pat|dt|rt|rtr|ptt|ft|imt|agent|oas|cbt|soat|ffct)-[A-Za-z0-9_-]{20}|GR1348941[A-Za-z0-9_-]{20}",
		 TB
		 "(?:gl(?:pat|dt|rt|rtr|ptt|ft|imt|agent|oas|cbt|soat|ffct)-[A-Za-z0-9_-]{20,300}(?:\\.[A-Za-z0-9_-]{1,64}){0,3}|GR1348941[A-Za-z0-9_-]{20})" TE,
		 36, 500, tok_ok},
	[AW_RC_BITBUCKET] = {"ATBB[A-Za-z0-9]{28}|ATCTT3xFfGN0",
			     TB "(?:ATBB[A-Za-z0-9]{28,40}|ATCTT3xFfGN0[A-Za-z0-9_=-]{30,250})" TE,
			     40, 260, tok_ok},
	[AW_RC_ATLASSIAN] = {"ATATT3xFfGF0", TB "ATATT3xFfGF0[A-Za-z0-9_=-]{30,300}" TE, 16, 310,
			     tok_ok},
	/* a bot token is base64(snowflake id).timestamp.hmac: no literal, so
	   the shape scanner finds its ".xxxxxx." (a Hyperscan prefilter made of
	   character classes halved the speed of every corpus) */
	[AW_RC_DISCORD] = {NULL,
			   TB
			   "[MNO][A-Za-z0-9]{21,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,38}" TE,
			   32, 48, discord_ok},
	[AW_RC_DISCORD_WEBHOOK] =
		{"discord(?:app)?\\.com/api/webhooks/",
		 "https?://(?:(?:ptb|canary)\\.)?discord(?:app)?\\.com/api/webhooks/\\d{17,20}/[A-Za-z0-9_-]{60,68}",
		 60, 100, NULL},
	[AW_RC_TELEGRAM] = {":AA[A-Za-z0-9_-]{33}",
			    "(?:(?<=bot)|(?<![A-Za-z0-9_]))\\d{8,10}:AA[A-Za-z0-9_-]{33}" TE, 50, 4,
			    tok_ok},
	[AW_RC_STRIPE] =
		{"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20}|whsec_[A-Za-z0-9]{32}",
		 TB
		 "(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,247}|whsec_[A-Za-z0-9+/=]{32,100})" TE,
		 40, 260, tok_ok},
	[AW_RC_SQUARE] =
		{"EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp)-",
		 TB
		 "(?:EAAA[A-Za-z0-9_-]{60}|sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43})" TE,
		 70, 50, tok_ok},
	[AW_RC_BRAINTREE] =
		{"access_token\\$(?:production|sandbox)\\$",
		 "access_token\\$(?:production|sandbox)\\$[0-9a-z]{16}\\$[0-9a-f]{32}" TE, 32, 52,
		 NULL},
	[AW_RC_NPM] = {"npm_[A-Za-z0-9]{36}", TB "npm_[A-Za-z0-9]{36}" TE, 44, 4, crc_token_ok},
	[AW_RC_PYPI] = {"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)",
			TB "pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,2000}" TE,
			40, 2010, NULL},
	[AW_RC_TWILIO] = {"SK[0-9a-f]{32}", TB "SK[0-9a-f]{32}" TE, 40, 4, tok_ok},
	[AW_RC_SENDGRID] = {"SG\\.[A-Za-z0-9_-]{22}\\.",
			    TB "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}" TE, 30, 48, tok_ok},
	[AW_RC_MAILGUN] = {"key-[0-9a-z]{32}", TB "key-[0-9a-z]{32}" TE, 40, 4, tok_ok},
	[AW_RC_DATADOG] =
		{"(?i)(?:dd|datadog)[_-]?(?:api|app|application)[_-]?key",
		 "(?i)\\b(?:dd|datadog)[_-]?(?:api|app|application)[_-]?key[\"']?\\s*[:=]\\s*[\"']?([0-9a-f]{40}|[0-9a-f]{32})(?![0-9a-z])",
		 32, 70, NULL},
	[AW_RC_NEWRELIC] =
		{"NR(?:AK|AA|II|IQ|JS|RA|SP)-|NRAL",
		 "(?<![A-Za-z0-9_-])(?:NR(?:AK|AA|II|IQ|JS|RA|SP)-[A-Za-z0-9]{19,32}|[0-9a-fA-F]{36}NRAL)" TE,
		 44, 40, tok_ok},
	[AW_RC_SENTRY_DSN] =
		{"://[0-9a-f]{32}(?::[0-9a-f]{32})?@",
		 "\\bhttps?://[0-9a-f]{32}(?::[0-9a-f]{32})?@[A-Za-z0-9.-]{1,200}(?::\\d{1,5})?/(?:[A-Za-z0-9_.-]{1,64}/){0,4}\\d{1,20}(?![\\w.-])",
		 80, 320, NULL},
	[AW_RC_SENTRY_TOKEN] =
		{"sntrys_eyJ|sntryu_[0-9a-f]{64}",
		 TB
		 "(?:sntrys_eyJ[A-Za-z0-9+/=_]{40,2000}|sntryu_[0-9a-f]{64})(?![A-Za-z0-9+/=_-])",
		 72, 2010, tok_ok},
	[AW_RC_SHOPIFY] = {"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
			   TB "shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" TE, 40, 4, tok_ok},
	[AW_RC_DOPPLER] = {"dp\\.(?:pt|st|sa|ct|scim|audit)\\.[A-Za-z0-9]{40}",
			   TB "dp\\.(?:pt|st|sa|ct|scim|audit)\\.[A-Za-z0-9]{40,44}" TE, 56, 8,
			   tok_ok},
	[AW_RC_VAULT] = {"hv[sbr]\\.[A-Za-z0-9_-]{24}",
			 "(?<![A-Za-z0-9_.-])hv[sbr]\\.[A-Za-z0-9_-]{24,300}" TE, 30, 300, tok_ok},
	[AW_RC_ONEPASSWORD] = {"ops_eyJ",
			       TB "ops_eyJ[A-Za-z0-9+/=_-]{100,4000}(?![A-Za-z0-9+/=_-])", 8, 4010,
			       tok_ok},
	[AW_RC_AGE] = {"AGE-SECRET-KEY-1",
		       TB "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" TE, 16, 62,
		       tok_ok},
	[AW_RC_DIGITALOCEAN] = {"do[por]_v1_[a-f0-9]{64}", TB "do[por]_v1_[a-f0-9]{64}" TE, 76, 4,
				tok_ok},
	[AW_RC_LINEAR] = {"lin_api_[A-Za-z0-9]{40}", TB "lin_api_[A-Za-z0-9]{40}" TE, 52, 4,
			  tok_ok},
	[AW_RC_POSTMAN] = {"PMAK-[a-f0-9]{24}-", TB "PMAK-[a-f0-9]{24}-[a-f0-9]{34}" TE, 32, 38,
			   tok_ok},
	[AW_RC_GRAFANA] =
		{"glsa_[A-Za-z0-9]{32}_|glc_eyJ",
		 TB
		 "(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_eyJ[A-Za-z0-9+/]{32,400}={0,2})(?![A-Za-z0-9+/=_-])",
		 40, 410, tok_ok},
	[AW_RC_DATABRICKS] = {"dapi[a-f0-9]{32}", TB "dapi[a-f0-9]{32}(?:-\\d)?" TE, 40, 6, tok_ok},
	[AW_RC_SUPABASE] = {"sbp_[a-f0-9]{40}", TB "sbp_[a-f0-9]{40}" TE, 48, 4, tok_ok},
	[AW_RC_PULUMI] = {"pul-[a-f0-9]{40}", TB "pul-[a-f0-9]{40}" TE, 48, 4, tok_ok},
	[AW_RC_SENSITIVE_FIELD] = {NULL, NULL, 0, 0, NULL},
	/* a project's own patterns: redact_custom.c, not this table */
	[AW_RC_CUSTOM] = {NULL, NULL, 0, 0, NULL},
};

static const char *const labels[AW_RC__COUNT] = {
#define AW_X_LBL(e, label) [e] = label,
	AW_REDACT_CLASSES(AW_X_LBL)
#undef AW_X_LBL
};

const char *aw_redact_class_label(aw_redact_class c)
{
	return (unsigned)c < AW_RC__COUNT ? labels[c] : "unknown";
}

const char *redact_pcre_pattern(aw_redact_class c)
{
	return (unsigned)c < AW_RC__COUNT ? defs[c].pcre : NULL;
}

int redact_validate(aw_redact_class c, const char *s, size_t len)
{
	return (unsigned)c < AW_RC__COUNT && (!defs[c].ok || defs[c].ok(s, len));
}

/* ------------------------------------------------------------- validators */

/* Issuer prefixes and lengths (ISO/IEC 7812 as the networks publish them):
 * a digit string that no network issues is not a card. */
static int issued(const char *d, int len)
{
	int p2 = (d[0] - '0') * 10 + d[1] - '0', p3 = p2 * 10 + d[2] - '0';
	int p4 = p3 * 10 + d[3] - '0';
	if (d[0] == '4') /* Visa */
		return len == 13 || len == 16 || len == 19;
	if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) /* Mastercard */
		return len == 16;
	if (p2 == 34 || p2 == 37) /* American Express */
		return len == 15;
	if (p2 == 36 || (p3 >= 300 && p3 <= 305) || p2 == 38 || p2 == 39) /* Diners */
		return len >= 14 && len <= 16;
	if (p4 >= 3528 && p4 <= 3589) /* JCB */
		return len >= 16 && len <= 19;
	if (p4 == 6011 || (p3 >= 644 && p3 <= 649) || p2 == 65 || p2 == 62) /* Discover, UnionPay */
		return len >= 16 && len <= 19;
	if (p2 == 50 || (p2 >= 56 && p2 <= 58) || p2 == 63 || p2 == 67) /* Maestro */
		return len >= 13 && len <= 19;
	return 0;
}

/* How people write card numbers: all digits together, or groups of 4
 * (4-4-4-4, with 1-3 more at the end for 13 and 17-19 digits) or 4-6-5 /
 * 4-6-4 (Amex, Diners), separated by single spaces or single hyphens, one kind
 * per number. A Prometheus "VALUE TIMESTAMP" pair is neither. */
static int card_ok(const char *s, size_t n)
{
	char d[20];
	int nd = 0, groups[20], ng = 0, run = 0;
	char sep = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			if (nd == 19)
				return 0;
			d[nd++] = s[i];
			run++;
			continue;
		}
		if (sep && s[i] != sep)
			return 0;
		sep = s[i];
		groups[ng++] = run;
		run = 0;
	}
	groups[ng++] = run;
	if (nd < 13 || !issued(d, nd))
		return 0;
	if (ng > 1) {
		int fours = 0;
		while (fours < ng && groups[fours] == 4)
			fours++;
		int ok = (fours == ng) || (fours == ng - 1 && ng >= 4 && groups[ng - 1] < 4) ||
			 (ng == 3 && groups[0] == 4 && groups[1] == 6 &&
			  (groups[2] == 5 || groups[2] == 4));
		if (!ok)
			return 0;
	}
	return luhn_ok(d, (size_t)nd);
}

static int luhn_ok(const char *s, size_t n)
{
	int sum = 0, nd = 0, dbl = 0;
	for (size_t i = n; i-- > 0;) {
		if (s[i] < '0' || s[i] > '9')
			continue;
		int d = s[i] - '0';
		if (dbl && (d *= 2) > 9)
			d -= 9;
		sum += d;
		dbl = !dbl;
		nd++;
	}
	return nd >= 13 && nd <= 19 && sum % 10 == 0;
}

static int digits_phone_ok(const char *s, size_t n)
{
	int nd = 0;
	for (size_t i = 0; i < n; i++)
		nd += s[i] >= '0' && s[i] <= '9';
	return nd >= 7 && nd <= 15;
}

static int ipv6_ok(const char *s, size_t n)
{
	char buf[64];
	struct in6_addr a;
	int colons = 0;
	if (n >= sizeof buf)
		return 0;
	for (size_t i = 0; i < n; i++)
		colons += s[i] == ':';
	if (colons < 2)
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET6, buf, &a) == 1;
}

/* US Social Security numbers the SSA never issues: area 000, 666 or 900-999,
 * group 00, serial 0000, and the two famous voided ones (078-05-1120 from a
 * wallet insert, 123-45-6789 from advertising). */
static int ssn_ok(const char *s, size_t n)
{
	if (n != 11)
		return 0;
	int area = (s[0] - '0') * 100 + (s[1] - '0') * 10 + s[2] - '0';
	int group = (s[4] - '0') * 10 + s[5] - '0';
	int serial = (s[7] - '0') * 1000 + (s[8] - '0') * 100 + (s[9] - '0') * 10 + s[10] - '0';
	if (area == 0 || area == 666 || area >= 900 || group == 0 || serial == 0)
		return 0;
	return memcmp(s, "078-05-1120", 11) != 0 && memcmp(s, "123-45-6789", 11) != 0;
}

/* IBAN lengths per country (the SWIFT IBAN registry): a country that is not
 * listed, or a length that is not its own, is no IBAN. */
static int iban_len(const char *cc)
{
	static const char tbl[] = "AD24AE23AL28AT20AZ28BA20BE16BG22BH22BI27BR29BY28CH21CR22CY28CZ24"
				  "DE22DJ27DK18DO28EE20EG29ES24FI18FK18FO18FR27GB22GE22GI23GL18GR27"
				  "GT28HN28HR21HU28IE22IL23IQ23IS26IT27JO30KW30KZ20LB28LC32LI21LT20"
				  "LU20LV21LY25MC27MD24ME22MK19MN20MR27MT31MU30NI28NL18NO15OM23PK24"
				  "PL28PS29PT25QA29RO24RS22RU33SA24SC31SD18SE24SI19SK24SM27SO23ST25"
				  "SV28TL23TN24TR26UA29VA22VG24XK20YE30";
	for (const char *p = tbl; *p; p += 4)
		if (p[0] == cc[0] && p[1] == cc[1])
			return (p[2] - '0') * 10 + p[3] - '0';
	return 0;
}

/* ISO 13616: the country's length, then the number (letters as 10-35, the
 * first four characters moved to the end) mod 97 is 1. */
static int iban_ok(const char *s, size_t n)
{
	char c[40];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			continue;
		if (k == sizeof c)
			return 0;
		c[k++] = s[i];
	}
	if (k < 15 || (size_t)iban_len(c) != k)
		return 0;
	unsigned rem = 0;
	for (size_t i = 0; i < k; i++) {
		char ch = c[(i + 4) % k];
		if (ch >= '0' && ch <= '9')
			rem = (rem * 10 + (unsigned)(ch - '0')) % 97;
		else
			rem = (rem * 100 + (unsigned)(ch - 'A' + 10)) % 97;
	}
	return rem == 1;
}

/* A random token, not a placeholder: no character 8 times in a row
 * ("xxxxxxxx"), no 8 in alphabetical order ("abcdefgh", "12345678"), and at
 * least a quarter as many distinct characters as its length (at most 10
 * needed). A random 64-hex token fails this about once in 10^7 (a run of 8);
 * structured prefixes like Vault's "hvb.AAAAAQ" pass. */
static int tok_ok(const char *s, size_t n)
{
	unsigned char seen[256] = {0};
	int distinct = 0, same = 1, up = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		distinct += !seen[c];
		seen[c] = 1;
		if (i) {
			same = c == (unsigned char)s[i - 1] ? same + 1 : 1;
			up = c == (unsigned char)s[i - 1] + 1 ? up + 1 : 1;
			if (same >= 8 || up >= 8)
				return 0;
		}
	}
	size_t need = n / 4 < 10 ? n / 4 : 10;
	return (size_t)distinct >= need;
}

static uint32_t crc32_of(const char *s, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= (unsigned char)s[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

/* GitHub's (2021) and npm's token format: prefix_, 30 random base62
 * characters, then their CRC32 in base62 (0-9A-Za-z), 6 characters with
 * leading zeros. The 40-character forms must carry it; longer GitHub forms
 * (github_pat_, long server tokens) are only checked for randomness. */
void redact_base62_crc(const char *body, size_t n, char out[7])
{
	static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	uint32_t v = crc32_of(body, n);
	for (int i = 5; i >= 0; i--) {
		out[i] = b62[v % 62];
		v /= 62;
	}
	out[6] = '\0';
}

static int crc_token_ok(const char *s, size_t n)
{
	const char *us = memchr(s, '_', n < 12 ? n : 12);
	if (n == 40 && us == s + 3) { /* ghp_ gho_ ghu_ ghs_ ghr_ npm_ */
		char want[7];
		redact_base62_crc(s + 4, 30, want);
		return memcmp(s + 34, want, 6) == 0;
	}
	return tok_ok(s, n);
}

/* A Discord bot token's first part is the bot's snowflake id (17-20 digits)
 * in unpadded base64. */
static int discord_ok(const char *s, size_t n)
{
	const char *dot = memchr(s, '.', n);
	if (!dot)
		return 0;
	size_t k = (size_t)(dot - s);
	int val = 0, bits = 0, digits = 0;
	for (size_t i = 0; i < k; i++) {
		char c = s[i];
		int x = c >= 'A' && c <= 'Z'   ? c - 'A'
			: c >= 'a' && c <= 'z' ? c - 'a' + 26
			: c >= '0' && c <= '9' ? c - '0' + 52
					       : -1;
		if (x < 0)
			return 0;
		val = (val << 6 | x) & 0xfff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			int byte = (val >> bits) & 0xff;
			if (byte < '0' || byte > '9')
				return 0;
			digits++;
		}
	}
	return digits >= 17 && digits <= 20 && tok_ok(dot + 1, n - k - 1);
}

/* ----------------------------------------------------------------- engine */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static hs_database_t *hs_db;
static pcre2_code *pcre[AW_RC__COUNT];
/* Compiled and JIT-compiled on a class's first candidate, not at start: ~60
 * classes cost a short `awooop redact` 5 ms of JIT, and their compiles another
 * ~1.2 ms (a fifth of its start); most inputs wake few of them. Every pattern
 * is compiled once at build time (gen_hsdb), so a broken one fails the build. */
static _Atomic int jitted[AW_RC__COUNT];
static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;
static char init_error[256];
static pthread_key_t tls_key;

typedef struct {
	hs_scratch_t *scratch;
	pcre2_match_data *md;
	pcre2_match_context *mc; /* custom patterns' limits; made on first use */
} tls_state;

static void tls_free(void *p)
{
	tls_state *t = p;
	if (!t)
		return;
	hs_free_scratch(t->scratch);
	pcre2_match_data_free(t->md);
	pcre2_match_context_free(t->mc);
	free(t);
}

static void pick_loader(void);

/* The serialized Hyperscan database, when the binary links the one generated at
 * build time (redact_hook.h); weak, so the generator itself links without it. */
extern const unsigned char aw_redact_hsdb[] __attribute__((weak));
extern const size_t aw_redact_hsdb_len __attribute__((weak));

static pcre2_code *compile_pcre(int c)
{
	int ec;
	PCRE2_SIZE eo;
	pcre2_code *re =
		pcre2_compile((PCRE2_SPTR)defs[c].pcre, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	if (!re) {
		PCRE2_UCHAR msg[128];
		pcre2_get_error_message(ec, msg, sizeof msg);
		snprintf(init_error, sizeof init_error, "pcre2 %s at %zu: %s", labels[c],
			 (size_t)eo, (char *)msg);
	}
	return re;
}

static void compile_all(void)
{
	pick_loader();
	/* the database compiled at build time loads in microseconds; compiling
	 * takes ~70 ms, which a short `awooop redact` would pay on every run. A
	 * blob built for another CPU or Hyperscan version is refused by
	 * hs_deserialize_database, and then we compile. The PCRE2 patterns wait
	 * for their first candidate (jit_once). */
	if (&aw_redact_hsdb_len && aw_redact_hsdb_len &&
	    hs_deserialize_database((const char *)aw_redact_hsdb, aw_redact_hsdb_len, &hs_db) ==
		    HS_SUCCESS) {
		pthread_key_create(&tls_key, tls_free);
		return;
	}
	/* no database from the build (gen_hsdb itself): compile everything here,
	 * so a pattern that does not compile fails the build */
	const char *pats[AW_RC__COUNT];
	unsigned flags[AW_RC__COUNT], ids[AW_RC__COUNT];
	unsigned n = 0;
	for (int c = 0; c < AW_RC__COUNT; c++) {
		if (!defs[c].pcre)
			continue;
		if (!(pcre[c] = compile_pcre(c)))
			return;
		if (!defs[c].hs)
			continue;
		pats[n] = defs[c].hs;
		flags[n] = 0;
		ids[n] = (unsigned)c;
		n++;
	}
	hs_compile_error_t *ce = NULL;
	if (hs_compile_multi(pats, flags, ids, n, HS_MODE_BLOCK, NULL, &hs_db, &ce) != HS_SUCCESS) {
		snprintf(init_error, sizeof init_error, "hyperscan: %s (pattern %d)",
			 ce ? ce->message : "?", ce ? ce->expression : -1);
		hs_free_compile_error(ce);
		hs_db = NULL;
		return;
	}
	pthread_key_create(&tls_key, tls_free);
}

int redact_hs_serialize(char **out, size_t *len)
{
	if (aw_redact_init(NULL) || hs_serialize_database(hs_db, out, len) != HS_SUCCESS)
		return -1;
	return 0;
}

aw_err aw_redact_init(aw_error *err)
{
	pthread_once(&once, compile_all);
	if (!hs_db)
		return aw_fail(err, AW_E_INTERNAL, "redaction engine: %s", init_error);
	return AW_OK;
}

static tls_state *tls_get(void)
{
	tls_state *t = pthread_getspecific(tls_key);
	if (t)
		return t;
	t = aw_calloc(1, sizeof *t);
	if (!t)
		return NULL;
	if (hs_alloc_scratch(hs_db, &t->scratch) != HS_SUCCESS ||
	    !(t->md = pcre2_match_data_create(4, NULL))) {
		tls_free(t);
		return NULL;
	}
	pthread_setspecific(tls_key, t);
	return t;
}

typedef struct {
	const char *buf;
	size_t len, base; /* base: offset of the slice being scanned */
	tls_state *tls;
	size_t covered[AW_RC__COUNT];
	finding *f;
	size_t nf, capf;
	int oom;
	int no_card;	/* the buffer is a JSON value under an id-like key */
	aw_rc_run *run; /* the project's custom patterns, or NULL */
} scan_ctx;

static void add_finding(scan_ctx *sc, finding fd)
{
	if (sc->nf == sc->capf) {
		size_t cap = sc->capf ? sc->capf * 2 : 64;
		finding *nf = aw_realloc(sc->f, cap * sizeof *nf);
		if (!nf) {
			sc->oom = 1;
			return;
		}
		sc->f = nf;
		sc->capf = cap;
	}
	sc->f[sc->nf++] = fd;
}

/* 1 when a member or field name (len bytes) names an identifier: it ends in
 * "id" or "ids" (span_id, traceId, X-Request-ID), or, without separators and
 * case, in span, trace, parent, request, correlation, uuid or guid. */
static int id_key(const char *k, size_t len)
{
	static const char *const tail[] = {"id",      "ids",	     "span", "trace", "parent",
					   "request", "correlation", "uuid", "guid",  NULL};
	char norm[32];
	size_t n = 0;
	/* the last 31 name characters, separators dropped, lower case */
	for (size_t i = len; i-- > 0 && n < sizeof norm - 1;) {
		char c = k[i];
		if (c == '_' || c == '-' || c == '.')
			continue;
		norm[sizeof norm - 2 - n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	const char *w = norm + sizeof norm - 1 - n;
	norm[sizeof norm - 1] = '\0';
	for (int t = 0; tail[t]; t++) {
		size_t tl = strlen(tail[t]);
		if (n >= tl && memcmp(w + n - tl, tail[t], tl) == 0)
			return 1;
	}
	return 0;
}

/* 1 when the value starting at buf[at] is the value of a key named like an
 * identifier ("span_id":"...", request_id=..., "span": "...", traceId: ...):
 * an id of 16 digits is an id, whatever Luhn says of it. */
static int id_valued(const char *buf, size_t at)
{
	size_t i = at, k = 0;
	if (i && (buf[i - 1] == '"' || buf[i - 1] == '\''))
		i--;
	while (i && buf[i - 1] == ' ' && k++ < 4)
		i--;
	if (!i || (buf[i - 1] != ':' && buf[i - 1] != '='))
		return 0;
	i--;
	while (i && buf[i - 1] == ' ' && k++ < 8)
		i--;
	if (i && (buf[i - 1] == '"' || buf[i - 1] == '\''))
		i--;
	size_t end = i;
	while (i && end - i < 64) {
		char c = buf[i - 1];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			break;
		i--;
	}
	return end > i && id_key(buf + i, end - i);
}

static void jit_once(aw_redact_class c)
{
	if (atomic_load_explicit(&jitted[c], memory_order_acquire))
		return;
	pthread_mutex_lock(&jit_mu);
	if (!atomic_load_explicit(&jitted[c], memory_order_relaxed)) {
		if (!pcre[c])
			pcre[c] = compile_pcre(c); /* checked at build time: not NULL */
		if (pcre[c])
			pcre2_jit_compile(pcre[c],
					  PCRE2_JIT_COMPLETE); /* no JIT: the interpreter */
		atomic_store_explicit(&jitted[c], 1, memory_order_release);
	}
	pthread_mutex_unlock(&jit_mu);
}

/* Confirms a prefilter report of class c ending at `to`. */
static void confirm(scan_ctx *sc, aw_redact_class c, size_t to)
{
	const struct cls_def *d = &defs[c];
	jit_once(c);
	if (!pcre[c])
		return;
	size_t from = to > d->back ? to - d->back : 0;
	if (from < sc->covered[c])
		from = sc->covered[c];
	size_t lim = sc->len - to > d->fwd ? to + d->fwd : sc->len;
	/* The subject ends at lim; a match touching an artificial end is not
	 * trusted (a lookahead could not see past it) unless lim is the real end. */
	while (from < lim) {
		int rc = pcre2_match(pcre[c], (PCRE2_SPTR)sc->buf, lim, from, 0, sc->tls->md, NULL);
		if (rc < 0)
			break;
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(sc->tls->md);
		size_t ms = ov[0], me = ov[1];
		if (me == ms) {
			from = ms + 1;
			continue;
		}
		if (me >= lim && lim < sc->len)
			break;
		size_t rs = ms, re = me;
		if (rc >= 2 && ov[2] != PCRE2_UNSET) {
			rs = ov[2];
			re = ov[3];
		}
		if ((d->ok && !d->ok(sc->buf + rs, re - rs)) ||
		    (c == AW_RC_CARD && (sc->no_card || id_valued(sc->buf, ms)))) {
			/* not this one; a real one may start inside it ("offset 52345
			 * 4111 1111 1111 1111" is no card, its tail is) */
			from = ms + 1;
			continue;
		}
		sc->covered[c] = me;
		add_finding(sc, (finding){ms, me, rs, re, c, 0});
		if (me >= to)
			return;
		from = me;
	}
	if (sc->covered[c] < to)
		sc->covered[c] = to;
}

static int on_hs(unsigned int id, unsigned long long from, unsigned long long to,
		 unsigned int flags, void *ud)
{
	(void)from;
	(void)flags;
	scan_ctx *sc = ud;
	size_t end = sc->base + (size_t)to;
	if (end > sc->covered[id])
		confirm(sc, (aw_redact_class)id, end);
	return sc->oom ? 1 : 0;
}

/*
 * The shape scanner: the prefilter for classes made of digits and a few
 * separators (card, phone, ipv4, ipv6). Log text is full of digits and
 * colons, which keeps any regex automaton busy; bit masks over 64-byte windows
 * find the few places whose shape could be one of these, and only there does
 * PCRE2 look. A numeric token starts at a digit not glued to a word, a
 * decimal or an id (no letter, digit, '.', '-' or '_' before it):
 *   card   a start on 2-6 (the issuers' first digits) followed by 13+ digits,
 *          or by exactly 4 digits, a space or '-', and a group of 4 or 6
 *   phone  '+' and a digit 1-9; "(ddd)"; a start of exactly 3 digits, '.' or
 *          '-', 3 digits; a start on 0 with 1-4 digits, ' ' or '-', 3 digits
 *   ipv4   three digit-dot-digit within a few bytes ("10.1.2.3")
 *   ipv6   "::", or four colons each 2-5 bytes after the last
 * Timestamps, fractions, epoch times, "VALUE TIMESTAMP" pairs, ports and ids
 * pass none of these. The masks come from SSE2 where the target has it and
 * from a scalar loop elsewhere (same bits; a test compares the two).
 */
typedef struct {
	uint64_t digit, alpha, dot, colon, space, dash, under, pp; /* pp: '+' or '(' */
} shape_masks;

static int force_scalar; /* test hook: redact_test_force_scalar() */

void redact_test_force_scalar(int on)
{
	force_scalar = on;
}

/* The scalar masks (architectures without SSE2, and the test hook): one
 * table lookup per byte gives its classes as the 8 bits of a byte (bit k: the
 * k-th mask of shape_masks), and 8 bytes at a time each bit is gathered into
 * 8 mask bits with one multiply. The loop of compares per class and byte it
 * replaces cost ~10x the SIMD loaders. */
enum {
	SC_DIGIT = 1,
	SC_ALPHA = 2,
	SC_DOT = 4,
	SC_COLON = 8,
	SC_SPACE = 16,
	SC_DASH = 32,
	SC_UNDER = 64,
	SC_PP = 128
};
static unsigned char shape_class[256];

static void shape_class_init(void)
{
	for (int c = 0; c < 256; c++) {
		unsigned char k = 0;
		if (c >= '0' && c <= '9')
			k |= SC_DIGIT;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			k |= SC_ALPHA;
		k |= c == '.' ? SC_DOT : c == ':' ? SC_COLON : c == ' ' ? SC_SPACE : 0;
		k |= c == '-' ? SC_DASH : c == '_' ? SC_UNDER : c == '+' || c == '(' ? SC_PP : 0;
		shape_class[c] = k;
	}
}

__attribute__((always_inline)) static inline void shape_load_scalar(const char *p, shape_masks *m)
{
	uint64_t out[8] = {0};
	const unsigned char *u = (const unsigned char *)p;
	for (int i = 0; i < 64; i += 8) {
		uint64_t w = 0;
		for (int j = 0; j < 8; j++)
			w |= (uint64_t)shape_class[u[i + j]] << (8 * j);
		/* bit k of each byte, to 8 adjacent bits: byte j's bit lands at 56 + j */
		for (int k = 0; k < 8; k++)
			out[k] |=
				((((w >> k) & 0x0101010101010101ULL) * 0x0102040810204080ULL) >> 56)
				<< i;
	}
	m->digit = out[0];
	m->alpha = out[1];
	m->dot = out[2];
	m->colon = out[3];
	m->space = out[4];
	m->dash = out[5];
	m->under = out[6];
	m->pp = out[7];
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* SSE2 (every x86-64): 16 bytes per compare; bit i of a mask is byte i */
static inline uint64_t sse_bits(__m128i a, __m128i b, __m128i c, __m128i d)
{
	return (uint64_t)(uint16_t)_mm_movemask_epi8(a) |
	       (uint64_t)(uint16_t)_mm_movemask_epi8(b) << 16 |
	       (uint64_t)(uint16_t)_mm_movemask_epi8(c) << 32 |
	       (uint64_t)(uint16_t)_mm_movemask_epi8(d) << 48;
}

static inline __m128i sse_eq(__m128i x, char ch)
{
	return _mm_cmpeq_epi8(x, _mm_set1_epi8(ch));
}

/* bytes in lo..hi (signed compares: both ASCII, so bytes >= 0x80 never match) */
static inline __m128i sse_in(__m128i x, char lo, char hi)
{
	return _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8((char)(lo - 1))),
			     _mm_cmplt_epi8(x, _mm_set1_epi8((char)(hi + 1))));
}

__attribute__((always_inline)) static inline void shape_load_sse2(const char *p, shape_masks *m)
{
	__m128i v[4], lw[4], r[8][4];
	for (int k = 0; k < 4; k++) {
		v[k] = _mm_loadu_si128((const __m128i *)(p + 16 * k));
		lw[k] = _mm_or_si128(v[k], _mm_set1_epi8(0x20));
		r[0][k] = sse_in(v[k], '0', '9');
		r[1][k] = sse_in(lw[k], 'a', 'z');
		r[2][k] = sse_eq(v[k], '.');
		r[3][k] = sse_eq(v[k], ':');
		r[4][k] = sse_eq(v[k], ' ');
		r[5][k] = sse_eq(v[k], '-');
		r[6][k] = sse_eq(v[k], '_');
		r[7][k] = _mm_or_si128(sse_eq(v[k], '+'), sse_eq(v[k], '('));
	}
	uint64_t *out[8] = {&m->digit, &m->alpha, &m->dot,   &m->colon,
			    &m->space, &m->dash,  &m->under, &m->pp};
	for (int i = 0; i < 8; i++)
		*out[i] = sse_bits(r[i][0], r[i][1], r[i][2], r[i][3]);
}

/* AVX2 where the CPU has it: 32 bytes per compare */
__attribute__((target("avx2"))) static inline __m256i avx_eq(__m256i x, char ch)
{
	return _mm256_cmpeq_epi8(x, _mm256_set1_epi8(ch));
}

__attribute__((target("avx2"))) static inline __m256i avx_in(__m256i x, char lo, char hi)
{
	return _mm256_and_si256(_mm256_cmpgt_epi8(x, _mm256_set1_epi8((char)(lo - 1))),
				_mm256_cmpgt_epi8(_mm256_set1_epi8((char)(hi + 1)), x));
}

__attribute__((target("avx2"), always_inline)) static inline void shape_load_avx2(const char *p,
										  shape_masks *m)
{
	__m256i r[8][2];
	for (int k = 0; k < 2; k++) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * k));
		__m256i lw = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
		r[0][k] = avx_in(v, '0', '9');
		r[1][k] = avx_in(lw, 'a', 'z');
		r[2][k] = avx_eq(v, '.');
		r[3][k] = avx_eq(v, ':');
		r[4][k] = avx_eq(v, ' ');
		r[5][k] = avx_eq(v, '-');
		r[6][k] = avx_eq(v, '_');
		r[7][k] = _mm256_or_si256(avx_eq(v, '+'), avx_eq(v, '('));
	}
	uint64_t *out[8] = {&m->digit, &m->alpha, &m->dot,   &m->colon,
			    &m->space, &m->dash,  &m->under, &m->pp};
	for (int i = 0; i < 8; i++)
		*out[i] = (uint64_t)(uint32_t)_mm256_movemask_epi8(r[i][0]) |
			  (uint64_t)(uint32_t)_mm256_movemask_epi8(r[i][1]) << 32;
}

#define HAVE_SHAPE_SIMD 1
static int use_avx2;
#endif

static void pick_loader(void)
{
	shape_class_init();
#ifdef HAVE_SHAPE_SIMD
	__builtin_cpu_init();
	use_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi");
#endif
}

/* bit i: some bit of x is 2..5 bits after i */
static inline uint64_t near25(uint64_t x)
{
	return (x >> 2) | (x >> 3) | (x >> 4) | (x >> 5);
}

static void shape_confirm(scan_ctx *sc, size_t base, uint64_t bits, aw_redact_class cls)
{
	while (bits) {
		size_t to = base + (size_t)__builtin_ctzll(bits) + 1;
		bits &= bits - 1;
		/* a number under an id-like name is no card: decided before PCRE2
		   (span ids in agent traces are 16 digits, a tenth Luhn-valid) */
		if (cls == AW_RC_CARD && (sc->no_card || id_valued(sc->buf, to - 1)))
			continue;
		if (to > sc->covered[cls])
			confirm(sc, cls, to);
	}
}

static int is_an(char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* A ".xxxxxx." is a Discord token's middle only with 22 letters or digits
 * before it and 27 token characters after: checked byte-wise here, so
 * package names and host names ("org.example.orders.") cost no PCRE2 run. */
static void discord_candidates(scan_ctx *sc, size_t base, uint64_t bits)
{
	for (; bits; bits &= bits - 1) {
		size_t dot = base + (size_t)__builtin_ctzll(bits);
		if (dot < 22 || sc->len - dot < 8 + 27)
			continue;
		int ok = 1;
		for (size_t k = dot - 22; ok && k < dot; k++)
			ok = is_an(sc->buf[k]);
		for (size_t k = dot + 8; ok && k < dot + 8 + 27; k++)
			ok = is_an(sc->buf[k]) || sc->buf[k] == '-' || sc->buf[k] == '_';
		if (ok && dot + 1 > sc->covered[AW_RC_DISCORD])
			confirm(sc, AW_RC_DISCORD, dot + 1);
	}
}

/* Keeps the bits of cand whose byte (p[i]) is in lo..hi: the rare masks are
 * checked byte by byte, only where a candidate is. */
static uint64_t keep_bytes(const char *p, uint64_t cand, char lo, char hi)
{
	uint64_t out = 0;
	for (uint64_t b = cand; b; b &= b - 1) {
		int i = __builtin_ctzll(b);
		if (p[i] >= lo && p[i] <= hi)
			out |= 1ULL << i;
	}
	return out;
}

/* The candidate starts of one window (bit i: the byte p[i]). */
__attribute__((always_inline)) static inline void
shape_candidates(const char *p, const shape_masks *m, uint64_t *card, uint64_t *phone,
		 uint64_t *ip4, uint64_t *ip6, uint64_t *ssn, uint64_t *iban)
{
	uint64_t d = m->digit;
	/* IBAN: two letters at a token start, two digits, then a letter or digit
	   (compact) or a space (groups of 4); both letters upper case */
	uint64_t al = m->alpha, an = al | d;
	*iban = 0;
	for (uint64_t b = al & ~(an << 1) & (al >> 1) & (d >> 2) & (d >> 3) &
			  ((an | m->space) >> 4) & (an >> 5);
	     b; b &= b - 1) {
		int i = __builtin_ctzll(b);
		if (p[i] >= 'A' && p[i] <= 'Z' && p[i + 1] >= 'A' && p[i + 1] <= 'Z')
			*iban |= 1ULL << i;
	}
	*ssn = 0;
	uint64_t dotd = m->dot & (d << 1) & (d >> 1); /* digit.digit */
	uint64_t next = (dotd >> 2) | (dotd >> 3) | (dotd >> 4);
	*ip4 = dotd & next & ((next >> 2) | (next >> 3) | (next >> 4));
	uint64_t c = m->colon, three = c & (c - 1);
	*ip6 = c & (c >> 1); /* "::" */
	three &= three - 1;
	if (three & (three - 1)) /* at least four colons */
		*ip6 |= c & near25(c & near25(c & near25(c)));
	*card = *phone = 0;
	uint64_t r3 = d & (d >> 1) & (d >> 2);
	if (!r3 && !m->pp)
		return;
	uint64_t glued = d | m->alpha | m->dot | m->dash | m->under;
	uint64_t st = d & ~(glued << 1); /* numeric token starts */
	uint64_t r4 = r3 & (d >> 3), exact3 = r3 & ~(d >> 3), exact4 = r4 & ~(d >> 4);
	uint64_t exact6 = r4 & (d >> 4) & (d >> 5) & ~(d >> 6);
	uint64_t exact2 = d & (d >> 1) & ~(d >> 2);
	/* SSN: exactly ddd-dd-dddd */
	*ssn = st & exact3 & (m->dash >> 3) & (exact2 >> 4) & (m->dash >> 6) & (exact4 >> 7);
	uint64_t r7 = r4 & (r3 >> 4), r13 = r7 & (r7 >> 6);
	uint64_t sd = m->space | m->dash, dd = m->dash | m->dot;
	uint64_t cc = st & (r13 | (exact4 & (sd >> 4) & ((exact4 >> 5) | (exact6 >> 5))));
	if (cc)
		*card = keep_bytes(p, cc, '2', '6');
	uint64_t sep03 = ((sd >> 2) & (r3 >> 3)) | ((sd >> 3) & (r3 >> 4)) |
			 ((sd >> 4) & (r3 >> 5)) | ((sd >> 5) & (r3 >> 6));
	uint64_t lead0 = st & (d >> 1) & sep03;
	*phone = st & exact3 & (dd >> 3) & (exact3 >> 4) & (dd >> 7) & (r4 >> 8); /* ddd-ddd-dddd */
	if (lead0)
		*phone |= keep_bytes(p, lead0, '0', '0');
	/* '+' and a digit 1-9, or "(ddd)": '+' and '(' share a mask, tell apart here */
	for (uint64_t b = m->pp & (d >> 1); b; b &= b - 1) {
		int i = __builtin_ctzll(b);
		if ((p[i] == '+' && p[i + 1] != '0') ||
		    (p[i] == '(' && i + 4 < 64 && (r3 >> 1 & 1ULL << i) && p[i + 4] == ')'))
			*phone |= 1ULL << i;
	}
}

/* The scan loop, inlined into one function per mask loader: the masks stay in
 * registers and the whole loop is compiled for the loader's instruction set
 * (a call through a pointer per 48-byte window, with the masks stored and
 * reloaded, had cost as much as the loads themselves). */
typedef void (*shape_loader)(const char *, shape_masks *);

__attribute__((always_inline)) static inline void scan_shapes_with(scan_ctx *sc, shape_loader load)
{
	/* Window covers bytes [i - 1, i + 63): bit 0 is look-behind, bits 1..48
	 * are the bytes judged in this step, the rest is look-ahead (<= 15; the
	 * longest look-ahead above, a 13-digit run, needs 12). */
	const size_t step = 48;
	const uint64_t keep = ((1ULL << step) - 1) << 1;
	char tmp[64];
	for (size_t i = 0; i < sc->len && !sc->oom; i += step) {
		const char *p;
		if (i >= 1 && sc->len - (i - 1) >= 64) {
			p = sc->buf + i - 1;
		} else { /* first or last window: pad with spaces */
			memset(tmp, ' ', sizeof tmp);
			size_t from = i ? i - 1 : 0, at = i ? 0 : 1;
			size_t n = sc->len - from < 64 - at ? sc->len - from : 64 - at;
			memcpy(tmp + at, sc->buf + from, n);
			p = tmp;
		}
		shape_masks m;
		load(p, &m);
		/* Discord bot token: a letter or digit, '.', 6 of [A-Za-z0-9_-], '.',
		   one of those (the bit is the first dot); two dots 7 apart first,
		   which most windows do not have */
		uint64_t dc = m.dot & (m.dot >> 7) & keep;
		if (dc) {
			uint64_t an = m.alpha | m.digit, w = an | m.dash | m.under;
			dc &= (an << 1) & (w >> 8) & (w >> 1) & (w >> 2) & (w >> 3) & (w >> 4) &
			      (w >> 5) & (w >> 6);
		}
		if (dc)
			discord_candidates(sc, i - 1, dc & keep);
		/* "+" or "(" may lead digits beyond; an IBAN's letters may be the
		   step's last bytes and its digits beyond them */
		if (!((m.digit & (keep | keep << 3)) | ((m.colon | m.pp) & keep)))
			continue;
		uint64_t card, phone, ip4, ip6, ssn, iban;
		shape_candidates(p, &m, &card, &phone, &ip4, &ip6, &ssn, &iban);
		size_t base = i - 1; /* wraps for i == 0; bit 0 is never set in keep */
		if (card & keep)
			shape_confirm(sc, base, card & keep, AW_RC_CARD);
		if (phone & keep)
			shape_confirm(sc, base, phone & keep, AW_RC_PHONE);
		if (ip4 & keep)
			shape_confirm(sc, base, ip4 & keep, AW_RC_IPV4);
		if (ip6 & keep)
			shape_confirm(sc, base, ip6 & keep, AW_RC_IPV6);
		if (ssn & keep)
			shape_confirm(sc, base, ssn & keep, AW_RC_SSN);
		if (iban & keep)
			shape_confirm(sc, base, iban & keep, AW_RC_IBAN);
	}
}

static void scan_shapes_scalar(scan_ctx *sc)
{
	scan_shapes_with(sc, shape_load_scalar);
}

#ifdef HAVE_SHAPE_SIMD
static void scan_shapes_sse2(scan_ctx *sc)
{
	scan_shapes_with(sc, shape_load_sse2);
}

__attribute__((target("avx2,bmi"))) static void scan_shapes_avx2(scan_ctx *sc)
{
	scan_shapes_with(sc, shape_load_avx2);
}
#endif

static void scan_shapes(scan_ctx *sc)
{
#ifdef HAVE_SHAPE_SIMD
	if (!force_scalar) {
		(use_avx2 ? scan_shapes_avx2 : scan_shapes_sse2)(sc);
		return;
	}
#endif
	scan_shapes_scalar(sc);
}

/* Which of two findings of the same span names it: a provider's class (0),
 * a generic one (1), a project's own pattern (2). */
static int generic(aw_redact_class c)
{
	if (c == AW_RC_CUSTOM)
		return 2;
	return c == AW_RC_AUTH_HEADER || c == AW_RC_URL_CREDS || c == AW_RC_ASSIGNMENT ||
	       c == AW_RC_AWS_SECRET;
}

static int cmp_finding(const void *a, const void *b)
{
	const finding *x = a, *y = b;
	if (x->rstart != y->rstart)
		return x->rstart < y->rstart ? -1 : 1;
	if (x->rend != y->rend)
		return x->rend > y->rend ? -1 : 1;
	/* the same span: a provider's class names it better than "authorization"
	   or "secret_assignment" (OPENAI_API_KEY=sk-proj-... is an openai_key) */
	int gx = generic(x->cls), gy = generic(y->cls);
	if (gx != gy)
		return gx - gy;
	if (x->cls != y->cls)
		return (int)x->cls - (int)y->cls;
	return x->ci - y->ci;
}

static int emit_custom(void *ud, size_t start, size_t end, int i)
{
	scan_ctx *sc = ud;
	add_finding(sc, (finding){start, end, start, end, AW_RC_CUSTOM, i});
	return sc->oom;
}

/* Finds and orders the non-overlapping findings of buf (with run's custom
 * patterns when run is not NULL). */
static aw_err scan(const char *buf, size_t len, scan_ctx *sc, int no_card, aw_rc_run *run)
{
	memset(sc, 0, sizeof *sc);
	sc->buf = buf;
	sc->len = len;
	sc->no_card = no_card;
	sc->run = run;
	if (aw_redact_init(NULL))
		return AW_E_INTERNAL;
	if (!(sc->tls = tls_get()))
		return AW_E_NOMEM;
	if (len == 0)
		return AW_OK;
	/* hs_scan takes an unsigned int length: scan huge buffers in slices that
	 * overlap by the longest prefilter reach. */
	const size_t slice = 1u << 30;
	for (size_t off = 0; off < len;) {
		size_t n = len - off > slice ? slice : len - off;
		sc->base = off;
		hs_error_t rc =
			hs_scan(hs_db, buf + off, (unsigned)n, 0, sc->tls->scratch, on_hs, sc);
		if (rc != HS_SUCCESS && rc != HS_SCAN_TERMINATED)
			return AW_E_INTERNAL;
		if (sc->oom)
			return AW_E_NOMEM;
		if (off + n >= len)
			break;
		off += n - 4096;
	}
	scan_shapes(sc);
	if (sc->oom)
		return AW_E_NOMEM;
	if (run && run->set) {
		if (!sc->tls->mc && !(sc->tls->mc = rc_match_context()))
			return AW_E_NOMEM;
		if (rc_scan(run, buf, len, sc->tls->md, sc->tls->mc, emit_custom, sc) || sc->oom)
			return AW_E_NOMEM;
	}
	if (sc->nf > 1)
		qsort(sc->f, sc->nf, sizeof *sc->f, cmp_finding);
	size_t keep = 0, end = 0;
	for (size_t i = 0; i < sc->nf; i++) {
		if (keep && sc->f[i].rstart < end)
			continue;
		sc->f[keep++] = sc->f[i];
		end = sc->f[i].rend;
	}
	sc->nf = keep;
	return AW_OK;
}

/* The replacement of f: "[REDACTED:label]" or "[REDACTED:custom:name]"
 * (at most 10 + 7 + AW_REDACT_CUSTOM_NAME_MAX + 1 bytes and the NUL). */
#define MARKER_MAX 64
static size_t marker(const scan_ctx *sc, const finding *f, char out[MARKER_MAX])
{
	int n = f->cls == AW_RC_CUSTOM ? snprintf(out, MARKER_MAX, "[REDACTED:custom:%s]",
						  rc_name(sc->run ? sc->run->set : NULL, f->ci))
				       : snprintf(out, MARKER_MAX, "[REDACTED:%s]", labels[f->cls]);
	return n > 0 && n < MARKER_MAX ? (size_t)n : 0;
}

/* Writes buf[0, upto) with the findings wholly inside it replaced. */
static char *render(const scan_ctx *sc, size_t upto, size_t *outlen, aw_redact_stats *st)
{
	size_t extra = 0;
	for (size_t i = 0; i < sc->nf && sc->f[i].rend <= upto; i++)
		extra += MARKER_MAX;
	char *out = aw_malloc(upto + extra + 1);
	if (!out)
		return NULL;
	size_t o = 0, pos = 0;
	for (size_t i = 0; i < sc->nf && sc->f[i].rend <= upto; i++) {
		const finding *f = &sc->f[i];
		memcpy(out + o, sc->buf + pos, f->rstart - pos);
		o += f->rstart - pos;
		o += marker(sc, f, out + o);
		pos = f->rend;
		if (st)
			st->count[f->cls]++;
	}
	memcpy(out + o, sc->buf + pos, upto - pos);
	o += upto - pos;
	out[o] = '\0';
	*outlen = o;
	return out;
}

static aw_err redact_text(const char *in, size_t len, char **out, size_t *outlen,
			  aw_redact_stats *stats, int no_card, aw_rc_run *run)
{
	scan_ctx sc;
	aw_err e = scan(in, len, &sc, no_card, run);
	if (!e) {
		size_t n = 0;
		*out = render(&sc, len, &n, stats);
		if (!*out)
			e = AW_E_NOMEM;
		else if (outlen)
			*outlen = n;
	}
	free(sc.f);
	return e;
}

aw_err aw_redact_text(const char *in, size_t len, char **out, size_t *outlen,
		      aw_redact_stats *stats)
{
	return redact_text(in, len, out, outlen, stats, 0, NULL);
}

char *aw_redact_str(const char *in)
{
	char *out = NULL;
	if (!in || aw_redact_text(in, strlen(in), &out, NULL, NULL) != AW_OK)
		return NULL;
	return out;
}

aw_err aw_redact_text_for(const char *project, const char *in, size_t len, char **out,
			  size_t *outlen, aw_redact_stats *stats)
{
	aw_rc_run run = {.set = rc_lookup(project)};
	if (!run.set)
		return redact_text(in, len, out, outlen, stats, 0, NULL);
	aw_err e = redact_text(in, len, out, outlen, stats, 0, &run);
	rc_finish(&run, project, stats);
	return e;
}

char *aw_redact_str_for(const char *project, const char *in)
{
	char *out = NULL;
	if (!in || aw_redact_text_for(project, in, strlen(in), &out, NULL, NULL) != AW_OK)
		return NULL;
	return out;
}

/* ------------------------------------------------------------------- JSON */

int aw_redact_sensitive_key(const char *key)
{
	static const char *const exact[] = {"authorization", "cookie",	   "setcookie",
					    "sessionid",     "passphrase", "credential",
					    "credentials",   NULL};
	static const char *const suffix[] = {"password",   "passwd",	  "secret",	"token",
					     "apikey",	   "privatekey",  "accesskey",	"secretkey",
					     "credential", "credentials", "signingkey", NULL};
	char norm[128];
	size_t n = 0;
	for (const char *p = key; *p && n < sizeof norm - 1; p++) {
		char c = *p;
		if (c == '_' || c == '-' || c == ' ' || c == '.')
			continue;
		norm[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	norm[n] = '\0';
	for (int i = 0; exact[i]; i++)
		if (strcmp(norm, exact[i]) == 0)
			return 1;
	for (int i = 0; suffix[i]; i++) {
		size_t k = strlen(suffix[i]);
		if (n >= k && strcmp(norm + n - k, suffix[i]) == 0)
			return 1;
	}
	return 0;
}

/* 1 if v is a string of digits only (an id's shape, or a card's) */
static int all_digits(const json_t *v)
{
	const char *p = json_string_value(v);
	size_t n = json_string_length(v);
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return n > 0;
}

/* idkey: the string is the value of a member named like an id ("span",
 * "trace_id", ...): a string of digits there is an id, not a card. */
/* in redacted into *out (NULL: nothing found - in stays as it is, and
 * nothing is copied: most of an audit payload's strings) */
static aw_err redact_found(const char *in, size_t len, char **out, size_t *outlen,
			   aw_redact_stats *stats, int no_card, aw_rc_run *run)
{
	scan_ctx sc;
	*out = NULL;
	aw_err e = scan(in, len, &sc, no_card, run);
	if (!e && sc.nf && !(*out = render(&sc, len, outlen, stats)))
		e = AW_E_NOMEM;
	free(sc.f);
	return e;
}

static aw_err redact_json_string(json_t *s, aw_redact_stats *st, int idkey, aw_rc_run *run)
{
	char *out = NULL;
	size_t n = 0;
	aw_err e = redact_found(json_string_value(s), json_string_length(s), &out, &n, st,
				idkey && all_digits(s), run);
	if (e || !out)
		return e;
	if (n != json_string_length(s) || memcmp(out, json_string_value(s), n) != 0)
		json_string_setn_nocheck(s, out, n);
	free(out);
	return AW_OK;
}

static aw_err walk(json_t *v, aw_redact_stats *st, int depth, int idkey, aw_rc_run *run)
{
	if (depth > 512)
		return AW_E_REQ_JSON;
	if (json_is_string(v))
		return redact_json_string(v, st, idkey, run);
	if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach (v, i, x) {
			aw_err e = walk(x, st, depth + 1, 0, run);
			if (e)
				return e;
		}
		return AW_OK;
	}
	if (!json_is_object(v))
		return AW_OK;
	/* A key may itself hold a secret: it is redacted too, and a value is
	 * replaced when either the key or its redacted form names a secret.
	 * Renamed members are collected and put back after the walk. */
	const char *key;
	json_t *x;
	void *tmp;
	json_t *renamed = NULL;
	aw_err e = AW_OK;
	json_object_foreach_safe (v, tmp, key, x) {
		char *found = NULL;
		size_t rn = 0;
		if ((e = redact_found(key, strlen(key), &found, &rn, st, 0, run)))
			break;
		const char *rk = found ? found : key;
		if (aw_redact_sensitive_key(key) || (found && aw_redact_sensitive_key(rk))) {
			if (!json_is_null(x)) {
				json_object_set_new(v, key,
						    json_string("[REDACTED:sensitive_field]"));
				x = json_object_get(v, key);
				if (st)
					st->count[AW_RC_SENSITIVE_FIELD]++;
			}
		} else if ((e = walk(x, st, depth + 1, id_key(key, strlen(key)), run))) {
			free(found);
			break;
		}
		if (found && strcmp(rk, key) != 0) {
			if (!renamed)
				renamed = json_object();
			json_object_set(renamed, rk, x);
			json_object_del(v, key);
		}
		free(found);
	}
	if (e) {
		json_decref(renamed);
		return e;
	}
	if (renamed) {
		json_object_update(v, renamed);
		json_decref(renamed);
	}
	return AW_OK;
}

aw_err aw_redact_json(json_t *doc, aw_redact_stats *stats)
{
	aw_err e = aw_redact_init(NULL);
	return e ? e : walk(doc, stats, 0, 0, NULL);
}

aw_err aw_redact_json_for(const char *project, json_t *doc, aw_redact_stats *stats)
{
	aw_err e = aw_redact_init(NULL);
	if (e)
		return e;
	aw_rc_run run = {.set = rc_lookup(project)};
	if (!run.set)
		return walk(doc, stats, 0, 0, NULL);
	e = walk(doc, stats, 0, 0, &run);
	rc_finish(&run, project, stats);
	return e;
}

/* -------------------------------------------------------------- streaming */

struct aw_redact_stream {
	aw_redact_sink sink;
	void *ud;
	aw_redact_stats *stats;
	char *buf;
	size_t len, cap;
	aw_redact_custom *set; /* the project's patterns (a reference), or NULL */
	char project[AW_PROJECT_MAX + 1];
};

aw_redact_stream *aw_redact_stream_new(aw_redact_sink sink, void *ud, aw_redact_stats *stats)
{
	aw_redact_stream *s = aw_calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->sink = sink;
	s->ud = ud;
	s->stats = stats;
	return s;
}

aw_redact_stream *aw_redact_stream_new_for(const char *project, aw_redact_sink sink, void *ud,
					   aw_redact_stats *stats)
{
	aw_redact_stream *s = aw_redact_stream_new(sink, ud, stats);
	/* a project with a custom set was registered within AW_PROJECT_MAX */
	if (s && (s->set = rc_lookup(project)) && AW_STR_COPY(s->project, project) < 0) {
		rc_release(s->set);
		free(s);
		return NULL;
	}
	return s;
}

/* Where a flush may end: after a line end within 4 KiB before `at`, else
 * after a space or quote within 512 bytes, else at `at`. The next scan starts
 * there, without the bytes before it: a cut inside a number or between a
 * name and its value would lose the look-behind that says "part of an id"
 * ("trace":"7764...": a card in the second half of a 16-digit id). */
static size_t cut_point(const char *buf, size_t at)
{
	for (size_t k = 0; k < 4096 && k < at; k++)
		if (buf[at - 1 - k] == '\n')
			return at - k;
	for (size_t k = 0; k < 512 && k < at; k++) {
		char c = buf[at - 1 - k];
		if (c == ' ' || c == '\t' || c == '"' || c == '\'')
			return at - k;
	}
	return at;
}

/* Emits the redacted prefix that no later byte can change. */
static aw_err flush(aw_redact_stream *s, int final)
{
	if (s->len == 0)
		return AW_OK;
	scan_ctx sc;
	/* one budget a flush; the stream keeps its own reference to the set */
	aw_rc_run run = {.set = s->set};
	aw_err e = scan(s->buf, s->len, &sc, 0, s->set ? &run : NULL);
	if (e) {
		free(sc.f);
		goto done;
	}
	size_t safe = s->len;
	if (!final) {
		safe = cut_point(s->buf, s->len > HOLD ? s->len - HOLD : 0);
		for (size_t i = 0; i < sc.nf; i++)
			if (sc.f[i].end > safe && sc.f[i].start < safe)
				safe = sc.f[i].start;
		/* an unterminated private key: hold it, but not without bound */
		if (safe == 0 && s->len >= AW_REDACT_MAX_HOLD)
			safe = s->len;
	}
	/* hand the sink the unchanged spans directly and only the markers as
	 * new text: no copy of the (mostly clean) input */
	int rc = 0;
	size_t pos = 0;
	for (size_t i = 0; !rc && i < sc.nf && sc.f[i].rend <= safe; i++) {
		const finding *f = &sc.f[i];
		char mk[MARKER_MAX];
		size_t mn = marker(&sc, f, mk);
		if (f->rstart > pos)
			rc = s->sink(s->ud, s->buf + pos, f->rstart - pos);
		if (!rc)
			rc = s->sink(s->ud, mk, mn);
		if (s->stats)
			s->stats->count[f->cls]++;
		pos = f->rend;
	}
	if (!rc && safe > pos)
		rc = s->sink(s->ud, s->buf + pos, safe - pos);
	free(sc.f);
	if (rc) {
		e = AW_E_INTERNAL;
		goto done;
	}
	memmove(s->buf, s->buf + safe, s->len - safe);
	s->len -= safe;
done:
	if (s->set) {
		run.set = NULL; /* the stream's reference, released by finish */
		rc_finish(&run, s->project, s->stats);
	}
	return e;
}

aw_err aw_redact_stream_feed(aw_redact_stream *s, const char *data, size_t len)
{
	if (len == 0)
		return AW_OK;
	if (s->len + len > s->cap) {
		size_t cap = s->cap ? s->cap : 65536;
		while (cap < s->len + len)
			cap *= 2;
		char *nb = aw_realloc(s->buf, cap);
		if (!nb)
			return AW_E_NOMEM;
		s->buf = nb;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	/* flush once 256 KiB are buffered: the held tail (HOLD) is scanned again
	 * by the next flush, so rarer flushes rescan less (4% of the text, 8% at
	 * 128 KiB: +3-4% CPU time through the command); 256 KiB stays in L2 for
	 * the shape scanner's pass after Hyperscan's */
	return s->len >= FLUSH_AT ? flush(s, 0) : AW_OK;
}

aw_err aw_redact_stream_finish(aw_redact_stream *s)
{
	aw_err e = flush(s, 1);
	rc_release(s->set);
	free(s->buf);
	free(s);
	return e;
}
