// SPDX-License-Identifier: MIT
/*
 * rails_test: which local rail goes to which address the receiver
 * offers (src/engine/rails.c, src/core/netaddr.c).
 *  - addresses parse as IPv4 or IPv6, nothing else; subnets compare by
 *    the prefix's bits, a prefix of 0 (unknown) matches nothing
 *  - each local rail pairs with an offer on its subnet, one not taken
 *    before one taken; the offer's prefix serves when the local one is
 *    unknown; a rail with no offer on its subnet is left out
 *  - what a receiver offers goes into the WELCOME as family, prefix and
 *    address, at most PXFER_WIRE_RAILS_MAX of them
 */
#include <errno.h>
#include <string.h>

#include "core/netaddr.h"
#include "engine/rails.h"
#include "test.h"

static struct pxfer_rail_addr rail(const char *addr, unsigned int prefix,
				   const char *dev)
{
	struct pxfer_rail_addr r = { .prefix = (uint8_t)prefix, .numa_node = -1,
				     .up = 1 };

	strcpy(r.addr, addr);
	strcpy(r.dev, dev);
	return r;
}

static void offer(struct pxfer_welcome *w, const char *addr, unsigned int prefix)
{
	struct pxfer_wire_rail *r = &w->rail[w->nrails++];

	T_EXPECT(!pxfer_addr_parse(addr, &r->family, r->addr), "parse %s", addr);
	r->prefix = (uint8_t)prefix;
}

static void test_addr(void)
{
	uint8_t f, a[16], b[16];
	char buf[64];

	T_EXPECT(!pxfer_addr_parse("10.77.0.1", &f, a) && f == 4 &&
		 a[0] == 10 && a[3] == 1 && !a[4] && !a[15], "IPv4");
	T_EXPECT(!pxfer_addr_parse("fd00::2", &f, a) && f == 6 &&
		 a[0] == 0xfd && a[15] == 2, "IPv6");
	T_EXPECT(pxfer_addr_parse("host.example", &f, a) == -EINVAL, "a name");
	T_EXPECT(pxfer_addr_parse("10.77.0.1/24", &f, a) == -EINVAL, "a prefix");
	T_EXPECT(pxfer_addr_parse("fe80::1%eth0", &f, a) == -EINVAL, "a scope");
	T_EXPECT(pxfer_addr_parse("", &f, a) == -EINVAL, "nothing");
	pxfer_addr_parse("10.77.0.1", &f, a);
	pxfer_addr_print(f, a, buf, sizeof(buf));
	T_EXPECT(!strcmp(buf, "10.77.0.1"), "printed back: %s", buf);

	pxfer_addr_parse("10.77.0.2", &f, b);
	T_EXPECT(pxfer_addr_same_subnet(4, a, b, 24), "/24");
	T_EXPECT(pxfer_addr_same_subnet(4, a, b, 30), "/30");
	T_EXPECT(!pxfer_addr_same_subnet(4, a, b, 31), "/31 splits .1 and .2");
	T_EXPECT(!pxfer_addr_same_subnet(4, a, b, 32), "/32");
	T_EXPECT(!pxfer_addr_same_subnet(4, a, b, 0), "prefix 0 is unknown");
	T_EXPECT(!pxfer_addr_same_subnet(4, a, b, 33), "prefix 33 for IPv4");
	pxfer_addr_parse("10.78.0.2", &f, b);
	T_EXPECT(!pxfer_addr_same_subnet(4, a, b, 24), "10.77/24 and 10.78");
	T_EXPECT(pxfer_addr_same_subnet(4, a, b, 14), "/14 takes both");
	pxfer_addr_parse("fd00:0:0:1::1", &f, a);
	pxfer_addr_parse("fd00:0:0:1::ff", &f, b);
	T_EXPECT(pxfer_addr_same_subnet(6, a, b, 64), "IPv6 /64");
	T_EXPECT(!pxfer_addr_same_subnet(6, a, b, 128), "IPv6 /128");
	T_EXPECT(!pxfer_addr_same_subnet(6, a, b, 129), "prefix 129");
}

