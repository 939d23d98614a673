/* SPDX-License-Identifier: MIT */
/*
 * pxfer doctor, in two parts: cmd_doctor.c has the command, the report's
 * lines and the host's limits (memlock, io_uring, open files);
 * doctor_rdma.c the RDMA devices and the way to HOST. Both judge what
 * they find and say what to do; neither changes anything.
 */
#ifndef PXFER_CLI_DOCTOR_H
#define PXFER_CLI_DOCTOR_H

#include "core/escape.h"
#include "core/netaddr.h"
#include "transport/rdma/rdma.h"

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
	int want_rdma;			/* --transport rdma, or implied */
	int tcp;			/* --transport tcp */
	const char *host;		/* HOST as given, or NULL */
	char hostp[PXFER_QUOTE_MAX];	/* ... escaped, for the report */
	char peer[PXFER_SOURCE_LEN];	/* HOST's address; "" unresolved */
	int peer_loopback;
	const char *bind;		/* --bind, or what --device implies */
	char bind_buf[64];
	int source_err;			/* what pxfer_rdma_source said of */
	char source_why[200];		/* --device and --gid-index */
	int bind_problem;		/* ... which send would refuse */
	struct pxfer_rdma_inventory inv;
	char device[64];		/* --device's first name, or "" */
	int sel_dev;			/* ... its device (or --gid-index's) */
	struct pxfer_rdma_route route;
	int route_err;			/* 0: rdma_cm resolved address and route */
	char route_why[200];
	int usable;			/* an active port routes to HOST */
	int rdma;			/* a transfer would use rdma, or fail
					 * for want of it */
	unsigned int problems, notes;
};

/*
 * The report's lines: a section's title; "ok: ..."; a finding, "problem:
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
 * HOST, and so whether a transfer would use rdma (d->usable, d->rdma)
 */
void doctor_survey(struct doctor *d);

/* the report's RDMA sections: devices, --device and --gid-index, the way
 * to HOST */
void doctor_devices(struct doctor *d);
void doctor_selection(struct doctor *d);
void doctor_route(struct doctor *d);

#endif
