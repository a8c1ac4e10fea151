// Package align finds when each word of a known text is spoken in a clip
// of speech, offline: it is how the gateway gives word timestamps for
// models that return none.
//
// # Method
//
// The method is aeneas's (forced alignment by dynamic time warping
// against synthesized speech), at word level:
//
//  1. The caller renders a reference of the same text with a synthesizer
//     that reports exact word times (eSpeak NG's word events, through its
//     plugin), in a male and a female voice.
//  2. Clip and references are resampled to 16 kHz and cut into 25 ms
//     frames every 10 ms. Each frame is described by MFCCs c1 to c8 (40
//     mel bands, 133 Hz to 6.9 kHz, c0 left out), mean- and
//     variance-normalized over the clip's sounding frames so that voice
//     timbre and loudness cancel out, their deltas, and the frame's level
//     relative to the clip's speech (so pauses match pauses). Only eight
//     cepstra: the higher ones follow the pitch harmonics of a voice more
//     than the sound spoken, and cost accuracy across voices.
//  3. A first DTW pass over frames pooled by six (60 ms) runs in a stripe
//     around the average speaking rate (aeneas's "stripe" DTW, at least
//     ±10 s wide), once against each reference and once against each
//     reference played backwards. The ratio of the two costs (Match) says
//     how much of the fit is owed to the order of the sounds, that is to
//     the text: the clip is aligned against the reference that fits best,
//     and refused (ErrNoMatch) when even that fit owes too little to the
//     text (noise, a tone, another text, another language).
//  4. A second pass at 10 ms runs within 16 frames of the first pass's
//     path (multi-resolution DTW), with the symmetric step pattern.
//  5. Each reference word boundary is carried through the path. Where the
//     reference pauses (80 ms or more), the boundaries on either side move
//     onto the clip's own pause near the path's image of it: inside a
//     pause every frame matches every other, so the path alone cannot say
//     where the clip's pause lies. Words never start in the clip's leading
//     silence nor end in its trailing one.
//
// The result has exactly one timestamp per reference word, in order,
// inside the clip. Beyond aeneas: boundaries per word from the
// synthesizer's own events rather than per synthesized fragment, two
// reference voices, the reversed-reference test that refuses instead of
// guessing, and the pause refinement.
//
// # Accuracy and cost
//
// The tests measure the error of every word boundary against ground truth:
// eSpeak clips of other voices and speeds (their own word events), and
// Festival clips (another engine, built from recordings of people; its own
// word times). BENCHMARKS.md has the distributions. Aligning 60 s of audio
// takes about 0.35 s of one core (BenchmarkAlign); the features (one
// 512-point FFT per frame, gonum's dsp/fourier) and the first pass's
// stripe are most of it.
package align
