/* SPDX-License-Identifier: MIT */
/* video.c — video stream facts through FFmpeg, from memory only (video.h).
 *
 * FFmpeg's shared libraries (and the hundred-odd codec libraries they
 * load) are opened on the first probe, not at start: linked directly they
 * cost every mm-expand run some 60 ms before main, videos or not. The
 * functions used are looked up once into one table, by the sonames of the
 * headers compiled against (same major version, so the same ABI). */
#include "mm/video.h"

#include <dlfcn.h>
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define IO_BUF 65536
#define SONAME(lib, major) "lib" lib ".so." AV_STRINGIFY(major)

/* The FFmpeg functions video.c calls, as loaded. */
static struct {
	AVFormatContext *(*alloc_context)(void);
	void (*free_context)(AVFormatContext *);
	AVIOContext *(*avio_alloc)(unsigned char *, int, int, void *,
	                           int (*)(void *, uint8_t *, int),
	                           int (*)(void *, uint8_t *, int),
	                           int64_t (*)(void *, int64_t, int));
	void (*avio_free)(AVIOContext **);
	int (*open_input)(AVFormatContext **, const char *,
	                  const AVInputFormat *, AVDictionary **);
	void (*close_input)(AVFormatContext **);
	int (*find_stream_info)(AVFormatContext *, AVDictionary **);
	int (*find_best_stream)(AVFormatContext *, enum AVMediaType, int, int,
	                        const AVCodec **, int);
	int (*read_frame)(AVFormatContext *, AVPacket *);
	AVPacket *(*packet_alloc)(void);
	void (*packet_free)(AVPacket **);
	void (*packet_unref)(AVPacket *);
	const char *(*codec_name)(enum AVCodecID);
	void *(*malloc)(size_t);
	void (*free)(void *);
	void (*freep)(void *);
	int (*dict_set)(AVDictionary **, const char *, const char *, int);
	void (*dict_free)(AVDictionary **);
	int (*strerror)(int, char *, size_t);
	void (*log_set_level)(int);
} av;
static pthread_once_t av_once = PTHREAD_ONCE_INIT;
static char av_error[256] = "FFmpeg did not load"; /* "" once loaded */

/* One symbol of lib into *slot; 0 or -1 (av_error set). */
static int
sym(void *lib, const char *name, void *slot)
{
	void *p = dlsym(lib, name);

	if (p == NULL) {
		snprintf(av_error, sizeof av_error, "FFmpeg has no %s", name);
		return -1;
	}
	memcpy(slot, &p, sizeof p);
	return 0;
}

static int
load_format(void *f)
{
	return sym(f, "avformat_alloc_context", &av.alloc_context) ||
	       sym(f, "avformat_free_context", &av.free_context) ||
	       sym(f, "avio_alloc_context", &av.avio_alloc) ||
	       sym(f, "avio_context_free", &av.avio_free) ||
	       sym(f, "avformat_open_input", &av.open_input) ||
	       sym(f, "avformat_close_input", &av.close_input) ||
	       sym(f, "avformat_find_stream_info", &av.find_stream_info) ||
	       sym(f, "av_find_best_stream", &av.find_best_stream) ||
	       sym(f, "av_read_frame", &av.read_frame);
}

static int
load_codec_util(void *c, void *u)
{
	return sym(c, "av_packet_alloc", &av.packet_alloc) ||
	       sym(c, "av_packet_free", &av.packet_free) ||
	       sym(c, "av_packet_unref", &av.packet_unref) ||
	       sym(c, "avcodec_get_name", &av.codec_name) ||
	       sym(u, "av_malloc", &av.malloc) || sym(u, "av_free", &av.free) ||
	       sym(u, "av_freep", &av.freep) ||
	       sym(u, "av_dict_set", &av.dict_set) ||
	       sym(u, "av_dict_free", &av.dict_free) ||
	       sym(u, "av_strerror", &av.strerror) ||
	       sym(u, "av_log_set_level", &av.log_set_level);
}

