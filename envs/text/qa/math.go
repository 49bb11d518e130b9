package qa

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
	"github.com/agenttrainer/agenttrainer/internal/pystr"
)

// This file ports rLLM's math reward (rllm/rewards/math_reward.py and
// math_utils/utils.py at commit 7982c508): the answer in the last \boxed{}
// (or <|begin_of_box|>…<|end_of_box|>), Hendrycks' MATH normalisation
// (mathd_normalize_answer), the normalisation before symbolic comparison
// (_normalize, with pylatexenc's LaTeX-to-text for the LaTeX it meets),
// and the comparison. Where rLLM asks sympy whether simplify(a − b) is 0,
// this asks whether a and b are equal: exactly for expressions of
// rational numbers, and at random complex points otherwise (see
// equalExpressions).

// RewardMath is rLLM's RewardMathFn with its default config: 1 when the
// boxed answer of the response (after </think> when there is one) matches
// a ground truth, 0 otherwise; has_toolcall adds 0.5 to a right answer.
func RewardMath(task envs.Params, response string) (text.Reward, error) {
	if response == "" {
		return text.Reward{Info: text.Info{"validation": "empty response"}}, nil
	}
	solution := response
	if strings.Contains(response, "</think>") {
		solution = strings.Split(response, "</think>")[1]
	}
	answer, ok := ExtractAnswer(solution)
	if !ok {
		return text.Reward{Info: text.Info{"validation": "no boxed answer"}}, nil
	}
	truths, err := groundTruths(task)
	if err != nil {
		return text.Reward{}, err
	}
	var processed []string
	for _, t := range truths {
		if strings.Contains(t, "\\boxed") {
			if a, ok := ExtractAnswer(t); ok {
				processed = append(processed, a)
			}
			continue
		}
		processed = append(processed, t)
	}
	info := text.Info{"answer": answer}
	for _, t := range processed {
		if GradeMathd(answer, t) || GradeSympy(answer, t) {
			r := 1.0
			if tc, _ := task.Bool("has_toolcall", false); tc {
				r += 0.5
			}
			info["validation"] = "correct"
			return text.Reward{Reward: r, Correct: true, Info: info}, nil
		}
	}
	info["validation"] = "incorrect"
	return text.Reward{Reward: 0, Info: info}, nil
}

// groundTruths reads ground_truth (rLLM's column; answer too): a string, a
// number (as Python's str writes it) or a list of them.
func groundTruths(task envs.Params) ([]string, error) {
	v, ok := task["ground_truth"]
	if !ok || v == nil {
		v, ok = task["answer"]
	}
	if !ok || v == nil {
		return nil, errMissingAnswer
	}
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, pyStr(x))
	}
	return out, nil
}

// pyStr is Python's str() of a value read from a task file.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return pyFloatRepr(x)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	}
	if n, ok := anyInt(v); ok {
		return strconv.FormatInt(n, 10)
	}
	return envs.DescribeArg(v)
}

func anyInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	}
	return 0, false
}

// pyFloatRepr is Python's repr of a float: the shortest round-trip digits,
// with ".0" on integral values and exponents from 1e16 on.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if a := math.Abs(f); a != 0 && (a >= 1e16 || a < 1e-4) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		if exp[1] == '0' {
			exp = exp[:1] + strings.TrimLeft(exp[1:], "0")
		}
		return mant + "e" + exp
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

var beginOfBox = regexp.MustCompile(`<\|begin_of_box\|>([\s\S]*?)<\|end_of_box\|>`)

// ExtractAnswer is rLLM's extract_answer: the last <|begin_of_box|> span,
// else the content of the last \boxed{…} (a last \fbox or an unclosed box
// gives none).
func ExtractAnswer(passage string) (string, bool) {
	if strings.Contains(passage, "<|begin_of_box|>") && strings.Contains(passage, "<|end_of_box|>") {
		if m := beginOfBox.FindAllStringSubmatch(passage, -1); len(m) > 0 {
			return pystr.Strip(m[len(m)-1][1]), true
		}
	}
	if strings.Contains(passage, "\\boxed") {
		return extractBoxed(passage)
	}
	return "", false
}

