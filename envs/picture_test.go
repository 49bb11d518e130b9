package envs

import "testing"

func TestPaint(t *testing.T) {
	colours := map[rune]int{'=': 1, 'o': 2, '#': 3}
	mark := func(s string, c int) string { return "<" + s + string(rune('0'+c)) + ">" }
	for _, tc := range []struct {
		name, in string
		legend   bool
		want     string
	}{
		{"every cell of a drawing", ". # #\n. o =\n", false, ". <#3> <#3>\n. <o2> <=1>\n"},
		{"a legend's item letters only", "= paddle  o ball  # brick", true, "<=1> paddle  <o2> ball  <#3> brick"},
		{"not a letter inside a word", "= o-ball  #x", true, "<=1> o-ball  #x"},
		{"a legend on two lines", "= paddle\no ball", true, "<=1> paddle\n<o2> ball"},
		{"no colours", "# o", false, "# o"},
	} {
		c := colours
		if tc.name == "no colours" {
			c = nil
		}
		if got := Paint(tc.in, c, tc.legend, mark); got != tc.want {
			t.Errorf("%s: Paint(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
