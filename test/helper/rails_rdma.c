// SPDX-License-Identifier: MIT
/*
 * rails_rdma - print what the rdma transport says of this host's rails.
 *
 *	rails_rdma local		every active port's rail (rails_local)
 *	rails_rdma query ADDR...	the rail each address is (rail_query)
 *	rails_rdma sources DEVICES	pxfer_rdma_sources("rxe1,rxe3:1")
 *
 * One line per rail: "rail ADDR/PREFIX dev DEV port N numa N up N"; for
 * an address no GID holds, "none ADDR". Used by the RDMA suite
 * (test/rdma/cases.sh, two-devices and port-down).
 *
 * Exit status: 0; 1 if a call failed (its error printed); 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transport/rdma/rdma.h"

static void print_rail(const struct pxfer_rail_addr *ra)
{
	printf("rail %s/%u dev %s port %u numa %d up %d\n", ra->addr,
	       ra->prefix, ra->dev, ra->port, ra->numa_node, ra->up);
}

int main(int argc, char **argv)
{
	struct pxfer_rail_addr rails[PXFER_RAILS_MAX];
	struct pxfer_err err = { 0 };
	int n;

	if (argc >= 2 && !strcmp(argv[1], "local") && argc == 2) {
		n = pxfer_rdma_ops.rails_local(rails, PXFER_RAILS_MAX);
		if (n < 0) {
			fprintf(stderr, "rails_rdma: rails_local: %s\n", strerror(-n));
			return 1;
		}
		for (int i = 0; i < n; i++)
			print_rail(&rails[i]);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "query")) {
		for (int i = 2; i < argc; i++) {
			struct pxfer_rail_addr ra = { 0 };

			snprintf(ra.addr, sizeof(ra.addr), "%s", argv[i]);
			n = pxfer_rdma_ops.rail_query(&ra);
			if (n == -ENOENT) {
				printf("none %s\n", argv[i]);
			} else if (n) {
				fprintf(stderr, "rails_rdma: rail_query %s: %s\n",
					argv[i], strerror(-n));
				return 1;
			} else {
				print_rail(&ra);
			}
		}
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "sources")) {
		n = pxfer_rdma_sources(argv[2], rails, PXFER_RAILS_MAX, &err);
		if (n < 0) {
			fprintf(stderr, "rails_rdma: %s: %s\n", strerror(-n),
				pxfer_err_msg(&err));
			return 1;
		}
		for (int i = 0; i < n; i++)
			print_rail(&rails[i]);
		printf("# %s\n", pxfer_err_msg(&err));
		return 0;
	}
	fprintf(stderr, "usage: rails_rdma local | query ADDR... | sources DEV[:PORT][,...]\n");
	return 2;
}
