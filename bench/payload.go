package main

import (
	"bytes"
	"strconv"
)

// appendPayload encodes m as the JSON object {"n":N,"t":T}.
func appendPayload(b []byte, m Msg) []byte {
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, m.N, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, m.T, 10)
	return append(b, '}')
}

func payload(m Msg) []byte { return appendPayload(make([]byte, 0, 48), m) }

// parsePayload decodes what appendPayload made (and the same JSON with
// spaces, as some systems re-encode it). A malformed payload gives a zero
// Msg.
func parsePayload(b []byte) Msg {
	return Msg{N: field(b, `"n":`), T: field(b, `"t":`)}
}

func field(b []byte, key string) int64 {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	b = bytes.TrimLeft(b[i+len(key):], " ")
	j := 0
	for j < len(b) && (b[j] == '-' || b[j] >= '0' && b[j] <= '9') {
		j++
	}
	v, _ := strconv.ParseInt(string(b[:j]), 10, 64)
	return v
}
