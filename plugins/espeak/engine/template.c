// The template process: a C-only process that initializes libespeak-ng once
// and then forks one child per synthesis, so that every synthesis starts
// from the same, untouched library state.
//
// Why a process per synthesis: libespeak-ng keeps synthesis state in C
// statics that outlive a call and that no API resets. In 1.51 the
// audible ones are the pitch flutter phase (Flutter_ix, a static local of
// wavegen.c's AdvanceParameters that only ever advances), the modulation
// cycle counter (cycle_count in Wavegen), the automatic gain (agc, which only
// ever decreases) and stale entries of the phoneme list that the next text's
// translation reads, which shift pauses by tens of milliseconds. The
// C library's rand() (breath and Klatt noise; 1.52 has its own generator,
// seeded from the clock) is one more. So the same text gave different
// bytes on every call, while the espeak-ng command, one process per text,
// gives the same bytes every time. A child forked from a template that has
// never synthesized starts exactly where that command starts.
//
// The template is the plugin binary itself, executed again with
// VOXGATE_ESPEAK_TEMPLATE_FD in its environment. The constructor below
// runs before the Go runtime starts (as runc's nsenter does), so the
// template is single-threaded apart from eSpeak's own idle queue thread,
// and fork() is safe in it; it never returns into Go.
//
// The wire protocol's constants are in template.h, which the Go side
// (template.go) includes too.
//
// Control socket (fd named by the variable; the Go side holds the peer):
//   template -> Go, once: int32 sample rate (<= 0: initialization failed)
//   Go -> template: one byte carrying one file descriptor (SCM_RIGHTS), a
//     socket for one synthesis; the template forks a child that owns it.
//
// Synthesis socket, Go -> child:
//   request: u32 magic, u32 rate (words a minute, with
//     TEMPLATE_RATE_PHONEMES when the text has [[...]] phoneme input), u32 voice length,
//     u32 text length, then the voice name and the UTF-8 text (no NULs);
//   then credits: u32 bytes of audio the child may render before it waits
//     for the next credit (CREDIT_UNLIMITED: no limit).
// Child -> Go, one frame per eSpeak buffer:
//   u32 samples, u32 events, then samples int16 little-endian,
//   then events x {u32 type, u32 text_position, u32 length,
//   u32 audio_position}; and last an end frame, samples = END_FRAME and
//   events = status (STATUS_*).
// Closing the Go end ends the child: its next write fails, or its wait
// for a credit sees end of file.

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include <espeak-ng/speak_lib.h>
#include <espeak-ng/espeak_ng.h>

#include "template.h"

// espeak_ng_SetRandSeed exists from eSpeak NG 1.52 on, where the library
// seeds its own generator from the clock at initialization. Declared weak
// so the plugin still links and runs against 1.51, which lacks it and
// uses the C library's rand() instead.
#pragma weak espeak_ng_SetRandSeed
espeak_ng_STATUS espeak_ng_SetRandSeed(long seed);

// CPU_SECONDS bounds one child's CPU time: the longest text renders in
// well under a second, so only an engine stuck in a loop meets it, and the
// kernel ends that child (SIGXCPU) instead of letting it spin forever.
#define CPU_SECONDS 30

