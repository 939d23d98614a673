/* SPDX-License-Identifier: MIT */
/*
 * Text that pxfer did not write itself (a peer's error text, a path from
 * the wire, a local file name) made safe for a terminal or a log before it
 * is printed, as OpenSSH and rsync do: a peer cannot set the terminal's
 * title, clear its screen or forge a line of the log. What is escaped:
 *
 *	\		\\
 *	newline, CR, tab	\n  \r  \t
 *	other C0 controls, DEL	\xHH (\x1b for ESC, \x00 for NUL)
 *	a byte that is not part of valid UTF-8	\xHH
 *	C1 controls (U+0080..U+009F), the line and paragraph separators
 *	(U+2028, U+2029) and the bidirectional controls (U+061C, U+200E,
 *	U+200F, U+202A..U+202E, U+2066..U+2069), which change how a line
 *	is shown	each of their bytes as \xHH
 *
 * Everything else, printable ASCII and valid multibyte UTF-8, is kept.
 * pxfer_quote also puts the text in single quotes and escapes a quote in
 * it as \', so that a name in a message is unambiguous: 'it\'s'.
 *
 * Output that does not fit is cut between two characters (never inside
 * an escape or a UTF-8 sequence) and ends in "..." (inside the quotes).
 */
#ifndef PXFER_ESCAPE_H
#define PXFER_ESCAPE_H

#include <stddef.h>
#include <string.h>

/* the room @n bytes of input need, quotes and NUL included, to never be cut */
#define PXFER_ESCAPE_LEN(n)	(4 * (size_t)(n) + 3)
/* the room pxfer_json_escape needs for @n bytes, NUL included */
#define PXFER_JSON_ESCAPE_LEN(n)	(6 * (size_t)(n) + 1)
/* a name in a message: longer ones are cut (the message would be anyway) */
#define PXFER_QUOTE_MAX		512

/*
 * pxfer_escape - @n bytes of @src (NUL bytes included) escaped into @dst,
 * @len bytes with the NUL that always ends it (@len > 0). What does not
 * fit is cut; a buffer that cannot hold "..." (4 bytes, 6 with quotes)
 * then holds "". Returns @dst.
 */
char *pxfer_escape(char *dst, size_t len, const char *src, size_t n);

/* pxfer_quote - as pxfer_escape, between single quotes, ' escaped */
char *pxfer_quote(char *dst, size_t len, const char *src, size_t n);

/* pxfer_quote_str - pxfer_quote of the C string @s */
static inline char *pxfer_quote_str(char *dst, size_t len, const char *s)
{
	return pxfer_quote(dst, len, s, strlen(s));
}

/*
 * pxfer_json_escape - @n bytes of @src as the inside of a JSON string
 * (no quotes around it), cut as pxfer_escape cuts. Valid UTF-8 is kept
 * as it is, the characters above that change how a line is shown as
 * \uXXXX, '"' and '\\' as \" and \\, control characters as \n, \r, \t
 * or \u00XX; a byte that is not part of valid UTF-8 as the text \xHH (its
 * backslash escaped: \\xHH), as the log shows it. Returns @dst.
 */
char *pxfer_json_escape(char *dst, size_t len, const char *src, size_t n);

/*
 * pxfer_escape_reason - a peer's reason for an error: its @n bytes of
 * @text escaped, or when it sent none, strerror(@code). Returns @dst.
 */
char *pxfer_escape_reason(char *dst, size_t len, const char *text, size_t n,
			  int code);

#endif
