// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

int pxfer_err_set(struct pxfer_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -code;
}

const char *pxfer_err_msg(const struct pxfer_err *e)
{
	if (!e)
		return "";
	if (e->msg[0])
		return e->msg;
	return e->code ? strerror(e->code) : "";
}
