// Package loudness holds the end-to-end tests of the loudness request
// field (EBU R128 integrated loudness under a true-peak ceiling) on clips,
// with-timestamps, conversations, streams (learned and new voices) and an
// organization's default target (gateway.yaml and the admin API),
// through the real eSpeak plugin and the cloud plugins against their fakes.
// Every answer is judged by FFmpeg's ebur128 filter (testenv.FFmpegLoudness),
// never by the gateway's own meter: integrated within ±0.5 LU of the
// target, true peak at most the ceiling + 0.1 dB.
package loudness
