/* SPDX-License-Identifier: MIT */
/*
 * video.h — a video's dimensions, frame count and frame rate, from its
 * bytes, with FFmpeg's libavformat and libavcodec (the one FFmpeg user).
 *
 * The bytes are always in memory (a mapped file, a decoded data: URL), read
 * through a custom I/O context: FFmpeg never opens anything by name, so no
 * protocol (file, http, ...) is ever used, and a container that names
 * other files or URLs (HLS, concat, a mov reference) is refused. FFmpeg's
 * log is silenced: nothing here prints. The libraries are loaded on the
 * first probe (dlopen, once per process); when they cannot be, every probe
 * fails saying so, and nothing else in mm-expand needs them.
 *
 * The frame count is the container's (mp4's sample count), else the video
 * stream's packets are counted (demuxing only). The rate is the stream's
 * average frame rate, else its base rate. Width and height are the coded
 * size; a rotation in the display matrix is not applied. Only the stream
 * headers and, when the container lacks them, the first frames are decoded.
 */
#ifndef KVP_VIDEO_H
#define KVP_VIDEO_H

#include <stddef.h>
#include <stdint.h>

#include "common/diag.h"

struct kvp_video_info {
	uint32_t width, height;
	uint64_t frames;
	double fps;         /* 0 when the stream gives no rate */
	const char *format; /* the demuxer's name ("mov,mp4,m4a,3gp,3g2,mj2") */
	const char *codec;  /* the video codec's name ("h264") */
};

/*
 * Probes the video in buf[0..len): its best video stream. Returns 0 with
 * out set, or -1 with d set (not a container FFmpeg knows, no video
 * stream, no size, no memory).
 */
int kvp_video_probe(const void *buf, size_t len, struct kvp_video_info *out,
                    struct kvp_diag *d);

/* "libavformat 59.27.100, libavcodec 59.37.100", for --version. */
const char *kvp_video_lib_version(void);

#endif
