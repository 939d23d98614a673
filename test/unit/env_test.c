/* SPDX-License-Identifier: MIT */
/*
 * env_test: pxfer_env_uint (src/core/sys.c), how the tuning variables
 * (PXFER_RDMA_SPIN, PXFER_RDMA_CQ_MIN) are read: a whole number in its
 * range, or refused whole (atoi took "12x" as 12 and "x" as 0).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/sys.h"
#include "test.h"

static void expect(const char *v, int want_ret, unsigned int want_val)
{
	unsigned int val = 7;
	int ret;

	if (v)
		setenv("PXFER_TEST_UINT", v, 1);
	else
		unsetenv("PXFER_TEST_UINT");
	ret = pxfer_env_uint("PXFER_TEST_UINT", 1, 4096, &val);
	T_EXPECT(ret == want_ret, "'%s': returned %d, want %d", v ? v : "(unset)",
		 ret, want_ret);
	T_EXPECT(val == want_val, "'%s': value %u, want %u", v ? v : "(unset)",
		 val, want_val);
}

int main(void)
{
	expect(NULL, 0, 7);
	expect("", 0, 7);
	expect("1", 1, 1);
	expect("4096", 1, 4096);
	expect("2000", 1, 2000);
	expect("0", -EINVAL, 7);		/* below the range */
	expect("4097", -EINVAL, 7);		/* above it */
	expect("12x", -EINVAL, 7);
	expect("x", -EINVAL, 7);
	expect(" 5", -EINVAL, 7);
	expect("-1", -EINVAL, 7);
	expect("+5", -EINVAL, 7);
	expect("99999999999999999999", -EINVAL, 7);
	return t_result();
}
