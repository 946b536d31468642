/* SPDX-License-Identifier: MIT */
/* test_capture.c — lib/capture: endpoint specs (kvp_cap_parse_spec). */
#include <string.h>

#include "capture/capture.h"
#include "kvpipe.h"
#include "unit.h"

static int
parse(const char *s, int bind, struct kvp_cap_spec *sp)
{
	struct kvp_diag d = {{0}, 0};

	return kvp_cap_parse_spec(s, bind, sp, &d);
}

int
main(void)
{
	struct kvp_cap_spec sp;
	static const char *const bad[] = {
	    "",
	    "foo",
	    "tcp://",
	    "tcp://h",
	    "tcp://:5",
	    "tcp://h:0",
	    "tcp://h:65536",
	    "tcp://h:5x",
	    "tcp://*:5557",
	    "ipc://",
	    "tcp://h:1,replay=foo",
	    "tcp://h:1,dp=2-1",
	    "tcp://h:1,dp=",
	    "tcp://h:1,dp=a",
	    "tcp://h:1,dp=0-5000",
	    "tcp://h:65535,dp=0-1",
	    "tcp://h:1,replay=tcp://h:65535,dp=0-1",
	    "tcp://h:1,worker=x",
	    "tcp://h:1,worker",
	    "tcp://h:1,color=red",
	};

	CHECK(parse("tcp://engine:5557,replay=tcp://engine:5558,worker=7,"
	            "dp=0-7",
	            0, &sp) == KVP_OK);
	CHECK_STR(sp.addr, "tcp://engine:5557");
	CHECK_STR(sp.replay, "tcp://engine:5558");
	CHECK(sp.has_worker && sp.worker == 7);
	CHECK(sp.has_dp && sp.dp_lo == 0 && sp.dp_hi == 7);
	CHECK(!sp.bind);
	CHECK(parse("tcp://h:1,dp=3", 0, &sp) == KVP_OK);
	CHECK(sp.dp_lo == 3 && sp.dp_hi == 3);
	CHECK(parse("tcp://h:1,worker=18446744073709551615", 0, &sp) == KVP_OK);
	CHECK_U64(sp.worker, UINT64_MAX);
	CHECK(parse("tcp://*:5557", 1, &sp) == KVP_OK && sp.bind);
	CHECK(parse("ipc:///tmp/kv,dp=0-1", 0, &sp) == KVP_OK);
	CHECK(parse("tcp://[::1]:5557", 0, &sp) == KVP_OK);
	CHECK(sp.replay[0] == '\0' && !sp.has_worker && !sp.has_dp);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse(bad[i], 0, &sp);

		if (rc != KVP_BAD)
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
		CHECK(rc == KVP_BAD);
	}
	return UNIT_DONE();
}