// extractBoxed is last_boxed_only_string then remove_boxed.
func extractBoxed(s string) (string, bool) {
	idx := strings.LastIndex(s, "\\boxed")
	if idx < 0 {
		if idx = strings.LastIndex(s, "\\fbox"); idx < 0 {
			return "", false
		}
	}
	open, end := 0, -1
	for i := idx; i < len(s); i++ {
		if s[i] == '{' {
			open++
		}
		if s[i] == '}' {
			open--
			if open == 0 {
				end = i
				break
			}
		}
	}
	if end < 0 {
		return "", false
	}
	boxed := s[idx : end+1]
	if !strings.HasPrefix(boxed, "\\boxed{") || !strings.HasSuffix(boxed, "}") {
		return "", false
	}
	return boxed[len("\\boxed{") : len(boxed)-1], true
}

var textPrefix = regexp.MustCompile(`^\\text\{(.+?)\}`)

// MathdNormalize is rLLM's mathd_normalize_answer (Hendrycks' MATH).
func MathdNormalize(answer string) string {
	answer = pystr.Strip(answer)
	if m := textPrefix.FindStringSubmatch(answer); m != nil {
		answer = pystr.Strip(m[1])
	}
	if s, ok := stripString(answer); ok {
		return s
	}
	return answer // _strip_string raised: rLLM returns the answer as it was
}

// stripString is _strip_string; ok is false where Python would raise.
func stripString(s string) (string, bool) {
	s = strings.ReplaceAll(s, "\n", "")
	s = strings.ReplaceAll(s, "\\!", "")
	s = strings.ReplaceAll(s, "\\\\", "\\")
	s = strings.ReplaceAll(s, "tfrac", "frac")
	s = strings.ReplaceAll(s, "dfrac", "frac")
	s = strings.ReplaceAll(s, "\\left", "")
	s = strings.ReplaceAll(s, "\\right", "")
	s = strings.ReplaceAll(s, "^{\\circ}", "")
	s = strings.ReplaceAll(s, "^\\circ", "")
	s = strings.ReplaceAll(s, "\\$", "")
	if strings.Contains(s, "\\text{ ") { // _remove_right_units
		parts := strings.Split(s, "\\text{ ")
		if len(parts) != 2 {
			return "", false
		}
		s = parts[0]
	}
	s = strings.ReplaceAll(s, "\\%", "")
	s = strings.ReplaceAll(s, " .", " 0.")
	s = strings.ReplaceAll(s, "{.", "{0.")
	if s == "" {
		return s, true
	}
	if s[0] == '.' {
		s = "0" + s
	}
	if parts := strings.Split(s, "="); len(parts) == 2 && utf8.RuneCountInString(parts[0]) <= 2 {
		s = parts[1]
	}
	var ok bool
	if s, ok = fixSqrt(s); !ok {
		return "", false
	}
	s = strings.ReplaceAll(s, " ", "")
	if s, ok = fixFracs(s); !ok {
		return "", false
	}
	if s == "0.5" {
		s = "\\frac{1}{2}"
	}
	return fixASlashB(s), true
}

func fixSqrt(s string) (string, bool) {
	if !strings.Contains(s, "\\sqrt") {
		return s, true
	}
	splits := strings.Split(s, "\\sqrt")
	out := splits[0]
	for _, sp := range splits[1:] {
		if sp == "" {
			return "", false // split[0] raises IndexError
		}
		r, w := utf8.DecodeRuneInString(sp)
		if r != '{' {
			out += "\\sqrt{" + sp[:w] + "}" + sp[w:]
		} else {
			out += "\\sqrt" + sp
		}
	}
	return out, true
}

func fixFracs(s string) (string, bool) {
	substrs := strings.Split(s, "\\frac")
	out := substrs[0]
	for _, sub := range substrs[1:] {
		out += "\\frac"
		rs := []rune(sub)
		if len(rs) == 0 {
			return "", false // substr[0] raises IndexError
		}
		if rs[0] == '{' {
			out += sub
			continue
		}
		if len(rs) < 2 {
			return s, true // the assertion fails: the string as it was
		}
		a, b := string(rs[0]), string(rs[1])
		post := string(rs[2:])
		if b != "{" {
			out += "{" + a + "}{" + b + "}" + post
		} else {
			out += "{" + a + "}" + b + post
		}
	}
	return out, true
}

