/* SPDX-License-Identifier: MIT */
/* wire.c — msgpack-c KV-event batch decoding (see wire.h). */
#include "wire.h"

#include <msgpack.h>

const char *
kvp_wire_lib_version(void)
{
	return msgpack_version();
}
