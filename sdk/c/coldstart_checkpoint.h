/*
 * coldstart checkpoint SDK for C (and C++).
 *
 *   #include "coldstart_checkpoint.h"
 *   coldstart_checkpoint("config-loaded");
 *
 * When the environment variable COLDSTART_FD names an open, writable file
 * descriptor (plain decimal digits), each call writes one line
 *
 *   cs1 <CLOCK_MONOTONIC ns> <name>\n
 *
 * to it with a single write(2). Otherwise the call does nothing. It never
 * allocates, never aborts, never raises SIGPIPE, and leaves errno as it was.
 * Protocol and name rules: sdk/vectors/README.md.
 */
#ifndef COLDSTART_CHECKPOINT_H
#define COLDSTART_CHECKPOINT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest name written, in bytes of UTF-8; longer names are cut at a character boundary. */
#define COLDSTART_MAX_NAME_BYTES 1024

/* Record the checkpoint NAME (a NUL-terminated string; NULL counts as ""). */
void coldstart_checkpoint(const char *name);

/* Same, with an explicit length (NAME may then contain NUL bytes). */
void coldstart_checkpoint_n(const char *name, size_t len);

/* Test hook: forget the cached COLDSTART_FD so the next call reads it again.
 * Not for applications; not safe while other threads call coldstart_checkpoint. */
void coldstart_checkpoint_reset_for_tests(void);

#ifdef __cplusplus
}
#endif

#endif /* COLDSTART_CHECKPOINT_H */