var canonicalInt = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// fixASlashB turns "a/b" of two integers written as Python writes them
// into \frac{a}{b}.
func fixASlashB(s string) string {
	parts := strings.Split(s, "/")
	if len(parts) != 2 || !canonicalInt.MatchString(parts[0]) || !canonicalInt.MatchString(parts[1]) {
		return s
	}
	return "\\frac{" + parts[0] + "}{" + parts[1] + "}"
}

// GradeMathd is grade_answer_mathd: equal after MathdNormalize.
func GradeMathd(given, truth string) bool { return MathdNormalize(truth) == MathdNormalize(given) }

var (
	unitPatterns []*regexp.Regexp
	circPattern  = regexp.MustCompile(`\^ *\\circ`)
	thinSpace    = regexp.MustCompile(`,\\! *`)
	minusSpace   = regexp.MustCompile(`- *`)
	mixedNumber  = regexp.MustCompile(`([0-9]) +([0-9])`)
	properComma  = regexp.MustCompile(`(\d)(,)(\d\d\d)($|\D)`)
	fracPattern  = regexp.MustCompile(`^-?[0-9]+.?/0*[1-9][0-9]*.?$`)
)

func init() {
	for _, u := range []string{"degree", "cm", "centimeter", "meter", "mile", "second", "minute", "hour", "day", "week", "month", "year", "foot", "feet", "inch", "yard"} {
		unitPatterns = append(unitPatterns, regexp.MustCompile(u+`(es)?(s)? *(\^[0-9]+)?`))
	}
	text.RegisterReward("math", "rLLM's math reward: the last \\boxed{} answer against ground_truth, MATH-normalised or equal as expressions", RewardMath)
}

// Normalize is rLLM's _normalize, the form answers are compared in.
func Normalize(expr string) string {
	if m := textPrefix.FindStringSubmatch(expr); m != nil {
		expr = m[1]
	}
	r := strings.NewReplacer("\\%", "%", "\\$", "$")
	expr = r.Replace(expr)
	expr = strings.ReplaceAll(expr, "$", "")
	expr = strings.ReplaceAll(expr, "%", "")
	expr = strings.ReplaceAll(expr, " or ", " , ")
	expr = strings.ReplaceAll(expr, " and ", " , ")
	expr = strings.ReplaceAll(expr, "million", "*10^6")
	expr = strings.ReplaceAll(expr, "billion", "*10^9")
	expr = strings.ReplaceAll(expr, "trillion", "*10^12")
	for _, u := range unitPatterns {
		expr = u.ReplaceAllString(expr, "")
	}
	expr = circPattern.ReplaceAllString(expr, "")
	if len(expr) > 0 && expr[0] == '{' && expr[len(expr)-1] == '}' {
		expr = expr[1 : len(expr)-1]
	}
	expr = thinSpace.ReplaceAllString(expr, "")
	if f, ok := pyFloat(expr); ok && isIntFloat(f) {
		expr = roundedIntString(f)
	}
	if strings.Contains(expr, "\\") {
		expr = parseLatex(expr)
	}
	expr = minusSpace.ReplaceAllString(expr, "-")
	expr = mixedNumber.ReplaceAllString(expr, "$1+$2")
	expr = strings.ReplaceAll(expr, " ", "")
	expr = strings.ReplaceAll(expr, "{", "")
	expr = strings.ReplaceAll(expr, "}", "")
	expr = pystr.Lower(expr)
	if strIsInt(expr) {
		f, _ := pyFloat(strings.ReplaceAll(expr, ",", ""))
		expr = truncIntString(f)
	}
	return expr
}

// isIntFloat is _is_int: within 1e-7 of round(x) (false for inf and nan,
// where round raises).
func isIntFloat(f float64) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	return math.Abs(f-math.RoundToEven(f)) <= 1e-7
}

// roundedIntString is str(int(round(f))).
func roundedIntString(f float64) string {
	i, _ := big.NewFloat(math.RoundToEven(f)).Int(nil)
	return i.String()
}

// truncIntString is str(int(f)).
func truncIntString(f float64) string {
	i, _ := big.NewFloat(math.Trunc(f)).Int(nil)
	return i.String()
}

// strIsInt is _str_is_int.
func strIsInt(x string) bool {
	f, ok := pyFloat(stripProperCommas(x))
	return ok && isIntFloat(f)
}

