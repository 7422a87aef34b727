// SPDX-License-Identifier: MIT
/*
 * Logging through a caller's callback; silent unless asked.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "internal.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_env_once = PTHREAD_ONCE_INIT;
static ortmem_log_fn log_fn;
static void *log_user;
static int log_max = -1;	/* -1: nothing is delivered */

static const char *const level_names[] = {
	[ORTMEM_LOG_ERROR] = "error",
	[ORTMEM_LOG_WARN] = "warn",
	[ORTMEM_LOG_INFO] = "info",
	[ORTMEM_LOG_DEBUG] = "debug",
};

static void stderr_logger(enum ortmem_log_level level, const char *msg,
			  void *user)
{
	(void)user;
	fprintf(stderr, "libortmem: %s: %s\n", level_names[level], msg);
}

static void log_read_env(void)
{
	const char *env = getenv("ORTMEM_LOG_LEVEL");
	size_t i;

	if (!env || !*env)
		return;
	for (i = 0; i < ORTMEM_ARRAY_SIZE(level_names); i++) {
		if (!strcasecmp(env, level_names[i])) {
			log_fn = stderr_logger;
			log_max = (int)i;
			return;
		}
	}
	fprintf(stderr,
		"libortmem: ORTMEM_LOG_LEVEL=%s is not a level; use error, warn, info or debug\n",
		env);
}

ORTMEM_API int ortmem_set_log_fn(ortmem_log_fn fn, void *user, int max_level)
{
	if (max_level < ORTMEM_LOG_ERROR || max_level > ORTMEM_LOG_DEBUG)
		return ortmem__err_invalid(-1, 0,
			"log level %d is not one of ORTMEM_LOG_ERROR..ORTMEM_LOG_DEBUG",
			max_level);
	/* The environment's choice is the default; a caller's overrides it. */
	pthread_once(&log_env_once, log_read_env);
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_user = user;
	log_max = fn ? max_level : -1;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void ortmem__log(enum ortmem_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int saved_errno = errno;
	size_t n;

	pthread_once(&log_env_once, log_read_env);
	pthread_mutex_lock(&log_lock);
	if ((int)level <= log_max && log_fn) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		/* A message is one line; the logger ends it, not the caller
		 * (a stray "\n" would print an empty line after it). */
		n = strlen(msg);
		while (n && msg[n - 1] == '\n')
			msg[--n] = '\0';
		log_fn(level, msg, log_user);
	}
	pthread_mutex_unlock(&log_lock);
	errno = saved_errno;
}