/* Opens the three libraries once; they stay loaded. */
static void
load_av(void)
{
	static const char *const names[3] = {
	    SONAME("avformat", LIBAVFORMAT_VERSION_MAJOR),
	    SONAME("avcodec", LIBAVCODEC_VERSION_MAJOR),
	    SONAME("avutil", LIBAVUTIL_VERSION_MAJOR)};
	void *h[3];

	for (int i = 0; i < 3; i++) {
		h[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h[i] == NULL) {
			snprintf(av_error, sizeof av_error,
			         "FFmpeg's %s cannot be loaded (%s)", names[i],
			         dlerror());
			return;
		}
	}
	if (load_format(h[0]) != 0 || load_codec_util(h[1], h[2]) != 0)
		return;
	av.log_set_level(AV_LOG_QUIET);
	av_error[0] = '\0';
}

static int
have_av(struct kvp_diag *d)
{
	pthread_once(&av_once, load_av);
	if (av_error[0] != '\0')
		return kvp_diag_set(d, 0, "%s", av_error);
	return 0;
}

/* The bytes FFmpeg reads, and where it is. */
struct membuf {
	const uint8_t *p;
	size_t len, pos;
};

static int
mem_read(void *opaque, uint8_t *buf, int n)
{
	struct membuf *m = opaque;
	size_t left = m->len - m->pos;

	if (left == 0)
		return AVERROR_EOF;
	if ((size_t)n > left)
		n = (int)left;
	memcpy(buf, m->p + m->pos, (size_t)n);
	m->pos += (size_t)n;
	return n;
}

static int64_t
mem_seek(void *opaque, int64_t off, int whence)
{
	struct membuf *m = opaque;
	int64_t base;

	if (whence & AVSEEK_SIZE)
		return (int64_t)m->len;
	switch (whence & ~AVSEEK_FORCE) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		base = (int64_t)m->pos;
		break;
	case SEEK_END:
		base = (int64_t)m->len;
		break;
	default:
		return AVERROR(EINVAL);
	}
	if (off < -base || base + off > (int64_t)m->len)
		return AVERROR(EINVAL);
	m->pos = (size_t)(base + off);
	return (int64_t)m->pos;
}

/* Every other file or URL a demuxer would open is refused. */
static int
no_io_open(struct AVFormatContext *s, AVIOContext **pb, const char *url,
           int flags, AVDictionary **options)
{
	(void)s, (void)pb, (void)url, (void)flags, (void)options;
	return AVERROR(EPERM);
}

static int
av_fail(struct kvp_diag *d, const char *what, int err)
{
	char msg[128];

	if (av.strerror(err, msg, sizeof msg) != 0)
		snprintf(msg, sizeof msg, "error %d", err);
	return kvp_diag_set(d, 0, "%s: %s", what, msg);
}

static void
free_io(AVIOContext *pb)
{
	if (pb != NULL) {
		av.freep(&pb->buffer);
		av.avio_free(&pb);
	}
}