// read_full reads exactly n bytes; 0 on success, -1 on error or end of file.
static int read_full(int fd, void *buf, size_t n) {
	char *p = buf;
	while (n > 0) {
		ssize_t got = read(fd, p, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

// write_full writes exactly n bytes; 0 on success, -1 on error.
static int write_full(int fd, const void *buf, size_t n) {
	const char *p = buf;
	while (n > 0) {
		ssize_t put = write(fd, p, n);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return -1;
		p += put;
		n -= (size_t)put;
	}
	return 0;
}

static void put_u32(unsigned char *p, uint32_t v) {
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *p) {
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// The child's state. A child runs one synthesis and exits, so plain
// statics are its per-synthesis state.
static int child_fd = -1;
// allowance is the audio, in bytes, the child may still render before it
// waits for a credit; negative once a buffer overshot it.
static int64_t allowance;
static int unlimited;
// frame is the reusable output buffer; a 60 ms buffer at 22050 Hz is
// 2.6 kB of audio plus a few events.
static unsigned char *frame;
static size_t frame_cap;

static int write_end(uint32_t status) {
	unsigned char end[8];
	put_u32(end, TEMPLATE_END_FRAME);
	put_u32(end + 4, status);
	return write_full(child_fd, end, sizeof end);
}

// wait_credit blocks until the Go side grants more audio; -1 when it went
// away instead.
static int wait_credit(void) {
	while (!unlimited && allowance <= 0) {
		unsigned char b[4];
		if (read_full(child_fd, b, sizeof b) != 0)
			return -1;
		uint32_t credit = get_u32(b);
		if (credit == TEMPLATE_CREDIT_UNLIMITED)
			unlimited = 1;
		else
			allowance += credit;
	}
	return 0;
}

// synth_callback sends one buffer and its events as a frame, then waits
// for credit if the buffer used up the allowance. Returning 1 aborts the
// synthesis: the Go side is gone.
static int synth_callback(short *wav, int samples, espeak_EVENT *events) {
	if (wav == NULL) // synthesis complete
		return 0;
	if (samples < 0)
		samples = 0;
	uint32_t nevents = 0;
	for (espeak_EVENT *ev = events; ev->type != espeakEVENT_LIST_TERMINATED; ev++)
		nevents++;
	size_t need = 8 + (size_t)samples * 2 + (size_t)nevents * 16;
	if (need > frame_cap) {
		unsigned char *grown = realloc(frame, need);
		if (grown == NULL)
			return 1;
		frame = grown;
		frame_cap = need;
	}
	unsigned char *p = frame;
	put_u32(p, (uint32_t)samples);
	put_u32(p + 4, nevents);
	p += 8;
	for (int i = 0; i < samples; i++) {
		uint16_t v = (uint16_t)wav[i];
		*p++ = v & 0xff;
		*p++ = v >> 8;
	}
	for (espeak_EVENT *ev = events; ev->type != espeakEVENT_LIST_TERMINATED; ev++) {
		put_u32(p, (uint32_t)ev->type);
		put_u32(p + 4, (uint32_t)ev->text_position);
		put_u32(p + 8, (uint32_t)ev->length);
		put_u32(p + 12, (uint32_t)ev->audio_position);
		p += 16;
	}
	if (write_full(child_fd, frame, need) != 0)
		return 1;
	allowance -= (int64_t)samples * 2;
	return wait_credit() != 0;
}

// child_main runs one synthesis on fd and exits.
static void child_main(int fd) {
	child_fd = fd;
	struct rlimit cpu = {CPU_SECONDS, CPU_SECONDS + 5};
	setrlimit(RLIMIT_CPU, &cpu);

	unsigned char head[16];
	if (read_full(fd, head, sizeof head) != 0 || get_u32(head) != TEMPLATE_MAGIC)
		_exit(1);
	uint32_t rate = get_u32(head + 4), voice_len = get_u32(head + 8), text_len = get_u32(head + 12);
	unsigned int synth_flags = espeakCHARS_UTF8;
	if (rate & TEMPLATE_RATE_PHONEMES)
		synth_flags |= espeakPHONEMES;
	rate &= 0xFFFFu;
	if (voice_len == 0 || voice_len > TEMPLATE_MAX_VOICE || text_len > TEMPLATE_MAX_TEXT) {
		write_end(TEMPLATE_STATUS_BAD_REQUEST);
		_exit(1);
	}
	// One allocation for both strings, each NUL-terminated for eSpeak.
	char *voice = malloc((size_t)voice_len + 1 + (size_t)text_len + 1);
	if (voice == NULL) {
		write_end(TEMPLATE_STATUS_FAILED);
		_exit(1);
	}
	char *text = voice + voice_len + 1;
	if (read_full(fd, voice, voice_len) != 0 || read_full(fd, text, text_len) != 0)
		_exit(1);
	voice[voice_len] = 0;
	text[text_len] = 0;

	// The template never synthesized, so eSpeak's state is what a fresh
	// process has; these make the random generators' state so too.
	srand(1);
	if (espeak_ng_SetRandSeed != NULL)
		espeak_ng_SetRandSeed(1);

	if (espeak_SetVoiceByName(voice) != EE_OK) {
		write_end(TEMPLATE_STATUS_UNKNOWN_VOICE);
		_exit(0);
	}
	if (espeak_SetParameter(espeakRATE, (int)rate, 0) != EE_OK) {
		write_end(TEMPLATE_STATUS_FAILED);
		_exit(0);
	}
	if (wait_credit() != 0)
		_exit(0);
	espeak_ERROR rc = espeak_Synth(text, (size_t)text_len + 1, 0, POS_CHARACTER, 0, synth_flags, NULL, NULL);
	write_end(rc == EE_OK ? TEMPLATE_STATUS_OK : TEMPLATE_STATUS_FAILED);
	_exit(0);
}

// receive_fd waits for the next synthesis socket on ctl: the socket, or -1
// when the Go side closed the control socket (the plugin is gone).
static int receive_fd(int ctl) {
	for (;;) {
		char byte;
		struct iovec iov = {&byte, 1};
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int))];
		} control;
		struct msghdr msg = {0};
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof control.buf;
		ssize_t n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len != CMSG_LEN(sizeof(int)))
			continue; // a message without exactly one descriptor: ignore it
		int fd;
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
		return fd;
	}
}

static void template_main(int ctl) {
	// Children are reaped by the kernel: the template never waits for them.
	signal(SIGCHLD, SIG_IGN);
	// A write to a socket whose peer is gone must fail with EPIPE, not
	// kill the writer.
	signal(SIGPIPE, SIG_IGN);

	unsigned char ready[4];
	int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, TEMPLATE_BUFFER_MILLIS, NULL, espeakINITIALIZE_DONT_EXIT);
	if (rate > 0) {
		espeak_SetSynthCallback(synth_callback);
		// Build the voice table now, so that children inherit it instead
		// of each scanning the voices directory.
		espeak_ListVoices(NULL);
	}
	put_u32(ready, (uint32_t)rate);
	if (write_full(ctl, ready, sizeof ready) != 0 || rate <= 0)
		_exit(1);

	for (;;) {
		int fd = receive_fd(ctl);
		if (fd < 0)
			_exit(0);
		pid_t pid = fork();
		if (pid == 0) {
			close(ctl);
			child_main(fd);
		}
		if (pid < 0) {
			// Say so on the synthesis socket, which the Go side reads.
			child_fd = fd;
			write_end(TEMPLATE_STATUS_NO_PROCESS);
			child_fd = -1;
		}
		close(fd);
	}
}

// voxgate_template_init turns this process into the template when the
// environment says so. It runs as a constructor, before the Go runtime.
__attribute__((constructor)) static void voxgate_template_init(void) {
	const char *v = getenv(TEMPLATE_ENV);
	if (v == NULL)
		return;
	char *end;
	long fd = strtol(v, &end, 10);
	if (*v == 0 || *end != 0 || fd < 3 || fd > 1024)
		_exit(2);
	template_main((int)fd);
	_exit(0);
}
