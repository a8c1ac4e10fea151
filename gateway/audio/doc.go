// Package audio is the gateway's whole-clip audio processing: it decodes a
// provider's clip (WAV, raw PCM, MP3, G.711), levels it to the request's
// volumeDbfs or to an EBU R128 loudness target (loudness.go), changes its
// tempo, converts its sample rate, and encodes it
// in the requested output format (WAV, PCM, MP3, Ogg Opus, FLAC, G.711
// μ-law and A-law); and it joins the turns of a conversation into one clip.
//
// # Memory
//
// Process runs as a chain of stages that pass a few thousand samples at a
// time (see Process), so that a request's memory is little more than its
// answer, and refuses, before the work, an answer longer or larger than
// its Limits.
//
// The speech handler calls NeedsProcessing and, only when it is true,
// Process; the conversation renderer calls Decode per turn, Concat, then
// Encode once. Request parameters are validated with Params.Validate, which
// returns per-field errors free of HTTP types.
//
// # Streams
//
// StreamEncoder converts a provider's raw PCM stream to another format
// chunk by chunk as it arrives (PCM at another rate, WAV, MP3, Ogg Opus,
// G.711), for a stream asked for in a format its model does not stream
// itself: the rate through libsoxr's streaming interface, which gives the
// one-shot resampler's samples however the stream is cut, then the
// encoder, each holding only its own few frames of state.
//
// # Levels
//
// Levels are in dBFS with 1.0 as full scale: 20·log10(RMS) for loudness, so
// a full-scale sine measures -3.01 dBFS, and 20·log10(|peak|) for peaks.
// Normalize applies the RMS target through a look-ahead limiter whose
// ceiling is CeilingDbfs (-1 dBFS), so leveling never clips, and raises the
// gain until the limited clip meets the target (within 0.05 dB where a
// limiter can get there; very loud targets such as -10 dBFS for speech
// also engage a soft-knee saturator). It leaves clips quieter than GateDbfs
// (-70 dBFS) alone, so silence stays silence.
//
// # MP3 gapless information
//
// Every MP3 Encode writes starts with an Info/LAME tag frame carrying the
// encoder delay and padding, and Decode honours such a tag, so a clip keeps
// its exact length through an MP3 round trip (FFmpeg agrees to the sample).
// A StreamEncoder's MP3 has none: the tag is the first frame, and what it
// says is known only at the stream's end.
//
// # Libraries and system dependencies
//
//   - MP3 decoding: github.com/hajimehoshi/go-mp3 (pure Go). It does not
//     read MPEG-2.5 (8 to 12 kHz MP3), which Decode reports as unsupported.
//     (LAME's own decoder, mpglib, would read it, but its hip_decode1
//     functions share a static output buffer, so it is unsafe in a server
//     that decodes concurrently.)
//   - MP3 encoding: libmp3lame through a small cgo binding (internal/lame);
//     LAME is the reference MP3 encoder. The pure-Go alternatives are
//     ports of shine, a fixed-point encoder for embedded CPUs with audibly
//     lower quality and no gapless tag.
//   - Resampling: libsoxr through a small cgo binding (internal/soxr), a
//     band-limited polyphase/FFT resampler with exact rational ratios.
//   - Time-stretch (speed without native provider support): hand-written
//     WSOLA in stretch.go, no library; see Stretch for why.
//   - Ogg Opus encoding: libopusenc (with libopus) through a small cgo
//     binding (internal/opus): Xiph's reference encoder and its own Ogg
//     writer, which sets the pre-skip and the exact end. Opus is coded at
//     48 kHz, which every decoder outputs.
//   - FLAC encoding: libFLAC, the reference encoder, through a small cgo
//     binding (internal/flac) that writes straight into the output buffer.
//   - G.711 μ-law and A-law: a few lines of Go (g711.go) following the
//     standard's decision levels. Raw, 8 kHz, media types audio/PCMU and
//     audio/PCMA (RFC 4856): telephony stacks (RTP, SIP media servers,
//     phone APIs' media streams) take raw G.711, and a WAV header would
//     only have to be stripped there; WAV is the format for a playable file.
//   - Loudness measurement (the loudness field): libebur128 through a
//     small cgo binding (internal/ebur128), BS.1770-4's K-weighting and
//     R128's gates as FFmpeg's ebur128 filter applies them. The true-peak
//     limiter's oversampled envelope is hand-written (loudness.go: the
//     library reports only a clip's maximum true peak). Opus answers are
//     decoded with libopus itself (internal/opus/decode.go) to measure
//     what a listener hears.
//   - AAC: not produced. Debian's only AAC encoders are libfdk-aac
//     (non-free, absent from main) and FFmpeg's, which would mean linking
//     libavcodec and its dependencies into the gateway for one format;
//     format "aac" gets a 422 that names the formats the gateway has.
//
// So the gateway binary is built with cgo and needs, at build time, a C
// compiler, pkg-config, libmp3lame-dev, libsoxr-dev, libopusenc-dev,
// libopus-dev, libflac-dev and libebur128-dev, and at run time the shared
// libraries libmp3lame0, libsoxr0, libopusenc0, libopus0, libogg0,
// libflac12 and libebur128-1
// (Debian package names).
package audio
