/* SPDX-License-Identifier: MIT */
#ifndef PXFER_CLI_H
#define PXFER_CLI_H

#include <stdint.h>

int cmd_send(int argc, char **argv);
int cmd_recv(int argc, char **argv);

/* parse "64M", "1G", "4096" into bytes; 0 or -EINVAL */
int cli_parse_size(const char *s, uint64_t *out);
/* parse a positive integer within [min, max]; 0 or -EINVAL */
int cli_parse_uint(const char *s, unsigned long min, unsigned long max,
		   unsigned long *out);
/* load the secret from --secret-file or $PXFER_SECRET, with clear errors */
struct pxfer_secret;
int cli_load_secret(struct pxfer_secret *s, const char *file, int generate);

#endif
