/*
 * cputime.c - runs a command with stdin from a file and stdout to /dev/null
 * and prints its wall time and CPU time (user + system, from wait4), in
 * seconds: on a shared machine the CPU time is the figure the neighbours move
 * least.
 *   bench_cputime IN CMD [ARG ...]
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_cputime IN CMD [ARG ...]\n");
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int in = open(argv[1], O_RDONLY), out = open("/dev/null", O_WRONLY);
		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0)
			_exit(127);
		execv(argv[2], argv + 2);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("%.6f %.6f\n", wall, cpu);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
