package audio

import "math/bits"

// G.711 companding (ITU-T G.711): 8-bit μ-law and A-law samples at 8 kHz,
// the codecs of the telephone network. The conversions are the classic
// ones of the Sun reference implementation (g711.c), which every
// telephony stack and FFmpeg agree with.

const (
	ulawBias = 0x84 // added before the segment search, so that 0 maps to the first segment
	ulawClip = 32635
)

// linearToULaw compands a 16-bit sample to μ-law.
func linearToULaw(s int16) byte {
	v := int32(s)
	sign := byte(0)
	if v < 0 {
		v, sign = -v, 0x80
	}
	v = min(v, ulawClip) + ulawBias
	exp := bits.Len32(uint32(v>>7)) - 1 // the segment: 0..7
	mant := byte(v>>(exp+3)) & 0x0F
	return ^(sign | byte(exp)<<4 | mant)
}

// uLawToLinear expands a μ-law sample to 16 bits.
func uLawToLinear(u byte) int16 {
	u = ^u
	t := (int32(u&0x0F)<<3 + ulawBias) << ((u & 0x70) >> 4)
	if u&0x80 != 0 {
		return int16(ulawBias - t)
	}
	return int16(t - ulawBias)
}

// linearToALaw compands a 16-bit sample to A-law.
func linearToALaw(s int16) byte {
	v := int32(s) >> 3 // A-law codes 13 bits
	mask := byte(0xD5)
	if v < 0 {
		mask, v = 0x55, -v-1
	}
	seg := 0 // the segment: the first whose end v does not pass
	for end := int32(0x1F); seg < 8 && v > end; end = end<<1 | 1 {
		seg++
	}
	if seg >= 8 {
		return 0x7F ^ mask
	}
	a := byte(seg) << 4
	if seg < 2 {
		a |= byte(v>>1) & 0x0F
	} else {
		a |= byte(v>>seg) & 0x0F
	}
	return a ^ mask
}

// aLawToLinear expands an A-law sample to 16 bits.
func aLawToLinear(a byte) int16 {
	a ^= 0x55
	t := int32(a&0x0F) << 4
	switch seg := (a & 0x70) >> 4; seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t = (t + 0x108) << (seg - 1)
	}
	if a&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}

// decodeG711 decodes raw μ-law or A-law bytes (one byte a sample, mono
// or interleaved channels, averaged).
func decodeG711(data []byte, m MediaType) *Clip {
	ch := max(m.Channels, 1)
	out := make([]float32, len(data)/ch)
	expand := uLawToLinear
	if m.Format == FormatALaw {
		expand = aLawToLinear
	}
	scale := 1 / (32768 * float32(ch))
	for i := range out {
		var sum int32
		for c := range ch {
			sum += int32(expand(data[i*ch+c]))
		}
		out[i] = float32(sum) * scale
	}
	return &Clip{Rate: m.Rate, Samples: out}
}
