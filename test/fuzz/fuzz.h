/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets share. A target is one file, test/fuzz/NAME.c,
 * that defines LLVMFuzzerTestOneInput around one decoder a peer's bytes
 * reach, and checks an oracle on what the decoder accepts; its seeds live
 * in test/fuzz/corpus/NAME/. The same file links with libFuzzer for
 * `make fuzz` and with driver.c for the suite's corpus replay.
 */
#ifndef PXFER_FUZZ_H
#define PXFER_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the key the sealed target reads with, and its seeds are sealed with */
#define FUZZ_KEY { 0x70, 0x78, 0x66, 0x72, 0x20, 0x66, 0x75, 0x7a, 0x7a }

/*
 * An oracle that does not hold is a finding: say which one and abort, so
 * that libFuzzer keeps the input and the replay fails.
 */
#define FUZZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: oracle failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		abort();						\
	}								\
} while (0)

#endif
