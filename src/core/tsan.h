/* SPDX-License-Identifier: MIT */
/*
 * Happens-before edges that ThreadSanitizer cannot see for itself, and
 * nothing outside a TSan build (make SAN=thread).
 *
 * pxfer_tsan_release(addr) in one thread, then pxfer_tsan_acquire(addr)
 * in another: what the first did before is ordered before what the
 * second does after, as a mutex unlocked and then locked would order it.
 */
#ifndef PXFER_CORE_TSAN_H
#define PXFER_CORE_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define PXFER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PXFER_TSAN 1
#endif
#endif

#ifdef PXFER_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

static inline void pxfer_tsan_acquire(const void *addr)
{
	__tsan_acquire((void *)addr);
}

static inline void pxfer_tsan_release(const void *addr)
{
	__tsan_release((void *)addr);
}
#else
static inline void pxfer_tsan_acquire(const void *addr)
{
	(void)addr;
}

static inline void pxfer_tsan_release(const void *addr)
{
	(void)addr;
}
#endif

#endif
