// SPDX-License-Identifier: MIT
/*
 * A receiver's metrics in Prometheus' text format: names pxfer_recv_*,
 * counters ending in _total, bytes and seconds as base units, and label
 * values only from the fixed tables here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "recv/metrics.h"

static const char *const outcome_names[RECV_OUT_N] = {
	[RECV_OUT_COMPLETE] = "complete",
	[RECV_OUT_FAILED] = "failed",
	[RECV_OUT_REFUSED] = "refused",
	[RECV_OUT_BUSY] = "busy",
	[RECV_OUT_IDLE] = "idle",
	[RECV_OUT_INTEGRITY] = "integrity",
	[RECV_OUT_STOPPED] = "stopped",
};

static const char *const door_names[RECV_DOOR_N] = {
	[RECV_DOOR_TIMEOUT] = "timeout",
	[RECV_DOOR_PROTOCOL] = "protocol",
	[RECV_DOOR_THROTTLED] = "throttled",
	[RECV_DOOR_CROWDED] = "crowded",
	[RECV_DOOR_NO_SESSION] = "no_session",
};

static const char *const transport_names[RECV_TP_N] = {
	[RECV_TP_TCP] = "tcp",
	[RECV_TP_RDMA] = "rdma",
};

void pxfer_recv_metrics_init(struct pxfer_recv_metrics *m)
{
	memset(m, 0, sizeof(*m));
}

enum recv_transport recv_transport_of(const char *name)
{
	return name && !strcmp(name, "rdma") ? RECV_TP_RDMA : RECV_TP_TCP;
}

/* text being rendered: full once it would not fit */
struct out {
	char *buf;
	size_t size, len;
	int full;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->size - o->len) {
		o->full = 1;
		return;
	}
	o->len += n;
}

static uint64_t get(recv_counter *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void head(struct out *o, const char *name, const char *type,
		 const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(struct out *o, const char *name, const char *type,
		const char *help, uint64_t v)
{
	head(o, name, type, help);
	put(o, "%s %llu\n", name, (unsigned long long)v);
}

/* a metric with one label, its values from @names */
static void by(struct out *o, const char *name, const char *type,
	       const char *help, const char *label, const char *const *names,
	       recv_counter *v, unsigned int n)
{
	head(o, name, type, help);
	for (unsigned int i = 0; i < n; i++)
		put(o, "%s{%s=\"%s\"} %llu\n", name, label, names[i],
		    (unsigned long long)get(&v[i]));
}

int pxfer_recv_metrics_format(struct pxfer_recv_metrics *m, char *buf,
			      size_t size)
{
	struct out o = { .buf = buf, .size = size };
	struct pxfer_partials_use *u = &m->use;

	if (!size)
		return -ENOSPC;
	buf[0] = 0;
	head(&o, "pxfer_build_info", "gauge", "The receiver's version.");
	put(&o, "pxfer_build_info{version=\"%s\"} 1\n", PXFER_VERSION);
	one(&o, "pxfer_recv_start_time_seconds", "gauge",
	    "When the receiver started, in seconds since the epoch.",
	    get(&m->start_time));
	by(&o, "pxfer_recv_sessions_total", "counter",
	   "Senders' sessions by how they ended (busy and refused ones never started).",
	   "outcome", outcome_names, m->sessions, RECV_OUT_N);
	one(&o, "pxfer_recv_sessions_running", "gauge",
	    "Sessions running now.", get(&m->running));
	one(&o, "pxfer_recv_sessions_max", "gauge",
	    "Sessions that may run at once (--max-sessions).",
	    get(&m->max_sessions));
	by(&o, "pxfer_recv_bytes_total", "counter",
	   "Bytes of the files that arrived whole, counted as their session ends.",
	   "transport", transport_names, m->bytes, RECV_TP_N);
	by(&o, "pxfer_recv_files_total", "counter",
	   "Files that arrived whole, counted as their session ends.",
	   "transport", transport_names, m->files, RECV_TP_N);
	by(&o, "pxfer_recv_files_failed_total", "counter",
	   "Files that failed in sessions that went on.",
	   "transport", transport_names, m->files_failed, RECV_TP_N);
	one(&o, "pxfer_recv_auth_failures_total", "counter",
	    "Senders refused for a wrong secret.", get(&m->auth_failures));
	by(&o, "pxfer_recv_door_refusals_total", "counter",
	   "Connections dropped before any session, by reason.",
	   "reason", door_names, m->door, RECV_DOOR_N);
	one(&o, "pxfer_recv_partial_files", "gauge",
	    "Partial files kept for senders to resume.",
	    atomic_load_explicit(&u->count, memory_order_relaxed));
	one(&o, "pxfer_recv_partial_bytes", "gauge",
	    "The apparent size of the partial files kept, in bytes.",
	    atomic_load_explicit(&u->bytes, memory_order_relaxed));
	one(&o, "pxfer_recv_partial_max_files", "gauge",
	    "The cap on partial files (--partial-max; 0: none).",
	    get(&m->partial_max_files));
	one(&o, "pxfer_recv_partial_max_bytes", "gauge",
	    "The cap on their size (--partial-max-size; 0: none).",
	    get(&m->partial_max_bytes));
	head(&o, "pxfer_recv_rails", "gauge",
	     "Running sessions' data connections, carrying data (up) or lost (down).");
	put(&o, "pxfer_recv_rails{state=\"up\"} %llu\n",
	    (unsigned long long)get(&m->rails_up));
	put(&o, "pxfer_recv_rails{state=\"down\"} %llu\n",
	    (unsigned long long)get(&m->rails_down));
	one(&o, "pxfer_recv_rails_lost_total", "counter",
	    "Data connections lost while their session ran.", get(&m->rails_lost));
	one(&o, "pxfer_recv_ring_memory_bytes", "gauge",
	    "Ring memory held by running sessions, in bytes.", get(&m->ring_used));
	one(&o, "pxfer_recv_ring_memory_budget_bytes", "gauge",
	    "Ring memory all sessions may hold at once (--ring-mem), in bytes.",
	    get(&m->ring_budget));
	if (o.full)
		return -ENOSPC;
	return o.len;
}