// stripProperCommas is _strip_properly_formatted_commas: "1,000" → "1000",
// leaving tuple commas.
func stripProperCommas(expr string) string {
	for {
		next := replaceAllOnce(properComma, expr)
		if next == expr {
			return next
		}
		expr = next
	}
}

// replaceAllOnce is Python's re.sub(r"(\d)(,)(\d\d\d)($|\D)", r"\1\3\4"):
// non-overlapping matches left to right.
func replaceAllOnce(re *regexp.Regexp, s string) string {
	return re.ReplaceAllString(s, "${1}${3}${4}")
}

// pyFloat is Python's float(s) for a string: surrounding whitespace,
// a sign, digits of any script with single underscores between them, a
// point, an exponent, inf, infinity and nan in any case.
func pyFloat(s string) (float64, bool) {
	s = pystr.Strip(s)
	if s == "" {
		return 0, false
	}
	var b strings.Builder
	prevDigit := false
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case pystr.Digit(r) >= 0:
			b.WriteByte(byte('0' + pystr.Digit(r)))
			prevDigit = true
			continue
		case r == '_':
			if !prevDigit || i+1 >= len(rs) || pystr.Digit(rs[i+1]) < 0 {
				return 0, false
			}
		case r < 128:
			b.WriteRune(r)
		default:
			return 0, false
		}
		prevDigit = false
	}
	t := b.String()
	low := strings.ToLower(t)
	if strings.Contains(low, "x") || strings.Contains(low, "p") && !strings.Contains(low, "inf") {
		return 0, false // Go reads hexadecimal floats, Python does not
	}
	switch strings.TrimLeft(low, "+-") {
	case "inf", "infinity", "nan":
	default:
		if strings.ContainsAny(low, "in") {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

const tupleChars = "()[]"

// splitTuple is split_tuple: the elements of a tuple or interval, else the
// expression alone.
func splitTuple(expr string) []string {
	expr = stripProperCommas(expr)
	if expr == "" {
		return nil
	}
	rs := []rune(expr)
	if len(rs) > 2 && strings.ContainsRune(tupleChars, rs[0]) && strings.ContainsRune(tupleChars, rs[len(rs)-1]) &&
		!strings.ContainsAny(string(rs[1:len(rs)-1]), tupleChars) {
		var out []string
		for _, e := range strings.Split(string(rs[1:len(rs)-1]), ",") {
			out = append(out, pystr.Strip(e))
		}
		return out
	}
	return []string{expr}
}

// GradeSympy is grade_answer_sympy, with equalExpressions in sympy's place.
func GradeSympy(given, truth string) bool {
	t, g := Normalize(truth), Normalize(given)
	if t == g {
		return true
	}
	if g == "" {
		return false
	}
	te, ge := splitTuple(t), splitTuple(g)
	tr, gr := []rune(t), []rune(g)
	if len(te) > 1 && (tr[0] != gr[0] || tr[len(tr)-1] != gr[len(gr)-1]) {
		return false
	}
	if len(te) != len(ge) {
		return false
	}
	for i := range te {
		var ok bool
		switch {
		case fracPattern.MatchString(te[i]) && fracPattern.MatchString(ge[i]):
			ok = te[i] == ge[i] // unreduced fractions must match as written
		case strIsInt(te[i]) != strIsInt(ge[i]):
			ok = false
		default:
			ok = equalUnderSympy(te[i], ge[i])
		}
		if !ok {
			return false
		}
	}
	return true
}

var badRegexes = []*regexp.Regexp{regexp.MustCompile(`\^[0-9]+\^`), regexp.MustCompile(`\^[0-9][0-9]+`)}

// equalUnderSympy is are_equal_under_sympy: the same guards (at most two
// unknown letters, no "^{", "^(" or long powers), then equalExpressions.
func equalUnderSympy(truth, given string) bool {
	expr := "(" + truth + ")-(" + given + ")"
	letters := map[rune]bool{}
	for _, r := range strings.ReplaceAll(strings.ReplaceAll(expr, "sqrt", ""), "frac", "") {
		if unicode.IsLetter(r) {
			letters[r] = true
		}
	}
	if len(letters) > 2 || strings.Contains(expr, "^{") || strings.Contains(expr, "^(") {
		return false
	}
	for _, re := range badRegexes {
		if re.MatchString(expr) {
			return false
		}
	}
	return equalExpressions(truth, given)
}
