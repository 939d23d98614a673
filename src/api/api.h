/* SPDX-License-Identifier: MIT */
/*
 * What src/api/ offers the pxfer command beyond the public header
 * (include/pxfer/pxfer.h): not exported by libpxfer.so; the command links
 * the library statically.
 */
#ifndef PXFER_API_API_H
#define PXFER_API_API_H

#include "pxfer/pxfer.h"
#include "recv/metrics.h"

/*
 * pxfer_recv_metered - pxfer_recv, counting into @m (set up with
 * pxfer_recv_metrics_init) as it serves.
 */
int pxfer_recv_metered(const struct pxfer_recv_opts *o,
		       struct pxfer_recv_metrics *m);

#endif
