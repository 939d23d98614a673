// SPDX-License-Identifier: MIT
/*
 * gid_type_test: a GID's type as sysfs gives it
 * (/sys/class/infiniband/DEV/ports/N/gid_attrs/types/IDX), read by pxfer
 * doctor (src/transport/rdma/doctor.c).
 *  - "RoCE v2" is RoCE v2, on any port
 *  - "IB/RoCE v1", the kernel's name of type 0, is RoCE v1 on an Ethernet
 *    port and IB on an InfiniBand one
 *  - the newline sysfs ends it with, and trailing blanks, do not matter
 *  - anything else (empty, another case, a prefix, text after it) is
 *    unknown, never taken for RoCE v2
 *  - each type has its name
 */
#include <string.h>

#include "transport/rdma/doctor.h"
#include "test.h"

int main(void)
{
	static const struct {
		const char *text;
		int ethernet;
		enum pxfer_gid_type want;
	} cases[] = {
		{ "RoCE v2\n", 1, PXFER_GID_ROCE_V2 },
		{ "RoCE v2", 1, PXFER_GID_ROCE_V2 },
		{ "RoCE v2 \n", 0, PXFER_GID_ROCE_V2 },
		{ "IB/RoCE v1\n", 1, PXFER_GID_ROCE_V1 },
		{ "IB/RoCE v1", 0, PXFER_GID_IB },
		{ "IB/RoCE v1\t\n", 0, PXFER_GID_IB },
		{ "", 1, PXFER_GID_UNKNOWN },
		{ "\n", 1, PXFER_GID_UNKNOWN },
		{ "roce v2\n", 1, PXFER_GID_UNKNOWN },
		{ "RoCE v", 1, PXFER_GID_UNKNOWN },
		{ "RoCE v2x", 1, PXFER_GID_UNKNOWN },
		{ "RoCE v2\nRoCE v1", 1, PXFER_GID_UNKNOWN },
		{ " RoCE v2", 1, PXFER_GID_UNKNOWN },
		{ "IB/RoCE v1/RoCE v2", 1, PXFER_GID_UNKNOWN },
		{ "IB", 0, PXFER_GID_UNKNOWN },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum pxfer_gid_type got = pxfer_gid_type_parse(cases[i].text,
							       cases[i].ethernet);

		T_EXPECT(got == cases[i].want, "\"%s\" on %s: %s, not %s",
			 cases[i].text, cases[i].ethernet ? "Ethernet" : "InfiniBand",
			 pxfer_gid_type_name(got), pxfer_gid_type_name(cases[i].want));
	}
	T_EXPECT(!strcmp(pxfer_gid_type_name(PXFER_GID_ROCE_V2), "RoCE v2"), "v2");
	T_EXPECT(!strcmp(pxfer_gid_type_name(PXFER_GID_ROCE_V1), "RoCE v1"), "v1");
	T_EXPECT(!strcmp(pxfer_gid_type_name(PXFER_GID_IB), "IB"), "IB");
	T_EXPECT(!strcmp(pxfer_gid_type_name(PXFER_GID_UNKNOWN), "unknown type"),
		 "unknown");
	T_EXPECT(!strcmp(pxfer_gid_type_name((enum pxfer_gid_type)42), "unknown type"),
		 "out of range");
	return t_result();
}
