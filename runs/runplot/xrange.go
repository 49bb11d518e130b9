package runplot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Range is a part of a chart's X axis as a person types it: "100k-300k"
// (env steps, with k/M/G), "5m-12m" (wall-clock time, with s/m/h), "20%-60%"
// (shares of the axis); ':' or '..' separate as well, and a bound left out
// is that end of the axis ("250k-", "-50%").
type Range struct {
	Lo, Hi       float64 // in the axis's units, or percent
	HasLo, HasHi bool
	Percent      bool
	Text         string // as typed, for titles
}

// ParseRange reads a range; the error says what is wrong and shows the
// forms that work.
func ParseRange(s string) (Range, error) {
	text := strings.TrimSpace(s)
	r := Range{Text: text}
	var lo, hi string
	var found bool
	for _, sep := range []string{"..", ":", "-"} {
		if lo, hi, found = strings.Cut(text, sep); found {
			break
		}
	}
	if !found || text == "" {
		return r, rangeErr(s, "it needs two bounds")
	}
	var kinds [2]string
	for i, b := range []string{lo, hi} {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		v, kind, err := bound(b)
		if err != nil {
			return r, rangeErr(s, err.Error())
		}
		kinds[i] = kind
		if i == 0 {
			r.Lo, r.HasLo = v, true
		} else {
			r.Hi, r.HasHi = v, true
		}
	}
	switch {
	case !r.HasLo && !r.HasHi:
		return r, rangeErr(s, "it needs at least one bound")
	case r.HasLo && r.HasHi && (kinds[0] == "%") != (kinds[1] == "%"):
		return r, rangeErr(s, "both bounds must be percentages, or neither")
	case r.HasLo && r.HasHi && r.Hi <= r.Lo:
		return r, rangeErr(s, "the second bound must be larger than the first")
	}
	r.Percent = kinds[0] == "%" || kinds[1] == "%"
	if r.Percent && ((r.HasLo && r.Lo >= 100) || (r.HasHi && r.Hi <= 0)) {
		return r, rangeErr(s, "percentages run from 0 to 100")
	}
	return r, nil
}

func rangeErr(s, why string) error {
	return fmt.Errorf("range %q: %s; try 100k-300k (steps), 5m-12m (time), 20%%-60%% or 250k- (to the end)", s, why)
}

// bound reads one bound: a number with an optional k/M/G, s/m/h or %.
func bound(b string) (v float64, kind string, err error) {
	scale := 1.0
	switch last := b[len(b)-1]; last {
	case 'k', 'K':
		scale = 1e3
	case 'M':
		scale = 1e6
	case 'G':
		scale = 1e9
	case 's':
	case 'm':
		scale = 60
	case 'h':
		scale = 3600
	case '%':
		kind = "%"
	}
	digits := b
	if scale != 1 || kind == "%" || b[len(b)-1] == 's' {
		digits = b[:len(b)-1]
	}
	v, err = strconv.ParseFloat(strings.TrimSpace(digits), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, "", fmt.Errorf("%q is not a number of steps, a time or a percentage", b)
	}
	return v * scale, kind, nil
}

// Resolve is the range on an axis that runs from lo to hi.
func (r Range) Resolve(lo, hi float64) (float64, float64) {
	from, to := lo, hi
	if r.Percent {
		if r.HasLo {
			from = lo + (hi-lo)*r.Lo/100
		}
		if r.HasHi {
			to = lo + (hi-lo)*math.Min(r.Hi, 100)/100
		}
		return from, to
	}
	if r.HasLo {
		from = r.Lo
	}
	if r.HasHi {
		to = r.Hi
	}
	if to <= from { // an open end before the given bound: show the bound's neighbourhood
		to = from + 1
	}
	return from, to
}
