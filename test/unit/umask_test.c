/* SPDX-License-Identifier: MIT */
/*
 * umask_test: pxfer_umask_get (src/core/sys.c) reads the umask the
 * receiver applies to modes from the wire, and leaves it as it was.
 */
#include <sys/stat.h>

#include "core/sys.h"
#include "test.h"

int main(void)
{
	static const mode_t masks[] = { 022, 077, 0, 027, 0777, 002 };
	mode_t got, now;

	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		umask(masks[i]);
		got = pxfer_umask_get();
		now = umask(masks[i]);
		T_EXPECT(got == masks[i], "umask %03o read as %03o",
			 (unsigned int)masks[i], (unsigned int)got);
		T_EXPECT(now == masks[i], "umask %03o changed to %03o",
			 (unsigned int)masks[i], (unsigned int)now);
	}
	return t_result();
}
