package dialect

// HasTopLevelKey reports whether body, a JSON object, has key among its
// top-level members. It tells the OpenAI body of POST /v1/audio/speech
// (`input`) from voxgate's own (`text`) without decoding it twice: one
// pass over the bytes, no allocation (hot path; BenchmarkHasTopLevelKey).
// A key written with escapes ("\u0069nput") is not recognised, and
// malformed JSON answers false: the strict decoder then reports it.
func HasTopLevelKey(body []byte, key string) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != '"' {
			return false
		}
		end := skipString(body, i)
		if end < 0 {
			return false
		}
		if string(body[i+1:end-1]) == key { // no allocation: compared in place
			return true
		}
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		if i = skipValue(body, skipSpace(body, i+1)); i < 0 {
			return false
		}
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != ',' {
			return false
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1 if it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
// Nested objects and arrays are skipped by depth, strings whole.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			if i = skipString(b, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	if depth == 0 {
		return i
	}
	return -1
}
