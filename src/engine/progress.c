// SPDX-License-Identifier: MIT
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/container_of.h"
#include "core/log.h"
#include "core/sys.h"
#include "engine/progress.h"

/* the line shown, if any: cleared by any thread of the call that prints */
static void progress_clear(struct pxfer_log_clear *c)
{
	static const char clear[] = "\r\033[K";

	struct pxfer_progress *p = container_of(c, struct pxfer_progress, clear);

	/* whoever takes the line off the terminal writes the clearing */
	if (atomic_exchange(&p->drawn, 0)) {
		if (write(STDERR_FILENO, clear, sizeof(clear) - 1) < 0) {
			/* the terminal went away */
		}
	}
}

void pxfer_progress_init(struct pxfer_progress *p, int enabled)
{
	memset(p, 0, sizeof(*p));
	p->enabled = enabled;
	p->start = p->last = pxfer_now();
	p->clear.fn = progress_clear;
	p->log = pxfer_log_current();
	if (enabled)
		pxfer_log_set_progress_clear(p->log, &p->clear);
}

static void fmt_eta(char *buf, size_t len, double secs)
{
	unsigned long s = secs < 0 ? 0 : (unsigned long)secs;

	if (s >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%lu:%02lu", s / 60, s % 60);
}

void pxfer_progress_draw(struct pxfer_progress *p, uint64_t bytes,
			 uint64_t total, uint64_t there, uint64_t files,
			 uint64_t files_total, int more, int final)
{
	char line[260], b[32], t[32], r[32], h[32], eta[32] = "--:--", extra[64] = "";
	char check[80] = "", cd[32], ct[32];
	double now = pxfer_now(), dt = now - p->last;
	int n;

	if (!p->enabled || (!final && dt < 0.2))
		return;
	if (dt > 0) {
		double inst = (bytes - p->last_bytes) / dt;

		p->rate = p->rate ? 0.7 * p->rate + 0.3 * inst : inst;
	}
	if (final && now > p->start)
		p->rate = bytes / (now - p->start);
	p->last = now;
	p->last_bytes = bytes;
	/* what the receiver has already is not to be sent */
	total = total > there ? total - there : 0;
	if (!more && p->rate > 0 && total >= bytes)
		fmt_eta(eta, sizeof(eta), (total - bytes) / p->rate);
	if (there)
		snprintf(extra, sizeof(extra), "  (%s there already)",
			 pxfer_human(h, sizeof(h), there));
	if (p->check_total)
		snprintf(check, sizeof(check), "  checking %s of %s",
			 pxfer_human(cd, sizeof(cd), p->check_done),
			 pxfer_human(ct, sizeof(ct), p->check_total));
	n = snprintf(line, sizeof(line),
		     "\r\033[K%s / %s%s  %s/s  ETA %s  files %llu/%llu%s%s%s",
		     pxfer_human(b, sizeof(b), bytes),
		     pxfer_human(t, sizeof(t), total), more ? "+" : "",
		     pxfer_human(r, sizeof(r), p->rate), eta,
		     (unsigned long long)files, (unsigned long long)files_total,
		     more ? "+" : "", extra, check);
	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	if (write(STDERR_FILENO, line, n) < 0)
		return;
	atomic_store(&p->drawn, 1);
}

void pxfer_progress_end(struct pxfer_progress *p)
{
	if (!p->enabled)
		return;
	progress_clear(&p->clear);
	pxfer_log_set_progress_clear(p->log, NULL);
}
