// SPDX-License-Identifier: MIT
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/escape.h"

/* the longest escaped form of one character: three bytes as \xHH each */
#define UNIT_MAX	12

/*
 * The length of the valid UTF-8 sequence that starts @s (@n bytes left),
 * its code point in *@cp; 0 if there is none (a stray continuation byte,
 * a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
 */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t v, min;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2, v = s[0] & 0x1f, min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3, v = s[0] & 0x0f, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4, v = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* a code point that is valid text but changes how a line is shown */
static int layout_control(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) ||		/* C1 */
	       cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) ||	/* LS, PS, embeddings */
	       (cp >= 0x2066 && cp <= 0x2069);		/* isolates */
}

/* what the text is escaped for */
enum esc_mode { ESC_LOG, ESC_QUOTE, ESC_JSON };

/* the two-character escape of @c, or NULL */
static const char *named(unsigned char c, enum esc_mode mode)
{
	switch (c) {
	case '\\':
		return "\\\\";
	case '"':
		return mode == ESC_JSON ? "\\\"" : NULL;
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	case '\'':
		return mode == ESC_QUOTE ? "\\'" : NULL;
	default:
		return NULL;
	}
}

/*
 * The escaped form of the character that starts @s (@n > 0 bytes left)
 * into @out (UNIT_MAX bytes): its length, and in *@used how many bytes of
 * @s it stands for.
 */
static size_t unit(const unsigned char *s, size_t n, enum esc_mode mode,
		   char *out, size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	const char *e = named(s[0], mode);
	size_t len = 1, k = 0;
	uint32_t cp;

	*used = 1;
	if (e) {
		memcpy(out, e, 2);
		return 2;
	}
	if (s[0] >= 0x20 && s[0] < 0x7f) {
		out[0] = s[0];
		return 1;
	}
	if (s[0] >= 0x80) {
		len = utf8_seq(s, n, &cp);
		if (len && !layout_control(cp)) {
			memcpy(out, s, len);
			*used = len;
			return len;
		}
		/* JSON keeps the character: its escape names it (BMP) */
		if (len && mode == ESC_JSON) {
			*used = len;
			return (size_t)snprintf(out, UNIT_MAX, "\\u%04x", cp);
		}
		if (!len)
			len = 1;	/* not UTF-8: this byte alone */
	} else if (mode == ESC_JSON) {
		return (size_t)snprintf(out, UNIT_MAX, "\\u%04x", s[0]);
	}
	for (size_t i = 0; i < len; i++) {
		out[k++] = '\\';
		/* in JSON the text \xHH itself: its backslash escaped */
		if (mode == ESC_JSON)
			out[k++] = '\\';
		out[k++] = 'x';
		out[k++] = hex[s[i] >> 4];
		out[k++] = hex[s[i] & 15];
	}
	*used = len;
	return k;
}

static char *escape(char *dst, size_t len, const char *src, size_t n,
		    enum esc_mode mode)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t q = mode == ESC_QUOTE, total = 2 * q, pos = 0, end, used, k, i;
	char u[UNIT_MAX];
	int cut;

	if (!len)
		return dst;
	for (i = 0; i < n; i += used)
		total += unit(s + i, n - i, mode, u, &used);
	cut = total >= len;
	if (cut && len < 2 * q + 4) {
		dst[0] = '\0';		/* no room even for "..." */
		return dst;
	}
	/* the text ends before @end: room for "...", the quote and the NUL */
	end = len - 1 - q - (cut ? 3 : 0);
	if (q)
		dst[pos++] = '\'';
	for (i = 0; i < n; i += used) {
		k = unit(s + i, n - i, mode, u, &used);
		if (pos + k > end)
			break;
		memcpy(dst + pos, u, k);
		pos += k;
	}
	if (cut) {
		memcpy(dst + pos, "...", 3);
		pos += 3;
	}
	if (q)
		dst[pos++] = '\'';
	dst[pos] = '\0';
	return dst;
}

char *pxfer_escape(char *dst, size_t len, const char *src, size_t n)
{
	return escape(dst, len, src, n, ESC_LOG);
}

char *pxfer_quote(char *dst, size_t len, const char *src, size_t n)
{
	return escape(dst, len, src, n, ESC_QUOTE);
}

char *pxfer_json_escape(char *dst, size_t len, const char *src, size_t n)
{
	return escape(dst, len, src, n, ESC_JSON);
}

char *pxfer_escape_reason(char *dst, size_t len, const char *text, size_t n,
			  int code)
{
	if (!n) {
		snprintf(dst, len, "%s", strerror(code));
		return dst;
	}
	return pxfer_escape(dst, len, text, n);
}
