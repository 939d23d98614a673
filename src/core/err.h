/* SPDX-License-Identifier: MIT */
/*
 * The reason a call failed, in words, for the caller to print: what a
 * function that cannot fail the session (it has none, or runs beside it)
 * fills instead of printing. The function returns -errno and records the
 * message once, here; the caller adds what it was doing ("cannot use
 * rxe0: %s") and decides whether it is an error, a finding of doctor's
 * or a line of -v.
 *
 * A function may also leave a note on success (code 0): what it found,
 * for the caller's -v ("device rxe0 GID index 1 is 10.0.0.1 (RoCE v2)").
 */
#ifndef PXFER_ERR_H
#define PXFER_ERR_H

/* room for a message, as long as the longest the library writes (the
 * memlock limit and its remedies) */
#define PXFER_ERR_MSG	512

struct pxfer_err {
	int code;			/* errno (positive); 0: none, or a note */
	char msg[PXFER_ERR_MSG];	/* "": none recorded */
};

/* pxfer_err_clear - no failure and no message */
static inline void pxfer_err_clear(struct pxfer_err *e)
{
	if (e) {
		e->code = 0;
		e->msg[0] = '\0';
	}
}

/*
 * pxfer_err_set - record errno @code (0: a note on success) and its
 * message, formatted, into @e (NULL: nothing is recorded). A message that
 * does not fit is cut. Returns -@code, for "return pxfer_err_set(...)".
 */
__attribute__((format(printf, 3, 4)))
int pxfer_err_set(struct pxfer_err *e, int code, const char *fmt, ...);

/*
 * pxfer_err_msg - the message recorded, else strerror(code), else "":
 * never NULL
 */
const char *pxfer_err_msg(const struct pxfer_err *e);

#endif
