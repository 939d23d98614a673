// SPDX-License-Identifier: MIT
/*
 * pxfer doctor's report, line by line: a section's title, "ok: ...",
 * "problem: ..." or "note: ..." (counted), "  fix: ...". The command
 * (cmd_doctor.c) and its RDMA sections (doctor_rdma.c) both write
 * through these; they call nothing back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/doctor.h"

void doctor_section(const char *title)
{
	printf("\n%s\n", title);
}

__attribute__((format(printf, 3, 0)))
static void say(struct doctor *d, const char *tag, const char *fmt, va_list ap)
{
	if (!strcmp(tag, "problem"))
		d->problems++;
	else if (!strcmp(tag, "note"))
		d->notes++;
	printf("%s: ", tag);
	vprintf(fmt, ap);
	putchar('\n');
}

void doctor_ok(struct doctor *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(d, "ok", fmt, ap);
	va_end(ap);
}

void doctor_finding(struct doctor *d, int serious, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(d, serious ? "problem" : "note", fmt, ap);
	va_end(ap);
}

void doctor_fix(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("  fix: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}
