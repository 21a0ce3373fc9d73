/*
 * keys.c - Redis names (see keys.h): the INV-1 registry, the builder with its
 * component validation, and the classifier the inventory uses. Templates are
 * ':'-separated; "{name}" is one component, "{*}" the rest of the key.
 */
#include "awooop/keys.h"

#include <stdio.h>
#include <string.h>

#include "awooop/ctx.h"
#include "awooop/ident.h"
#include "awooop/str.h"

#define INVALIDATE_PREFIX "platform:contract:invalidate:"

/* The legacy test key "approval:123:lock" (P3) is deliberately not carried over. */
static const aw_key_pattern registry[] = {
	/* P0 */
	{"ollama_topology", "P0", "string", 0, AW_KEY_PLATFORM, "ollama:current_primary",
	 "platform:ollama:topology"},
	{"gemini_daily_count", "P0", "string", 86400, AW_KEY_PLATFORM,
	 "ollama:gemini_daily_count:{date}", "platform:ollama:gemini_daily_count:{date}"},
	{"telegram_polling_leader", "P0", "string", 30, AW_KEY_PLATFORM, "telegram:polling:leader",
	 "platform:telegram:polling:leader"},
	{"telegram_silence", "P0", "string", -1, AW_KEY_TENANT, "telegram_silence:{target}",
	 "{project_id}:telegram:silence:{target}"},
	{"ai_rate_total_cost", "P0", "string", 0, AW_KEY_TENANT, "ai_rate:total_cost:{provider}",
	 "{project_id}:ai_rate:total_cost:{provider}"},
	/* P1 */
	{"approval", "P1", "hash", 900, AW_KEY_TENANT, "approval:{run_id}:{field}",
	 "{project_id}:approval:{run_id}:{field}"},
	{"incident", "P1", "hash", 86400, AW_KEY_TENANT, "incident:{incident_id}",
	 "{project_id}:incident:{incident_id}"},
	{"consensus", "P1", "hash", -1, AW_KEY_TENANT, "consensus:{consensus_id}",
	 "{project_id}:consensus:{consensus_id}"},
	{"playbook_embedding_index", "P1", "set", 0, AW_KEY_TENANT, "playbook:embedding:index",
	 "{project_id}:playbook:embedding:index"},
	{"playbook_index_alert", "P1", "string", 3600, AW_KEY_TENANT,
	 "playbook:index:alert:{alert_name}", "{project_id}:playbook:index:alert:{alert_name}"},
	{"playbook_embedding", "P1", "string", 0, AW_KEY_TENANT, "playbook:embedding:{playbook_id}",
	 "{project_id}:playbook:embedding:{playbook_id}"},
	{"playbook", "P1", "string", 3600, AW_KEY_TENANT, "playbook:{playbook_id}",
	 "{project_id}:playbook:{playbook_id}"},
	{"km_backfill_dlq", "P1", "list", 0, AW_KEY_TENANT, "km:backfill:dlq",
	 "{project_id}:km:backfill:dlq"},
	/* P2 */
	{"anomaly_disposition", "P2", "string", 604800, AW_KEY_TENANT,
	 "anomaly:disposition:{alert_id}", "{project_id}:anomaly:disposition:{alert_id}"},
	{"anomaly_metadata", "P2", "hash", 604800, AW_KEY_TENANT, "anomaly:metadata:{alert_id}",
	 "{project_id}:anomaly:metadata:{alert_id}"},
	{"anomaly_permanent_fix", "P2", "string", 2592000, AW_KEY_TENANT,
	 "anomaly:permanent_fix:{alert_id}", "{project_id}:anomaly:permanent_fix:{alert_id}"},
	{"anomaly_repair_count", "P2", "string", 604800, AW_KEY_TENANT,
	 "anomaly:repair_count:{alert_id}", "{project_id}:anomaly:repair_count:{alert_id}"},
	{"anomaly_repair_history", "P2", "list", 2592000, AW_KEY_TENANT,
	 "anomaly:repair_history:{alert_id}", "{project_id}:anomaly:repair_history:{alert_id}"},
	{"anomaly_timeline", "P2", "list", 604800, AW_KEY_TENANT, "anomaly:timeline:{alert_id}",
	 "{project_id}:anomaly:timeline:{alert_id}"},
	{"hermes_session", "P2", "hash", 1800, AW_KEY_TENANT, "hermes:session:{chat_id}:{user_id}",
	 "{project_id}:hermes:session:{chat_id}:{user_id}"},
	{"hermes_rl", "P2", "string", 60, AW_KEY_TENANT, "hermes:rl:{chat_id}",
	 "{project_id}:hermes:rl:{chat_id}"},
	{"hermes_approvers", "P2", "set", 0, AW_KEY_TENANT, "hermes:approvers",
	 "{project_id}:hermes:approvers"},
	{"session", "P2", "hash", -1, AW_KEY_TENANT, "session:{session_id}",
	 "{project_id}:session:{session_id}"},
	{"tg_sent", "P2", "string", 600, AW_KEY_TENANT, "tg_sent:{fingerprint}",
	 "{project_id}:tg_sent:{fingerprint}"},
	/* awooop's own (no INV-1 legacy): the MCP gateway's Gate 4 across
	 * processes, one counter per tool and minute */
	{"mcp_rate", "P2", "string", 120, AW_KEY_TENANT, "mcp:rate:{tool}:{minute}",
	 "{project_id}:mcp:rate:{tool}:{minute}"},
	{"telegram_user", "P2", "string", -1, AW_KEY_TENANT, "telegram:{user_id}:{field}",
	 "{project_id}:telegram:{user_id}:{field}"},
	/* awooop's own: a project's emergency-model calls of a UTC day, its share
	 * of the platform's gemini_daily_count */
	{"llm_emergency", "P2", "string", 172800, AW_KEY_TENANT, "llm:emergency:{date}",
	 "{project_id}:llm:emergency:{date}"},
};
#define NREG (int)(sizeof registry / sizeof registry[0])

