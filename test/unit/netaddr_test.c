// SPDX-License-Identifier: MIT
/*
 * netaddr_test: a peer's source, the key the receiver counts its
 * connections and failed guesses by (src/core/netaddr.c).
 *  - the port is not part of it: two connections of one host are one source
 *  - an IPv4 address mapped into IPv6 (a dual-stack listener) is the same
 *    source as the plain IPv4 address; 127.0.0.1 and 127.0.0.2 are two
 *  - IPv6 addresses are printed compressed; a link-local one keeps its
 *    scope, since fe80::1 on two links are two hosts
 *  - anything else, or no address at all, is "?"
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "core/netaddr.h"
#include "test.h"

static const char *source_of(const struct sockaddr *sa)
{
	static char buf[PXFER_SOURCE_LEN];

	memset(buf, 'x', sizeof(buf));
	pxfer_addr_source(sa, buf, sizeof(buf));
	return buf;
}

static struct sockaddr_in v4(const char *a, unsigned int port)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_port = htons(port) };

	inet_pton(AF_INET, a, &in.sin_addr);
	return in;
}

static struct sockaddr_in6 v6(const char *a, unsigned int port,
			      unsigned int scope)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(port),
				    .sin6_scope_id = scope };

	inet_pton(AF_INET6, a, &in6.sin6_addr);
	return in6;
}

#define SRC(sa) source_of((const struct sockaddr *)&(sa))

int main(void)
{
	struct sockaddr_in a = v4("127.0.0.1", 40000), b = v4("127.0.0.1", 40001),
			   c = v4("127.0.0.2", 40000);
	struct sockaddr_in6 m = v6("::ffff:127.0.0.1", 5, 0),
			    d = v6("2001:db8:0:0:0:0:0:1", 7, 0),
			    l1 = v6("fe80::1", 7, 2), l2 = v6("fe80::1", 7, 3),
			    full = v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
				      65535, 4294967295u);
	struct sockaddr_storage none = { .ss_family = AF_UNIX };
	char port[80], first[PXFER_SOURCE_LEN];

	T_EXPECT(!strcmp(SRC(a), "127.0.0.1"), "got '%s'", SRC(a));
	snprintf(first, sizeof(first), "%s", SRC(a));
	T_EXPECT(!strcmp(first, SRC(b)), "the port made two sources");
	T_EXPECT(!strcmp(SRC(c), "127.0.0.2"), "got '%s'", SRC(c));
	T_EXPECT(!strcmp(SRC(m), "127.0.0.1"), "a mapped address gave '%s'",
		 SRC(m));
	T_EXPECT(!strcmp(SRC(d), "2001:db8::1"), "got '%s'", SRC(d));
	T_EXPECT(!strcmp(SRC(l1), "fe80::1%2"), "got '%s'", SRC(l1));
	snprintf(first, sizeof(first), "%s", SRC(l1));
	T_EXPECT(strcmp(first, SRC(l2)), "two links made one source");
	T_EXPECT(!strcmp(SRC(full),
			 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff%4294967295"),
		 "the longest source was cut: '%s'", SRC(full));
	T_EXPECT(!strcmp(SRC(none), "?"), "got '%s'", SRC(none));
	T_EXPECT(!strcmp(source_of(NULL), "?"), "got '%s'", source_of(NULL));

	/* the printed peer keeps its port; the source is its host part */
	pxfer_addr_format((const struct sockaddr *)&c, port, sizeof(port));
	T_EXPECT(!strcmp(port, "127.0.0.2:40000"), "got '%s'", port);
	return t_result();
}
