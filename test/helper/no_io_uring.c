// SPDX-License-Identifier: MIT
/*
 * no_io_uring - run a command as if the kernel had no io_uring.
 *
 *	no_io_uring CMD [ARGS...]
 *
 * Installs a seccomp filter under which io_uring_setup, io_uring_enter and
 * io_uring_register fail with ENOSYS, as on a kernel built without
 * io_uring or in a sandbox that forbids it, then execs CMD. The filter is
 * inherited by CMD and everything it starts. Used by the tests to exercise
 * pxfer's pread/pwrite fallback.
 *
 * Exit status: CMD's, or 127 if it cannot be run, 2 on bad usage, 1 if the
 * filter cannot be installed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define NATIVE_ARCH	AUDIT_ARCH_X86_64
#define X32_BIT		0x40000000u	/* __X32_SYSCALL_BIT */
#elif defined(__aarch64__)
#define NATIVE_ARCH	AUDIT_ARCH_AARCH64
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH	AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ARCH	AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define NATIVE_ARCH	AUDIT_ARCH_S390X
#else
#error "no_io_uring: add this architecture's AUDIT_ARCH value"
#endif

#ifndef X32_BIT
#define X32_BIT		0u
#endif

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup	425
#define __NR_io_uring_enter	426
#define __NR_io_uring_register	427
#endif

#define LOAD(field)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
				 offsetof(struct seccomp_data, field))
#define RET(v)		BPF_STMT(BPF_RET | BPF_K, (v))
/* if the accumulator equals @k, skip @t instructions, else skip @f */
#define JEQ(k, t, f)	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))

static int install_filter(void)
{
	struct sock_filter code[] = {
		/* foreign ABIs (a 32-bit program) are not this tool's business */
		LOAD(arch),
		JEQ(NATIVE_ARCH, 1, 0),
		RET(SECCOMP_RET_ALLOW),
		LOAD(nr),
		/* x32 calls carry a flag bit on top of the same numbers */
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~X32_BIT),
		JEQ(__NR_io_uring_setup, 3, 0),
		JEQ(__NR_io_uring_enter, 2, 0),
		JEQ(__NR_io_uring_register, 1, 0),
		RET(SECCOMP_RET_ALLOW),
		RET(SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	/* lets an unprivileged process install a filter; required by seccomp */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("no_io_uring: prctl(PR_SET_NO_NEW_PRIVS)");
		return -1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("no_io_uring: prctl(PR_SET_SECCOMP)");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(argc < 2 ? stderr : stdout,
			"usage: no_io_uring CMD [ARGS...]\n"
			"Run CMD with io_uring_setup, io_uring_enter and io_uring_register\n"
			"failing with ENOSYS (a seccomp filter).\n");
		return argc < 2 ? 2 : 0;
	}
	if (install_filter())
		return 1;
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_io_uring: cannot run '%s': %s\n", argv[1],
		strerror(errno));
	return 127;
}