int aw_keys_count(void)
{
	return NREG;
}

const aw_key_pattern *aw_keys_at(int i)
{
	return i >= 0 && i < NREG ? &registry[i] : NULL;
}

const aw_key_pattern *aw_keys_find(const char *name)
{
	for (int i = 0; name && i < NREG; i++)
		if (!strcmp(registry[i].name, name))
			return &registry[i];
	return NULL;
}

int aw_keys_component_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 128)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c == 0x7f || strchr(":*?[]\\", c))
			return -1;
	}
	return 0;
}

static int project_ok(const char *p)
{
	return aw_ident_project_ok(p) || (p && strcmp(p, AW_PLATFORM_PROJECT) == 0);
}

aw_err aw_keys_build(const aw_key_pattern *p, int modern, const char *project,
		     const char *const *values, int nvalues, char *out, size_t cap, aw_error *err)
{
	const char *t = modern ? p->modern : p->legacy;
	size_t o = 0;
	int vi = 0;
	if (modern && p->scope == AW_KEY_TENANT && !project_ok(project))
		return aw_fail(err, AW_E_TENANT_SLUG,
			       "project id must match [a-z0-9][a-z0-9_-]{1,62}");
	while (*t) {
		const char *v = NULL;
		size_t vlen = 0;
		if (*t == '{') {
			const char *end = strchr(t, '}');
			if (!strncmp(t, "{project_id}", 12)) {
				v = project;
			} else {
				if (vi >= nvalues)
					return aw_fail(err, AW_E_KEYS_COMPONENT,
						       "missing component %.*s", (int)(end - t + 1),
						       t);
				v = values[vi++];
				if (aw_keys_component_ok(v))
					return aw_fail_at(
						err, AW_E_KEYS_COMPONENT, "component",
						"component %.*s is empty, too long or holds"
						" ':' '*' '?' '[' ']' '\\' or whitespace",
						(int)(end - t + 1), t);
			}
			vlen = strlen(v);
			t = end + 1;
		} else {
			v = t;
			vlen = 1;
			t++;
		}
		if (o + vlen + 1 > cap)
			return aw_fail(err, AW_E_KEYS_COMPONENT, "key too long");
		memcpy(out + o, v, vlen);
		o += vlen;
	}
	if (vi != nvalues)
		return aw_fail(err, AW_E_KEYS_COMPONENT, "too many components for %s", p->name);
	out[o] = '\0';
	return AW_OK;
}

/* Matches key against template t; fills project when t has {project_id}. */
static int match(const char *t, const char *key, char *project, size_t cap)
{
	while (*t) {
		if (*t == '{') {
			const char *end = strchr(t, '}');
			const char *seg_end = strchr(key, ':');
			size_t n = seg_end ? (size_t)(seg_end - key) : strlen(key);
			if (n == 0)
				return 0;
			if (!strncmp(t, "{project_id}", 12)) {
				if (n >= cap)
					return 0;
				memcpy(project, key, n);
				project[n] = '\0';
				if (!aw_ident_project_ok(project))
					return 0;
			}
			key += n;
			t = end + 1;
		} else {
			if (*t != *key)
				return 0;
			t++;
			key++;
		}
	}
	return *key == '\0';
}

const aw_key_pattern *aw_keys_classify(const char *key, int *modern, char *project, size_t cap)
{
	/* literal templates first, so "telegram:polling:leader" is not a user key */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < NREG; i++) {
			const aw_key_pattern *p = &registry[i];
			int literal = !strchr(p->legacy, '{');
			if ((pass == 0) != literal)
				continue;
			project[0] = '\0';
			if (match(p->modern, key, project, cap)) {
				*modern = 1;
				return p;
			}
			if (match(p->legacy, key, project, cap)) {
				*modern = 0;
				return p;
			}
		}
	}
	return NULL;
}

/* ---- ADR-113 channels */

aw_err aw_keys_invalidate_channel(const char *project, char *out, size_t cap)
{
	if (!project_ok(project))
		return AW_E_TENANT_SLUG;
	int n = snprintf(out, cap, INVALIDATE_PREFIX "%s", project);
	return n > 0 && (size_t)n < cap ? AW_OK : AW_E_INTERNAL;
}

int aw_keys_invalidate_project(const char *channel, char *project, size_t cap)
{
	size_t n = strlen(INVALIDATE_PREFIX);
	if (!channel || strncmp(channel, INVALIDATE_PREFIX, n) != 0 || !project_ok(channel + n))
		return -1;
	return aw_str_copy(project, cap, channel + n);
}
