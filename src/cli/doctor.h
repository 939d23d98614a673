/* SPDX-License-Identifier: MIT */
/*
 * pxfer doctor, in three parts: cmd_doctor.c has the command and the
 * host's limits (memlock, io_uring, open files); doctor_rdma.c the RDMA
 * devices and the way to HOST; doctor_report.c the report's lines, which
 * both write through. Both judge what they find and say what to do;
 * neither changes anything. What they know of the transports they ask
 * through the ops tables' diagnostics (transport/diag.h).
 */
#ifndef PXFER_CLI_DOCTOR_H
#define PXFER_CLI_DOCTOR_H

#include "core/escape.h"
#include "core/netaddr.h"
#include "transport/diag.h"
#include "transport/registry.h"

/* the command line of pxfer doctor, as it is parsed */
struct doctor_args {
	const char *transport;
	const char *device;
	const char *bind;
	int gid_index;
};

/* what is known, and what was found */
struct doctor {
	const struct doctor_args *a;
	const struct pxfer_transport_ops *rdma_t;	/* the transports */
	const struct pxfer_transport_diag *rd;	/* ... rdma's diagnostics */
	const struct pxfer_transport_diag *ip;	/* ... tcp's: addresses */
	int want_rdma;			/* --transport rdma, or implied */
	int tcp;			/* --transport tcp */
	const char *host;		/* HOST as given, or NULL */
	char hostp[PXFER_QUOTE_MAX];	/* ... escaped, for the report */
	char peer[PXFER_SOURCE_LEN];	/* HOST's address; "" unresolved */
	int peer_loopback;
	int bind_problem;		/* --device, --gid-index or --bind as
					 * given, which send would refuse */
	struct pxfer_rdma_inventory inv;
	/* what the options select and where rdma_cm goes to reach HOST
	 * (sv.bind: --bind, or what --device implies) */
	struct pxfer_rdma_survey sv;
	int usable;			/* an active port routes to HOST */
	int rdma;			/* a transfer would use rdma, or fail
					 * for want of it */
	unsigned int problems, notes;
};

/*
 * The report's lines (doctor_report.c): a section's title; "ok: ..."; a finding, "problem:
 * ..." if @serious (it would stop a transfer), else "note: ..." (counted
 * in d->problems or d->notes); "  fix: ..." after a finding.
 */
void doctor_section(const char *title);
__attribute__((format(printf, 2, 3)))
void doctor_ok(struct doctor *d, const char *fmt, ...);
__attribute__((format(printf, 3, 4)))
void doctor_finding(struct doctor *d, int serious, const char *fmt, ...);
__attribute__((format(printf, 1, 2)))
void doctor_fix(const char *fmt, ...);

/*
 * doctor_survey - after d->inv is listed and HOST resolved: what
 * --device and --gid-index select and bind, where rdma_cm goes to reach
 * HOST (the transport's survey, into d->sv), and so whether a transfer
 * would use rdma (d->usable, d->rdma)
 */
void doctor_survey(struct doctor *d);

/* the report's RDMA sections: devices, --device and --gid-index, the way
 * to HOST */
void doctor_devices(struct doctor *d);
void doctor_selection(struct doctor *d);
void doctor_route(struct doctor *d);

#endif