static void test_pair(void)
{
	struct pxfer_rail_addr l[4];
	struct pxfer_welcome w = { 0 };
	struct pxfer_rails out;
	unsigned int skipped, n;

	/* two rails, two offers on their subnets, given the other way round */
	l[0] = rail("10.77.0.2", 24, "rxe1");
	l[0].port = 1;
	l[1] = rail("10.78.0.2", 24, "rxe3");
	l[1].port = 1;
	offer(&w, "10.78.0.1", 24);
	offer(&w, "10.77.0.1", 24);
	n = pxfer_rails_pair(l, 2, &w, &out, &skipped);
	T_EXPECT(n == 2 && !skipped, "two pairs: %u, %u left out", n, skipped);
	T_EXPECT(!strcmp(out.r[0].remote, "10.77.0.1") &&
		 !strcmp(out.r[1].remote, "10.78.0.1"), "by subnet: %s, %s",
		 out.r[0].remote, out.r[1].remote);
	T_EXPECT(!strcmp(out.r[0].name, "rxe1:1 10.77.0.2 -> 10.77.0.1"),
		 "named: %s", out.r[0].name);

	/* a third local rail on no offered subnet is left out */
	l[2] = rail("192.0.2.7", 24, "eth0");
	n = pxfer_rails_pair(l, 3, &w, &out, &skipped);
	T_EXPECT(n == 2 && skipped == 1, "one left out: %u, %u", n, skipped);

	/* two local rails on one subnet with two offers there: one each */
	memset(&w, 0, sizeof(w));
	l[0] = rail("10.9.0.2", 16, "eth1");
	l[1] = rail("10.9.1.2", 16, "eth2");
	offer(&w, "10.9.0.1", 16);
	offer(&w, "10.9.1.1", 16);
	n = pxfer_rails_pair(l, 2, &w, &out, &skipped);
	T_EXPECT(n == 2 && strcmp(out.r[0].remote, out.r[1].remote),
		 "an offer not taken comes first: %s, %s", out.r[0].remote,
		 out.r[1].remote);
	/* three local rails, one offer: all three take it */
	memset(&w, 0, sizeof(w));
	offer(&w, "10.9.0.1", 16);
	l[2] = rail("10.9.2.2", 16, "eth3");
	n = pxfer_rails_pair(l, 3, &w, &out, &skipped);
	T_EXPECT(n == 3 && !strcmp(out.r[2].remote, "10.9.0.1"),
		 "a taken offer when none is free: %u", n);

	/* a local rail of unknown prefix goes by the offer's */
	memset(&w, 0, sizeof(w));
	offer(&w, "10.77.0.1", 24);
	l[0] = rail("10.77.0.9", 0, "");
	n = pxfer_rails_pair(l, 1, &w, &out, &skipped);
	T_EXPECT(n == 1 && !strcmp(out.r[0].name, "10.77.0.9 -> 10.77.0.1"),
		 "the offer's prefix: %u %s", n, out.r[0].name);
	/* ... and with both unknown, nothing pairs */
	w.rail[0].prefix = 0;
	n = pxfer_rails_pair(l, 1, &w, &out, &skipped);
	T_EXPECT(n == 0 && skipped == 1, "no prefix at all: %u", n);

	/* IPv6 never pairs with IPv4 */
	memset(&w, 0, sizeof(w));
	offer(&w, "fd00::1", 64);
	l[0] = rail("10.77.0.2", 24, "rxe1");
	l[1] = rail("fd00::2", 64, "rxe1");
	n = pxfer_rails_pair(l, 2, &w, &out, &skipped);
	T_EXPECT(n == 1 && !strcmp(out.r[0].remote, "fd00::1") && skipped == 1,
		 "families apart: %u", n);

	/* no offers: no pairs */
	memset(&w, 0, sizeof(w));
	n = pxfer_rails_pair(l, 2, &w, &out, &skipped);
	T_EXPECT(n == 0 && skipped == 2, "nothing offered: %u", n);
}

static void test_wire(void)
{
	struct pxfer_rail_addr l[PXFER_RAILS_MAX + 2];
	struct pxfer_welcome w = { 0 };
	unsigned int i;

	l[0] = rail("10.77.0.1", 24, "rxe0");
	l[1] = rail("not-an-address", 24, "x");
	l[2] = rail("fd00::1", 64, "rxe0");
	pxfer_rails_to_wire(l, 3, &w);
	T_EXPECT(w.nrails == 2, "what does not parse is not offered: %u", w.nrails);
	T_EXPECT(w.rail[0].family == 4 && w.rail[0].prefix == 24 &&
		 w.rail[0].addr[0] == 10 && w.rail[1].family == 6 &&
		 w.rail[1].prefix == 64, "family, prefix, address");
	for (i = 0; i < PXFER_RAILS_MAX + 2; i++)
		l[i] = rail("10.1.0.1", 24, "eth");
	pxfer_rails_to_wire(l, PXFER_RAILS_MAX + 2, &w);
	T_EXPECT(w.nrails == PXFER_WIRE_RAILS_MAX, "at most %d: %u",
		 PXFER_WIRE_RAILS_MAX, w.nrails);
	l[0] = rail("10.1.0.1", 40, "eth");
	pxfer_rails_to_wire(l, 1, &w);
	T_EXPECT(w.nrails == 1 && w.rail[0].prefix == 0,
		 "an impossible prefix goes as unknown: %u", w.rail[0].prefix);
}

int main(void)
{
	test_addr();
	test_pair();
	test_wire();
	return t_result();
}
