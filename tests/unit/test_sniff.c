/* SPDX-License-Identifier: MIT */
/*
 * test_sniff.c — lib/common/sniff: the kinds of input a front end names
 * when a tool is handed another stage's data. Inputs are the first lines
 * of real kvpipe records (shapes from kvpipe-records(5)) and the magic
 * numbers of the formats (gzip RFC 1952, zstd RFC 8878, PNG, JPEG).
 */
#include "common/sniff.h"

#include "unit.h"

#define S(lit) kvp_sniff((lit), sizeof(lit) - 1)

int
main(void)
{
	CHECK(S("\x1f\x8b\x08\x00") == KVP_KIND_GZIP);
	CHECK(S("\x28\xb5\x2f\xfd\x00") == KVP_KIND_ZSTD);
	CHECK(S("\x89PNG\r\n\x1a\n") == KVP_KIND_PNG);
	CHECK(S("\xff\xd8\xff\xe1") == KVP_KIND_JPEG);
	CHECK(S("\x93\x01\x02\x03") == KVP_KIND_MSGPACK);
	CHECK(S("\xdc\x00\x03") == KVP_KIND_MSGPACK);
	CHECK(S("ab\0cd") == KVP_KIND_MSGPACK);
	CHECK(S("  [{\"tokens\":[1]}]") == KVP_KIND_JSON_ARRAY);
	CHECK(S("{") == KVP_KIND_PRETTY_JSON);
	CHECK(S("{\r") == KVP_KIND_PRETTY_JSON);
	CHECK(S("{\"seq\":1,\"payload_b64\":\"kw==\"}") == KVP_KIND_CAPTURE);
	CHECK(S("{\"rec\":\"event\",\"seq\":0}") == KVP_KIND_ENGINE_EVENT);
	CHECK(S("{\"rec\":\"decision\",\"request_id\":\"a\"}") ==
	      KVP_KIND_DECISION);
	CHECK(S("{\"rec\":\"summary\"}") == KVP_KIND_DECISION);
	CHECK(S("{\"worker_id\":1,\"event\":{\"event_id\":0,\"data\":{}}}") ==
	      KVP_KIND_ROUTER_EVENT);
	CHECK(S("{\"timestamp\":0,\"input_length\":9,\"hash_ids\":[1]}") ==
	      KVP_KIND_TRACE);
	CHECK(S("{\"request_id\":\"a\",\"tokens\":[1,2]}") == KVP_KIND_REQUEST);
	CHECK(S("{\"token_ids\":[1,2]}") == KVP_KIND_REQUEST);
	CHECK(S("\xef\xbb\xbf{\"tokens\":[1]}") == KVP_KIND_REQUEST);
	CHECK(S("{\"x\":1}") == KVP_KIND_UNKNOWN);
	CHECK(S("hello") == KVP_KIND_UNKNOWN);
	CHECK(kvp_sniff("", 0) == KVP_KIND_UNKNOWN);
	CHECK(strcmp(kvp_kind_name(KVP_KIND_CAPTURE),
	             "a capture (payload_b64)") == 0);
	return UNIT_DONE();
}
