/*
 * iceberg_internal.h - the Iceberg layer of libfloe, one include for its
 * users (catalogs, the sink).  Each part has its own header:
 *   metadata_internal.h   table metadata, updates, requirements, locations
 */
#ifndef FLOE_ICEBERG_INTERNAL_H
#define FLOE_ICEBERG_INTERNAL_H

#include "iceberg/metadata_internal.h"

#endif /* FLOE_ICEBERG_INTERNAL_H */
