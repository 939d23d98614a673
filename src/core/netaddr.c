// SPDX-License-Identifier: MIT
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "core/netaddr.h"

static int gai_errno(int gai)
{
	switch (gai) {
	case EAI_NONAME:
	case EAI_NODATA:
		return -EHOSTUNREACH;
	case EAI_AGAIN:
		return -EAGAIN;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	default:		/* EAI_SERVICE and the rest */
		return -EINVAL;
	}
}

int pxfer_addr_resolve(const char *host, const char *port, int family,
		       int passive, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_family = family,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 };
	int ret = getaddrinfo(host, port, &hints, res);

	return ret ? gai_errno(ret) : 0;
}

int pxfer_port_check(const char *port)
{
	unsigned long v = 0;

	if (!port || !*port)
		return -EINVAL;
	for (const char *p = port; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (*p - '0');
		if (v > 65535)
			return -EINVAL;
	}
	return v ? 0 : -EINVAL;
}

void pxfer_addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

void pxfer_addr_source(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in6 *in6 = (const void *)sa;
	char host[INET6_ADDRSTRLEN];

	snprintf(buf, len, "?");
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, buf, len);
	} else if (sa && sa->sa_family == AF_INET6 &&
		   IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], buf, len);
	} else if (sa && sa->sa_family == AF_INET6) {
		/* fe80::1 on two links are two hosts */
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		if (in6->sin6_scope_id)
			snprintf(buf, len, "%s%%%u", host, in6->sin6_scope_id);
		else
			snprintf(buf, len, "%s", host);
	}
}

int pxfer_addr_parse(const char *s, uint8_t *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = 6;
		return 0;
	}
	return -EINVAL;
}

void pxfer_addr_print(uint8_t family, const uint8_t addr[16], char *buf,
		      size_t len)
{
	if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, addr, buf, len))
		snprintf(buf, len, "?");
}

int pxfer_addr_same_subnet(uint8_t family, const uint8_t a[16],
			   const uint8_t b[16], unsigned int prefix)
{
	unsigned int bytes = prefix / 8, bits = prefix % 8;

	if (!prefix || prefix > (family == 4 ? 32u : 128u))
		return 0;
	if (memcmp(a, b, bytes))
		return 0;
	return !bits || !((a[bytes] ^ b[bytes]) & (0xff << (8 - bits)));
}
