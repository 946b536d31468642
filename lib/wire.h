/* SPDX-License-Identifier: MIT */
/*
 * wire.h — msgpack-c KV-event batch decoding (vLLM and SGLang shapes).
 * The only module that includes <msgpack.h>.
 */
#ifndef KVP_WIRE_H
#define KVP_WIRE_H

/* Version of the linked msgpack-c, for --version. */
const char *kvp_wire_lib_version(void);

#endif
