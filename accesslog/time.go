package accesslog

import (
	"encoding/binary"
	"time"
)

const (
	timeLocalLen = len("01/Dec/2026:23:04:38 +0000")
	timeISOLen   = len("2026-12-01T23:04:38+00:00")
)

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// timeCache is the last time a Format read and its value: a log's lines
// share their second by the hundreds.
type timeCache struct {
	text [timeLocalLen]byte
	val  int64 // 0: none yet
}

// get returns parse(b) through the cache of the last value, of width
// bytes of b.
func (c *timeCache) get(b []byte, width int, parse func([]byte) (int64, bool)) (int64, bool) {
	if len(b) >= width && c.val != 0 && same8(b[:width], c.text[:width]) {
		return c.val, true
	}
	t, ok := parse(b)
	if ok {
		copy(c.text[:], b[:width])
		c.val = t
	}
	return t, ok
}

// same8 reports whether a and b, of the same length of 8 bytes or more,
// are equal, eight bytes at a time.
func same8(a, b []byte) bool {
	n := len(a)
	for i := 0; i+8 <= n; i += 8 {
		if binary.LittleEndian.Uint64(a[i:]) != binary.LittleEndian.Uint64(b[i:]) {
			return false
		}
	}
	return binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
}

// parseTimeLocal reads nginx's $time_local, 01/Dec/2026:23:04:38 +0000,
// as Unix nanoseconds.
func parseTimeLocal(b []byte) (int64, bool) {
	if len(b) < timeLocalLen || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return 0, false
	}
	month := -1
	for i, m := range months {
		if string(b[3:6]) == m {
			month = i + 1
			break
		}
	}
	ok := month > 0
	day, year := num(b, 0, 2, &ok), num(b, 7, 4, &ok)
	hh, mm, ss := num(b, 12, 2, &ok), num(b, 15, 2, &ok), num(b, 18, 2, &ok)
	off := zone(b[21:26], false, &ok)
	if !ok {
		return 0, false
	}
	return civil(year, month, day, hh, mm, ss, off)
}

// parseTimeISO reads nginx's $time_iso8601, 2026-12-01T23:04:38+00:00.
func parseTimeISO(b []byte) (int64, bool) {
	if len(b) < timeISOLen || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	ok := true
	year, month, day := num(b, 0, 4, &ok), num(b, 5, 2, &ok), num(b, 8, 2, &ok)
	hh, mm, ss := num(b, 11, 2, &ok), num(b, 14, 2, &ok), num(b, 17, 2, &ok)
	off := zone(b[19:25], true, &ok)
	if !ok {
		return 0, false
	}
	return civil(year, month, day, hh, mm, ss, off)
}

// num reads the width digits at b[at:], and clears ok when they are not.
func num(b []byte, at, width int, ok *bool) int {
	x, good := parseUint(b[at : at+width])
	*ok = *ok && good
	return int(x)
}

// zone reads +0100 (or +01:00 with colon) as seconds east of UTC, and
// clears ok when it is not one.
func zone(b []byte, colon bool, ok *bool) int {
	if b[0] != '+' && b[0] != '-' {
		*ok = false
		return 0
	}
	mAt := 3
	if colon {
		if b[3] != ':' {
			*ok = false
			return 0
		}
		mAt = 4
	}
	h, m := num(b, 1, 2, ok), num(b, mAt, 2, ok)
	*ok = *ok && h < 24 && m < 60
	off := (h*60 + m) * 60
	if b[0] == '-' {
		off = -off
	}
	return off
}

// civil converts a date and time at a zone offset to Unix nanoseconds.
func civil(year, month, day, hh, mm, ss, off int) (int64, bool) {
	if month < 1 || month > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 || year < 1970 || year > 9999 {
		return 0, false
	}
	// Days from 1970-01-01 (Howard Hinnant's days_from_civil).
	y := year
	if month <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era*146097+doe) - 719468
	secs := days*86400 + int64(hh*3600+mm*60+ss) - int64(off)
	return secs * int64(time.Second), true
}