/* An input context reading m; NULL with d set. */
static AVFormatContext *
open_mem(struct membuf *m, struct kvp_diag *d)
{
	AVFormatContext *fc = av.alloc_context();
	uint8_t *iobuf = av.malloc(IO_BUF);
	AVDictionary *opts = NULL;
	AVIOContext *pb;
	int rc;

	if (fc == NULL || iobuf == NULL) {
		av.free(iobuf);
		av.free_context(fc);
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	fc->pb = av.avio_alloc(iobuf, IO_BUF, 0, m, mem_read, NULL, mem_seek);
	if (fc->pb == NULL) {
		av.free(iobuf);
		av.free_context(fc);
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	pb = fc->pb;
	fc->flags |= AVFMT_FLAG_CUSTOM_IO;
	fc->io_open = no_io_open;
	av.dict_set(&opts, "protocol_whitelist", "none", 0);
	rc = av.open_input(&fc, "", NULL, &opts);
	av.dict_free(&opts);
	if (rc < 0) {
		/* avformat_open_input freed fc, not the custom I/O context */
		free_io(pb);
		av_fail(d, "not a video FFmpeg reads", rc);
		return NULL;
	}
	return fc;
}

static void
close_mem(AVFormatContext *fc)
{
	AVIOContext *pb = fc->pb;

	av.close_input(&fc);
	free_io(pb);
}

static double
rate_of(const AVStream *st)
{
	AVRational r = st->avg_frame_rate;

	if (r.num <= 0 || r.den <= 0)
		r = st->r_frame_rate;
	if (r.num <= 0 || r.den <= 0)
		return 0;
	return (double)r.num / (double)r.den;
}

/* The video stream's packets, from where the demuxer stands. */
static int
count_packets(AVFormatContext *fc, int idx, uint64_t *n, struct kvp_diag *d)
{
	AVPacket *pkt = av.packet_alloc();
	int rc;

	if (pkt == NULL)
		return kvp_diag_set(d, 0, "out of memory");
	for (unsigned i = 0; i < fc->nb_streams; i++)
		if ((int)i != idx)
			fc->streams[i]->discard = AVDISCARD_ALL;
	*n = 0;
	while ((rc = av.read_frame(fc, pkt)) >= 0) {
		*n += pkt->stream_index == idx;
		av.packet_unref(pkt);
	}
	av.packet_free(&pkt);
	if (rc != AVERROR_EOF)
		return av_fail(d, "reading the video stream", rc);
	return 0;
}

/* The best video stream's facts; find_stream_info only when the headers
 * lack the size or the rate. */
static int
stream_facts(AVFormatContext *fc, struct kvp_video_info *out,
             struct kvp_diag *d)
{
	int idx = av.find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
	const AVStream *st;
	int rc;

	if (idx < 0 || fc->streams[idx]->codecpar->width <= 0 ||
	    rate_of(fc->streams[idx]) == 0) {
		rc = av.find_stream_info(fc, NULL);
		if (rc < 0)
			return av_fail(d, "reading the stream headers", rc);
		idx = av.find_best_stream(fc, AVMEDIA_TYPE_VIDEO, -1, -1, NULL,
		                          0);
	}
	if (idx < 0)
		return kvp_diag_set(d, 0, "no video stream");
	st = fc->streams[idx];
	if (st->codecpar->width <= 0 || st->codecpar->height <= 0)
		return kvp_diag_set(d, 0, "the video stream has no size");
	out->width = (uint32_t)st->codecpar->width;
	out->height = (uint32_t)st->codecpar->height;
	out->fps = rate_of(st);
	out->format = fc->iformat->name;
	out->codec = av.codec_name(st->codecpar->codec_id);
	if (st->nb_frames > 0) {
		out->frames = (uint64_t)st->nb_frames;
		return 0;
	}
	return count_packets(fc, idx, &out->frames, d);
}

int
kvp_video_probe(const void *buf, size_t len, struct kvp_video_info *out,
                struct kvp_diag *d)
{
	struct membuf m = {buf, len, 0};
	AVFormatContext *fc;
	int rc;

	memset(out, 0, sizeof *out);
	if (len == 0)
		return kvp_diag_set(d, 0, "empty video");
	if (have_av(d) != 0)
		return -1;
	fc = open_mem(&m, d);
	if (fc == NULL)
		return -1;
	rc = stream_facts(fc, out, d);
	close_mem(fc);
	return rc;
}

const char *
kvp_video_lib_version(void)
{
	return "libavformat " AV_STRINGIFY(
	    LIBAVFORMAT_VERSION) ", libavcodec " AV_STRINGIFY(LIBAVCODEC_VERSION) " (loaded on the first video read)";
}
