// SPDX-License-Identifier: MIT
/*
 * wire_sampler FILE INTERVAL_US - read a counter file (a netdev's
 * statistics/tx_bytes) every INTERVAL_US until SIGTERM, then print how long
 * the counter stood still between its first and its last change.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 2000000

static volatile sig_atomic_t stop;
static long long val[MAX_SAMPLES];
static double when[MAX_SAMPLES];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static long long read_counter(int fd)
{
	char b[64];
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return -1;
	b[n] = 0;
	return atoll(b);
}

int main(int argc, char **argv)
{
	double idle = 0, run = 0, longest = 0;
	int fd, n = 0, first = -1, last = -1, gaps = 0;
	struct timespec ts;
	long us;

	if (argc != 3) {
		fprintf(stderr, "usage: wire_sampler FILE INTERVAL_US\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	us = atol(argv[2]);
	if (fd < 0 || us <= 0) {
		perror(argv[1]);
		return 2;
	}
	signal(SIGTERM, on_term);
	while (!stop && n < MAX_SAMPLES) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		when[n] = ts.tv_sec + ts.tv_nsec / 1e9;
		val[n++] = read_counter(fd);
		usleep(us);
	}
	for (int i = 1; i < n; i++) {
		if (val[i] == val[i - 1])
			continue;
		if (first < 0)
			first = i - 1;
		last = i;
	}
	if (first < 0) {
		printf("no traffic\n");
		return 0;
	}
	/* a sample that moved less than 2 KiB counts as standing still */
	for (int i = first + 1; i <= last; i++) {
		double dt = when[i] - when[i - 1];

		if (val[i] - val[i - 1] < 2048) {
			idle += dt;
			run += dt;
			continue;
		}
		if (run > 0.02)
			gaps++;
		if (run > longest)
			longest = run;
		run = 0;
	}
	printf("%.3f s from first to last change, %.1f MiB; still %.3f s (%.0f%%), gaps over 20 ms: %d, longest %.0f ms\n",
	       when[last] - when[first], (val[last] - val[first]) / 1048576.0,
	       idle, 100 * idle / (when[last] - when[first]), gaps,
	       longest * 1e3);
	return 0;
}
