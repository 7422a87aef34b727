// SPDX-License-Identifier: MIT
/*
 * The library's version: ortmem_version() and ortmem_version_string(),
 * which a caller compares with the ORTMEM_VERSION_* of the header it was
 * built against.
 */
#include "internal.h"

#define STR2(x) #x
#define STR(x) STR2(x)

ORTMEM_API unsigned int ortmem_version(void)
{
	return ORTMEM_VERSION_NUMBER;
}

ORTMEM_API const char *ortmem_version_string(void)
{
	return STR(ORTMEM_VERSION_MAJOR) "." STR(ORTMEM_VERSION_MINOR) "."
		STR(ORTMEM_VERSION_PATCH);
}
