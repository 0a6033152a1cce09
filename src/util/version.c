/*
 * version.c - the library's version at run time (include/floe.h).
 */
#include "floe.h"

const char *floe_version(void) { return FLOE_VERSION_STRING; }

unsigned floe_version_number(void) { return FLOE_VERSION_NUMBER; }
