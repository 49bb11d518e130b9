package qa

import (
	"strings"
	"unicode"

	"github.com/agenttrainer/agenttrainer/internal/pystr"
)

// parseLatex is rLLM's _parse_latex: \tfrac and \dfrac read as \frac, a
// space before each \frac (for mixed numbers), LaTeX to text as pylatexenc
// 2.10's LatexNodes2Text writes it for the constructs answers use, then
// √ π ∞ ∪ · × as sqrt, pi, inf, U, * and *.
func parseLatex(expr string) string {
	expr = strings.ReplaceAll(expr, "\\tfrac", "\\frac")
	expr = strings.ReplaceAll(expr, "\\dfrac", "\\frac")
	expr = strings.ReplaceAll(expr, "\\frac", " \\frac")
	p := &latexParser{s: []rune(expr)}
	out := p.until(0)
	out = strings.NewReplacer("√", "sqrt", "π", "pi", "∞", "inf", "∪", "U", "·", "*", "×", "*").Replace(out)
	return pystr.Strip(out)
}

// latexSymbols are pylatexenc's texts for the macros answers use.
var latexSymbols = map[string]string{
	"pi": "π", "infty": "∞", "cdot": "·", "times": "×", "div": "÷", "pm": "±", "mp": "∓",
	"le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "ne": "≠", "in": "∈", "notin": "∉",
	"cup": "∪", "cap": "∩", "circ": "∘", "angle": "∠", "ldots": "…", "dots": "…", "cdots": "⋯",
	"mid": "|", "emptyset": "∅", "varnothing": "∅", "approx": "≈", "sim": "∼", "to": "→",
	"rightarrow": "→", "infinity": "∞", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉",
	"quad": "  ", "qquad": "    ", "prime": "′", "degree": "°", "perp": "⊥", "parallel": "∥",
	"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε",
	"zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ",
	"lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "rho": "ρ", "sigma": "σ", "tau": "τ",
	"upsilon": "υ", "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
	"Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π",
	"Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
	// Spacing and sizing macros that print nothing.
	"left": "", "right": "", "displaystyle": "", "limits": "", "big": "", "Big": "", "bigg": "", "Bigg": "",
}

// latexControlSymbols are the one-character macros (\%, \{, \,, …).
var latexControlSymbols = map[rune]string{
	'%': "%", '$': "$", '&': "&", '#': "#", '_': "_", '{': "{", '}': "}",
	',': " ", ';': " ", ':': " ", ' ': " ", '!': "", '\\': "\n",
}

type latexParser struct {
	s []rune
	i int
}

// until renders up to the closing brace of a group (close '}') or the end.
func (p *latexParser) until(close rune) string {
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == close:
			p.i++
			return b.String()
		case c == '{':
			p.i++
			b.WriteString(p.until('}'))
		case c == '\\':
			b.WriteString(p.macro())
		case c == '$':
			p.i++ // math shifts print nothing
		case c == '~':
			p.i++
			b.WriteRune('\u00a0')
		default:
			p.i++
			b.WriteRune(c)
		}
	}
	return b.String()
}

// arg renders a macro's next argument: a group or one token.
func (p *latexParser) arg() string {
	for p.i < len(p.s) && unicode.IsSpace(p.s[p.i]) {
		p.i++
	}
	if p.i >= len(p.s) {
		return ""
	}
	switch c := p.s[p.i]; c {
	case '{':
		p.i++
		return p.until('}')
	case '\\':
		return p.macro()
	default:
		p.i++
		return string(c)
	}
}

// macro renders the macro at p.i.
func (p *latexParser) macro() string {
	p.i++ // the backslash
	if p.i >= len(p.s) {
		return ""
	}
	if c := p.s[p.i]; !isLatexLetter(c) {
		p.i++
		return latexControlSymbols[c]
	}
	start := p.i
	for p.i < len(p.s) && isLatexLetter(p.s[p.i]) {
		p.i++
	}
	name := string(p.s[start:p.i])
	for p.i < len(p.s) && unicode.IsSpace(p.s[p.i]) { // TeX eats the space after a control word
		p.i++
	}
	switch name {
	case "frac":
		a := p.arg()
		b := p.arg()
		return a + "/" + b
	case "sqrt":
		if p.i < len(p.s) && p.s[p.i] == '[' { // the index is dropped, as pylatexenc does
			for p.i < len(p.s) && p.s[p.i] != ']' {
				p.i++
			}
			p.i++
		}
		return "√(" + p.arg() + ")"
	case "begin", "end":
		p.arg()
		return ""
	}
	if s, ok := latexSymbols[name]; ok {
		return s
	}
	// \text, \mathrm, \boxed, \operatorname, unknown macros: the macro
	// prints nothing and its argument group prints its text.
	return ""
}

func isLatexLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
