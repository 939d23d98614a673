/* SPDX-License-Identifier: MIT */
/* Socket addresses for both transports: resolving them and printing them. */
#ifndef PXFER_CORE_NETADDR_H
#define PXFER_CORE_NETADDR_H

#include <stddef.h>
#include <stdint.h>
#include <netdb.h>
#include <sys/socket.h>

/*
 * pxfer_addr_resolve - getaddrinfo for a TCP-style address: @host (NULL
 * with @passive: any), @port (NULL: none), @family (AF_UNSPEC: any);
 * *res is freed with freeaddrinfo. 0, or a negative errno for getaddrinfo's error:
 * -EHOSTUNREACH for a name that does not resolve, -EAGAIN for a
 * temporary failure, -EINVAL for a bad port.
 */
int pxfer_addr_resolve(const char *host, const char *port, int family,
		       int passive, struct addrinfo **res);

/*
 * pxfer_port_check - whether @port is a port number: decimal digits only,
 * 1 to 65535. 0, or -EINVAL for anything else (a service name, a sign,
 * 0, 65536 and up, which getaddrinfo would take modulo 65536).
 */
int pxfer_port_check(const char *port);

/* pxfer_addr_format - "a.b.c.d:port" or "[v6]:port" (or "?") into @buf */
void pxfer_addr_format(const struct sockaddr *sa, char *buf, size_t len);

/* room for what pxfer_addr_source writes: an IPv6 address and a scope */
#define PXFER_SOURCE_LEN 64

/*
 * pxfer_addr_source - the host part of @sa, what a receiver counts a
 * peer's connections and failures by: "a.b.c.d" (also for an IPv4 address
 * mapped into IPv6, as a dual-stack socket reports it), "v6" or
 * "v6%scope" for a link-local one, "?" for anything else. @len is at
 * least PXFER_SOURCE_LEN.
 */
void pxfer_addr_source(const struct sockaddr *sa, char *buf, size_t len);

/*
 * pxfer_addr_parse - a numeric IPv4 or IPv6 address @s into *@family (4
 * or 6) and @addr (IPv4 in its first 4 bytes, the rest 0). 0, or
 * -EINVAL for anything else (a name, a scope, a prefix).
 */
int pxfer_addr_parse(const char *s, uint8_t *family, uint8_t addr[16]);

/* pxfer_addr_print - @family/@addr as pxfer_addr_parse takes it, into
 * @buf (at least 46 bytes) */
void pxfer_addr_print(uint8_t family, const uint8_t addr[16], char *buf,
		      size_t len);

/*
 * pxfer_addr_same_subnet - whether @a and @b (of @family) agree in their
 * first @prefix bits (0 < @prefix <= 32 or 128); 0 for a prefix of 0
 * (unknown), or one too long for the family.
 */
int pxfer_addr_same_subnet(uint8_t family, const uint8_t a[16],
			   const uint8_t b[16], unsigned int prefix);

#endif
