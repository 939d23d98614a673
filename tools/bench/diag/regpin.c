// SPDX-License-Identifier: MIT
/*
 * regpin FILE - can a file's page cache be registered as a memory region?
 * Tries ibv_reg_mr on 4 MiB of FILE mapped shared and private, read-only,
 * with access flags 0 and IBV_ACCESS_LOCAL_WRITE, and mapped read-write
 * shared (FILE opened for writing). Prints the result of each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define LEN (4u << 20)

static void try(struct ibv_pd *pd, int fd, int prot, int flags, int access,
		const char *what)
{
	void *m = mmap(NULL, LEN, prot, flags, fd, 0);
	struct ibv_mr *mr;

	if (m == MAP_FAILED) {
		printf("%-44s mmap: %s\n", what, strerror(errno));
		return;
	}
	mr = ibv_reg_mr(pd, m, LEN, access);
	printf("%-44s %s\n", what, mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	munmap(m, LEN);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int fd, rw;

	if (argc != 2) {
		fprintf(stderr, "usage: regpin FILE (at least 4 MiB)\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	list = ibv_get_device_list(NULL);
	if (fd < 0 || !list || !list[0]) {
		fprintf(stderr, "regpin: no file or no RDMA device\n");
		return 2;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		fprintf(stderr, "regpin: cannot open %s\n", ibv_get_device_name(list[0]));
		return 2;
	}
	try(pd, fd, PROT_READ, MAP_SHARED, 0, "shared, read-only, access 0:");
	try(pd, fd, PROT_READ, MAP_SHARED | MAP_POPULATE, 0,
	    "shared, read-only, populated, access 0:");
	try(pd, fd, PROT_READ, MAP_SHARED, IBV_ACCESS_LOCAL_WRITE,
	    "shared, read-only, local write:");
	try(pd, fd, PROT_READ, MAP_PRIVATE, 0, "private, read-only, access 0:");
	rw = open(argv[1], O_RDWR);
	if (rw >= 0)
		try(pd, rw, PROT_READ | PROT_WRITE, MAP_SHARED, 0,
		    "shared, read-write (file opened O_RDWR), access 0:");
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
