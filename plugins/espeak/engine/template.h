// Constants of the protocol between the Go side (template.go) and the
// template process (template.c); both include this file, so they cannot
// drift apart. See template.c for the protocol.

#ifndef VOXGATE_TEMPLATE_H
#define VOXGATE_TEMPLATE_H

// TEMPLATE_ENV names the environment variable that makes the plugin binary
// start as the template; its value is the control socket's descriptor.
#define TEMPLATE_ENV "VOXGATE_ESPEAK_TEMPLATE_FD"

// TEMPLATE_BUFFER_MILLIS is eSpeak's output buffer, the audio handed to the
// synthesis callback at a time: the streaming granularity.
#define TEMPLATE_BUFFER_MILLIS 60

// TEMPLATE_MAGIC starts every request ("VXR1" in little-endian order).
#define TEMPLATE_MAGIC 0x31525856u

// Request bounds: the longest voice name and text, in bytes. The text
// bound is 5,000 code points of at most 4 bytes each.
// The request's rate word carries this flag when the text holds eSpeak
// phoneme input in [[...]] (espeakPHONEMES); the rate is the low 16 bits.
#define TEMPLATE_RATE_PHONEMES 0x10000u
#define TEMPLATE_MAX_VOICE 64u
#define TEMPLATE_MAX_TEXT 20000u

// TEMPLATE_CREDIT_UNLIMITED as a credit lifts the limit on rendering ahead.
#define TEMPLATE_CREDIT_UNLIMITED 0xFFFFFFFFu

// TEMPLATE_END_FRAME in a frame's sample count marks the last frame; its
// event count is then one of the statuses below.
#define TEMPLATE_END_FRAME 0xFFFFFFFFu

#define TEMPLATE_STATUS_OK 0u
#define TEMPLATE_STATUS_FAILED 1u        // espeak_Synth or a setting failed
#define TEMPLATE_STATUS_UNKNOWN_VOICE 2u // espeak_SetVoiceByName failed
#define TEMPLATE_STATUS_BAD_REQUEST 3u   // the request broke the protocol
#define TEMPLATE_STATUS_NO_PROCESS 4u    // fork failed

#endif
