/* SPDX-License-Identifier: MIT */
/*
 * escape_test: pxfer_escape and pxfer_quote (src/core/escape.c), the
 * escaping of text from peers and file names before it is printed.
 *
 * Each class of byte and character against its expected form: kept
 * (printable ASCII, valid UTF-8 of every length), named (\\ \n \r \t \'),
 * \xHH (C0, DEL, NUL, every kind of invalid UTF-8, C1 and the controls
 * that change how a line is shown); then every single byte, which must
 * come out printable and without a raw control; then cutting: exact fit,
 * one byte short, never inside an escape or a UTF-8 sequence, buffers
 * too small for any of the text, or even for "..."; and a peer's reason,
 * its text or else its code.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/escape.h"
#include "test.h"

static void expect_escape(const char *src, size_t n, const char *want,
			  const char *what)
{
	char out[PXFER_ESCAPE_LEN(64)];

	pxfer_escape(out, sizeof(out), src, n);
	T_EXPECT(!strcmp(out, want), "%s: got \"%s\", want \"%s\"", what, out,
		 want);
}

static void expect_quote(const char *src, size_t n, size_t len,
			 const char *want, const char *what)
{
	char out[PXFER_ESCAPE_LEN(64)];

	T_EXPECT(len <= sizeof(out), "%s: room", what);
	pxfer_quote(out, len, src, n);
	T_EXPECT(!strcmp(out, want), "%s: got \"%s\", want \"%s\"", what, out,
		 want);
}

#define E(src, want, what) expect_escape(src, sizeof(src) - 1, want, what)

static void test_classes(void)
{
	E("plain name.txt", "plain name.txt", "printable ASCII");
	E("", "", "empty");
	E("a\\b", "a\\\\b", "backslash");
	E("line\nforged\r", "line\\nforged\\r", "newline and CR");
	E("a\tb", "a\\tb", "tab");
	E("\x1b]0;title\x07\x1b[2J", "\\x1b]0;title\\x07\\x1b[2J",
	  "ESC sequences and BEL");
	E("\x7f", "\\x7f", "DEL");
	E("a\0b", "a\\x00b", "NUL");
	E("it's", "it's", "a quote outside pxfer_quote");
	E("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80",
	  "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80",
	  "UTF-8 of 2, 3 and 4 bytes");
	E("\xc3", "\\xc3", "a truncated sequence");
	E("\xc3x", "\\xc3x", "a lead byte without its continuation");
	E("\xa9", "\\xa9", "a stray continuation byte");
	E("\xc0\xaf", "\\xc0\\xaf", "an overlong '/'");
	E("\xe0\x80\xaf", "\\xe0\\x80\\xaf", "an overlong 3-byte '/'");
	E("\xed\xa0\x80", "\\xed\\xa0\\x80", "a surrogate");
	E("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "beyond U+10FFFF");
	E("\xff\xfe", "\\xff\\xfe", "bytes never in UTF-8");
	E("\xc2\x9b" "2J", "\\xc2\\x9b" "2J", "C1 CSI in UTF-8");
	E("\xc2\x85", "\\xc2\\x85", "C1 NEL in UTF-8");
	E("\xc2\xa0", "\xc2\xa0", "U+00A0, just past C1, is kept");
	E("\xe2\x80\xa8", "\\xe2\\x80\\xa8", "line separator");
	E("\xe2\x80\xa9", "\\xe2\\x80\\xa9", "paragraph separator");
	E("txt.\xe2\x80\xae" "exe", "txt.\\xe2\\x80\\xae" "exe",
	  "right-to-left override");
	E("\xe2\x81\xa6", "\\xe2\\x81\\xa6", "left-to-right isolate");
	E("\xe2\x80\x8f", "\\xe2\\x80\\x8f", "right-to-left mark");
	E("\xd8\x9c", "\\xd8\\x9c", "Arabic letter mark");
	E("\xe2\x80\x94", "\xe2\x80\x94", "an em dash is kept");

	expect_quote("it's", 4, 64, "'it\\'s'", "a quote inside pxfer_quote");
	expect_quote("a\nb", 3, 64, "'a\\nb'", "pxfer_quote escapes too");
	expect_quote("", 0, 64, "''", "pxfer_quote of nothing");
}

/* every byte alone: printable, no raw control, and its escape if any */
static void test_each_byte(void)
{
	char out[PXFER_ESCAPE_LEN(1)], in[1];

	for (int b = 0; b < 256; b++) {
		in[0] = (char)b;
		pxfer_escape(out, sizeof(out), in, 1);
		for (const char *p = out; *p; p++)
			T_EXPECT((unsigned char)*p >= 0x20 &&
					 (unsigned char)*p != 0x7f,
				 "byte 0x%02x: a control in \"%s\"", b, out);
		if (b >= 0x20 && b < 0x7f && b != '\\')
			T_EXPECT(out[0] == b && !out[1],
				 "byte 0x%02x kept, got \"%s\"", b, out);
		else
			T_EXPECT(out[0] == '\\' && strlen(out) >= 2,
				 "byte 0x%02x escaped, got \"%s\"", b, out);
	}
}

