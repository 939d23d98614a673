// SPDX-License-Identifier: MIT
/*
 * qp_cost - how long the first RDMA device takes to create and destroy an
 * RC QP (on a shared receive queue, as pxfer's data QPs) by the depth of
 * its send queue: 8 QPs each of 16, 24 and 2056 send work requests.
 */
#include <stdio.h>
#include <time.h>
#include <infiniband/verbs.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void)
{
	static const unsigned int depth[] = { 16, 24, 2056 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1024, .max_sge = 1 } };
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || !n) {
		fprintf(stderr, "qp_cost: no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 8192, NULL, NULL, 0) : NULL;
	srq = pd ? ibv_create_srq(pd, &sa) : NULL;
	if (!srq || !cq) {
		perror("qp_cost: device set-up");
		return 1;
	}
	for (unsigned int k = 0; k < sizeof(depth) / sizeof(depth[0]); k++) {
		struct ibv_qp *qp[8];
		double t0 = now(), t1;

		for (int i = 0; i < 8; i++) {
			struct ibv_qp_init_attr qa = {
				.send_cq = cq, .recv_cq = cq, .srq = srq,
				.qp_type = IBV_QPT_RC,
				.cap = { .max_send_wr = depth[k],
					 .max_send_sge = 1, .max_recv_sge = 1 },
			};

			qp[i] = ibv_create_qp(pd, &qa);
			if (!qp[i]) {
				perror("qp_cost: ibv_create_qp");
				return 1;
			}
		}
		t1 = now();
		for (int i = 0; i < 8; i++)
			ibv_destroy_qp(qp[i]);
		printf("%s: send queue of %4u: create %.2f ms, destroy %.2f ms per QP\n",
		       ibv_get_device_name(list[0]), depth[k],
		       (t1 - t0) * 1000 / 8, (now() - t1) * 1000 / 8);
	}
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
