/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pxfer_escape and pxfer_quote, which every text from a peer
 * (error texts, paths) passes before it is printed. The first input byte
 * chooses pxfer_quote (bit 0) and a buffer of PXFER_ESCAPE_LEN (bit 1);
 * otherwise the next two bytes give its size (1 to 4096); the rest is the
 * text. Oracle, from escape.h alone: the output ends within the buffer;
 * it holds no C0 control and no DEL, and is valid UTF-8 without a C1,
 * line or paragraph separator or bidirectional control; reading its
 * escapes back gives the text exactly, or, when it was cut, a prefix of
 * it followed by "..."; PXFER_ESCAPE_LEN is always room enough.
 */
#include <stdbool.h>
#include <string.h>

#include "core/escape.h"
#include "fuzz.h"

/* the code point of the valid UTF-8 sequence at @s, and its length */
static size_t utf8_next(const uint8_t *s, size_t n, uint32_t *cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	uint32_t v = len == 1 ? s[0] : s[0] & (0x3f >> (len - 1));

	FUZZ_CHECK(s[0] < 0x80 || (s[0] >= 0xc2 && s[0] <= 0xf4));
	FUZZ_CHECK(n >= len);
	for (size_t i = 1; i < len; i++) {
		FUZZ_CHECK((s[i] & 0xc0) == 0x80);
		v = v << 6 | (s[i] & 0x3f);
	}
	FUZZ_CHECK(len == 1 || v >= min[len]);
	FUZZ_CHECK(v <= 0x10ffff && !(v >= 0xd800 && v <= 0xdfff));
	*cp = v;
	return len;
}

static void check_printable(const uint8_t *s, size_t n)
{
	uint32_t cp;

	for (size_t i = 0, len; i < n; i += len) {
		len = utf8_next(s + i, n - i, &cp);
		FUZZ_CHECK(cp >= 0x20 && cp != 0x7f);
		FUZZ_CHECK(!(cp >= 0x80 && cp <= 0x9f));
		FUZZ_CHECK(cp != 0x061c && cp != 0x200e && cp != 0x200f);
		FUZZ_CHECK(!(cp >= 0x2028 && cp <= 0x202e));
		FUZZ_CHECK(!(cp >= 0x2066 && cp <= 0x2069));
	}
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	FUZZ_CHECK(c >= 'a' && c <= 'f');
	return c - 'a' + 10;
}

/* the bytes @s (@n long) stands for, into @out; their number */
static size_t unescape(const uint8_t *s, size_t n, bool quote, uint8_t *out)
{
	size_t i = 0, k = 0;

	while (i < n) {
		FUZZ_CHECK(!quote || s[i] != '\'');
		if (s[i] != '\\') {
			out[k++] = s[i++];
			continue;
		}
		FUZZ_CHECK(i + 1 < n);
		switch (s[i + 1]) {
		case '\\':
		case '\'':
			FUZZ_CHECK(quote || s[i + 1] == '\\');
			out[k++] = s[i + 1];
			break;
		case 'n':
			out[k++] = '\n';
			break;
		case 'r':
			out[k++] = '\r';
			break;
		case 't':
			out[k++] = '\t';
			break;
		default:
			FUZZ_CHECK(s[i + 1] == 'x' && i + 3 < n);
			out[k++] = hexval(s[i + 2]) << 4 | hexval(s[i + 3]);
			i += 2;
		}
		i += 2;
	}
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool quote, roomy;
	const uint8_t *text;
	size_t len, n, olen, body_len, k;
	uint8_t *back;
	char *out;

	if (size < 3)
		return 0;
	quote = data[0] & 1;
	roomy = data[0] & 2;
	text = data + 3;
	n = size - 3;
	len = ((size_t)data[1] << 8 | data[2]) % 4096 + 1;
	if (roomy)
		len = PXFER_ESCAPE_LEN(n);
	out = malloc(len);
	back = malloc(len);
	FUZZ_CHECK(out && back);
	(quote ? pxfer_quote : pxfer_escape)(out, len, (const char *)text, n);

	olen = strnlen(out, len);
	FUZZ_CHECK(olen < len);
	check_printable((const uint8_t *)out, olen);
	if (olen == 0) {
		/* no text, or no room even for "..." */
		FUZZ_CHECK((!quote && n == 0) || len < (quote ? 6u : 4u));
		goto out;
	}
	if (quote)
		FUZZ_CHECK(olen >= 2 && out[0] == '\'' && out[olen - 1] == '\'');
	body_len = olen - (quote ? 2 : 0);
	k = unescape((const uint8_t *)out + quote, body_len, quote, back);
	if (k == n && !memcmp(back, text, n))
		goto out;
	/* cut: a prefix of the text, then "..." */
	FUZZ_CHECK(!roomy);
	FUZZ_CHECK(body_len >= 3 && !memcmp(out + quote + body_len - 3, "...", 3));
	k = unescape((const uint8_t *)out + quote, body_len - 3, quote, back);
	FUZZ_CHECK(k < n && !memcmp(back, text, k));
out:
	free(out);
	free(back);
	return 0;
}