static void test_cut(void)
{
	const char *abc = "abcdefghijklmnop";
	char out[64];

	/* "'abcdefghijklmnop'" is 18 characters and the NUL */
	expect_quote(abc, 16, 19, "'abcdefghijklmnop'", "an exact fit");
	expect_quote(abc, 16, 18, "'abcdefghijkl...'", "one byte short");
	expect_quote(abc, 16, 10, "'abcd...'", "a short buffer");
	expect_quote(abc, 16, 6, "'...'", "room for the quotes and ... only");
	expect_quote(abc, 16, 5, "", "no room for '...'");
	expect_quote(abc, 16, 1, "", "room for the NUL only");

	pxfer_escape(out, 8, "ab\x1b" "cdef", 7);
	T_EXPECT(!strcmp(out, "ab..."), "not inside an escape: \"%s\"", out);
	pxfer_escape(out, 9, "abc\xe2\x9c\x93xyz", 9);
	T_EXPECT(!strcmp(out, "abc..."), "not inside UTF-8: \"%s\"", out);
	pxfer_escape(out, 3, "abcdef", 6);
	T_EXPECT(!strcmp(out, ""), "a 3-byte buffer: \"%s\"", out);
	pxfer_escape(out, 4, "abcdef", 6);
	T_EXPECT(!strcmp(out, "..."), "a 4-byte buffer: \"%s\"", out);
	pxfer_escape(out, 5, "abcdef", 6);
	T_EXPECT(!strcmp(out, "a..."), "a 5-byte buffer: \"%s\"", out);

	/* the room PXFER_ESCAPE_LEN gives is never too little */
	memset(out, 0x1b, 15);
	{
		char big[PXFER_ESCAPE_LEN(15)];

		pxfer_quote(big, sizeof(big), out, 15);
		T_EXPECT(strlen(big) == 4 * 15 + 2 && !strstr(big, "..."),
			 "15 ESC in PXFER_ESCAPE_LEN(15): \"%s\"", big);
	}
	/* nothing is written past len */
	memset(out, 'Z', sizeof(out));
	pxfer_escape(out, 7, "abcdefghij", 10);
	T_EXPECT(!strcmp(out, "abc...") && out[7] == 'Z',
		 "no byte past len: \"%s\"", out);
}

static void test_reason(void)
{
	char out[256];

	pxfer_escape_reason(out, sizeof(out), "bad\x1b[2J", 7, EPERM);
	T_EXPECT(!strcmp(out, "bad\\x1b[2J"), "a reason given: \"%s\"", out);
	pxfer_escape_reason(out, sizeof(out), "", 0, ENOSPC);
	T_EXPECT(!strcmp(out, strerror(ENOSPC)), "none given: \"%s\"", out);
	pxfer_escape_reason(out, sizeof(out), "", 0, 1234567);
	T_EXPECT(strlen(out) > 0, "an unknown code: \"%s\"", out);
}

static void expect_json(const char *src, size_t n, const char *want,
			const char *what)
{
	char out[PXFER_JSON_ESCAPE_LEN(64)];

	pxfer_json_escape(out, sizeof(out), src, n);
	T_EXPECT(!strcmp(out, want), "json, %s: got \"%s\", want \"%s\"", what,
		 out, want);
}

#define J(src, want, what) expect_json(src, sizeof(src) - 1, want, what)

/* --json: UTF-8 arrives as the same characters, not one escape a byte */
static void test_json(void)
{
	char out[PXFER_JSON_ESCAPE_LEN(1)];

	J("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80",
	  "UTF-8 kept");
	J("say \"hi\" a\\b", "say \\\"hi\\\" a\\\\b", "quote and backslash");
	J("a\nb\tc\rd", "a\\nb\\tc\\rd", "named controls");
	J("\x1b[2J\x7f", "\\u001b[2J\\u007f", "ESC and DEL as \\u00XX");
	J("a\0b", "a\\u0000b", "NUL");
	J("\xc2\x85 \xe2\x80\xa8 \xe2\x80\xae", "\\u0085 \\u2028 \\u202e",
	  "C1, LS and bidi controls named as characters");
	J("x\xffy\xc3", "x\\\\xffy\\\\xc3", "not UTF-8: the text \\xHH");
	J("it's", "it's", "an apostrophe is kept");
	/* every byte: nothing below 0x20 comes out raw */
	for (unsigned int c = 0; c < 256; c++) {
		char in = (char)c;

		pxfer_json_escape(out, sizeof(out), &in, 1);
		for (const char *p = out; *p; p++)
			T_EXPECT((unsigned char)*p >= 0x20 && *p != 0x7f,
				 "json: byte 0x%02x gives a raw control", c);
	}
}

int main(void)
{
	test_classes();
	test_each_byte();
	test_cut();
	test_reason();
	test_json();
	return t_result();
}
