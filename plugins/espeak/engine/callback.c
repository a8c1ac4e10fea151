// C glue between libespeak-ng and the Go side of the binding. It lives in its
// own file because a cgo preamble that is next to an //export may hold only
// declarations.

#include <stdint.h>
#include <espeak-ng/speak_lib.h>
#include "_cgo_export.h"

void voxgate_set_synth_callback(void) {
	espeak_SetSynthCallback(goSynthCallback);
}

// voxgate_synth speaks UTF-8 text synchronously. handle is a runtime/cgo
// Handle; it travels as user_data in every event so the callback can find
// its Go state without C ever holding a Go pointer.
int voxgate_synth(const char *text, size_t size, uintptr_t handle) {
	return espeak_Synth(text, size, 0, POS_CHARACTER, 0, espeakCHARS_UTF8,
		NULL, (void *)handle);
}
