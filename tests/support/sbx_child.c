/*
 * sbx_child.c - a stdio MCP server for the sandbox tests: its tools report
 * what it can see and do from inside its box. read {path} (the first bytes,
 * or the error), ls {path} (the names), connect {port} (to 127.0.0.1),
 * id (uid, gid, pid, hostname), forkbomb (forks until the kernel refuses;
 * every child does the same, then waits).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void err_text(char *out, size_t n, int en)
{
	snprintf(out, n, "err:%s", strerror(en));
}

static void tool(const char *name, json_t *args, char *out, size_t n)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	if (!strcmp(name, "read") && path) {
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			return err_text(out, n, errno);
		char b[200];
		ssize_t r = read(fd, b, sizeof b - 1);
		int en = errno;
		close(fd);
		if (r < 0)
			return err_text(out, n, en);
		b[r] = 0;
		for (ssize_t i = 0; i < r; i++)
			if (b[i] == 0)
				b[i] = ' ';
		snprintf(out, n, "ok:%s", b);
	} else if (!strcmp(name, "ls") && path) {
		DIR *d = opendir(path);
		if (!d)
			return err_text(out, n, errno);
		struct dirent *e;
		size_t at = 0;
		out[0] = 0;
		while ((e = readdir(d)) && at + 260 < n)
			if (e->d_name[0] != '.')
				at += (size_t)snprintf(out + at, n - at, "%s ", e->d_name);
		closedir(d);
	} else if (!strcmp(name, "connect")) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)json_integer_value(
						json_object_get(args, "port")))};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			return err_text(out, n, errno);
		int rc = connect(s, (struct sockaddr *)&a, sizeof a);
		int en = errno;
		close(s);
		if (rc)
			return err_text(out, n, en);
		snprintf(out, n, "ok");
	} else if (!strcmp(name, "id")) {
		char host[64] = "";
		gethostname(host, sizeof host);
		snprintf(out, n, "uid=%d gid=%d pid=%d ppid=%d host=%s", (int)getuid(),
			 (int)getgid(), (int)getpid(), (int)getppid(), host);
	} else if (!strcmp(name, "forkbomb")) {
		int forks = 0, en = 0;
		for (;;) {
			pid_t p = fork();
			if (p < 0) {
				en = errno;
				break;
			}
			if (p == 0) {
				for (;;)
					if (fork() < 0)
						pause();
			}
			forks++;
		}
		snprintf(out, n, "forks=%d err=%s", forks, strerror(en));
	} else {
		snprintf(out, n, "unknown tool");
	}
}

int main(void)
{
	char line[65536];
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *names[] = {"read", "ls", "connect", "id", "forkbomb"};
	while (fgets(line, sizeof line, stdin)) {
		json_t *m = json_loads(line, 0, NULL), *id = json_object_get(m, "id");
		const char *method = json_string_value(json_object_get(m, "method"));
		json_t *res = NULL;
		if (!method || !id) {
			json_decref(m);
			continue;
		}
		json_t *params = json_object_get(m, "params");
		if (!strcmp(method, "initialize")) {
			json_t *v = json_object_get(params, "protocolVersion");
			res = json_pack("{s:o,s:{s:{}},s:{s:s,s:s}}", "protocolVersion",
					v ? json_incref(v) : json_string("2025-11-25"),
					"capabilities", "tools", "serverInfo", "name", "sbx_child",
					"version", "1");
		} else if (!strcmp(method, "tools/list")) {
			json_t *tools = json_array();
			for (size_t i = 0; i < sizeof names / sizeof *names; i++)
				json_array_append_new(tools,
						      json_pack("{s:s,s:s,s:{s:s}}", "name",
								names[i], "description", names[i],
								"inputSchema", "type", "object"));
			res = json_pack("{s:o}", "tools", tools);
		} else if (!strcmp(method, "tools/call")) {
			char out[8192];
			tool(json_string_value(json_object_get(params, "name")),
			     json_object_get(params, "arguments"), out, sizeof out);
			res = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", out);
		} else {
			res = json_object();
		}
		json_t *r = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", res);
		char *s = json_dumps(r, JSON_COMPACT);
		printf("%s\n", s);
		free(s);
		json_decref(r);
		json_decref(m);
	}
	return 0;
}
